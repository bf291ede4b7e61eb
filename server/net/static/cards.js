/**
 * cards.js — the web table's cards: one card on the felt (face up, face down, or bent
 * in a squeeze), and the cards and hands in words for a screen reader (the catalogs'
 * `a11y.*`). A hand's total is the server's (state.js keeps it from the card and result
 * events): the page counts no points.
 */

import { t } from "./i18n.js";
import { HAND_NAMES, cardText, isRed } from "./state.js";
import { h } from "./dom.js";

/** The words a screen reader says (the catalogs' ``a11y.*``): cards, hands, seats. */
export function a11yText(key, ...args) {
  switch (key) {
    case "card":
      return t("a11y.card", { rank: args[0], suit: args[1] });
    case "youSee":
      return t("a11y.you_see", { what: args[0], card: args[1] });
    case "hand": {
      const [hand, cards, total] = args;
      const list = cards.length ? cards.join(", ") : t("a11y.no_cards");
      return total == null ? t("a11y.hand", { hand, cards: list }) : t("a11y.hand_total", { hand, cards: list, total });
    }
    case "sitIn":
      return t("a11y.sit_in", { seat: args[0] });
    default:
      return t(`a11y.${key}`);
  }
}

/** A card in words: "9 of spades", "king of diamonds"; "face down" (and, for the one
 * squeezing it, what they see). */
export function cardName(c, { known = null, squeezing = false } = {}) {
  const words = (card) => {
    const r = card.slice(0, -1);
    const rank = /^[AKQJT]$/.test(r) ? t(`a11y.rank.${r}`) : r;
    return a11yText("card", rank, t(`a11y.suit.${card.slice(-1)}`));
  };
  if (c.up && c.card) return words(c.card);
  const down = a11yText(squeezing ? "squeezing" : "face_down");
  return known ? a11yText("youSee", down, words(known)) : down;
}

/** A hand in words: "Player: 9 of spades, king of diamonds — 9". */
export function handName(hand, cards, total) {
  return a11yText("hand", HAND_NAMES[hand] ?? hand, cards.map((c) => cardName(c)), total);
}

export function cardsLine(cards) {
  return (cards ?? []).map((c) => [h("span", { class: isRed(c) ? "red" : "black", role: "img", "aria-label": cardName({ card: c, up: true }) }, cardText(c)), " "]);
}

/** A hand's total as the server gave it (the card and result events), else null. */
export function handTotal(coup, hand) {
  const total = coup?.totals?.[hand];
  return Number.isInteger(total) ? total : null;
}

/** One card: face up, face down, or being squeezed (`progress` percent; the face is
 * drawn only for the turner, who `known`s it). */
export function cardEl(c, { known = null, progress, style, croupier = null, small = false, index, hand } = {}) {
  const face = c.up ? c.card : known;
  const state = c.up ? "up" : progress != null ? "squeeze" : "down";
  const el = h("span", {
    class: `card${small ? " small" : ""}${face && isRed(face) ? " red" : ""}`,
    dataset: { state, ...(index ? { index } : {}), ...(hand ? { hand } : {}), ...(c.up ? { card: c.card } : {}) },
    role: "img",
    "aria-label": cardName(c, { known, squeezing: progress != null }),
  });
  if (face) {
    const rank = face.slice(0, -1) === "T" ? "10" : face.slice(0, -1);
    const suit = cardText(face).slice(rank.length);
    el.append(
      h("span", { class: "face" }, h("span", { class: "corner tl" }, rank, h("br"), suit), h("span", { class: "pip" }, suit), h("span", { class: "corner br" }, rank, h("br"), suit)),
    );
  } else {
    el.append(h("span", { class: "face blank" }, "?"));
  }
  if (!c.up) {
    const back = h("span", { class: "back", dataset: { style: style || "peek" } });
    el.append(back);
    if (progress != null) {
      back.append(h("span", { class: "bend" }));
      bend(el, progress);
    }
  }
  if (croupier) {
    el.dataset.croupier = "1";
    el.append(h("span", { class: "croupier-mark", title: t("page.card.by_croupier", { who: croupier }) }, t("page.card.croupier")));
  }
  return el;
}

/** How far a squeezed card is bent (its back lifts; see chemmy.css). */
export function bend(el, progress) {
  el.style.setProperty("--p", `${progress}%`);
  el.dataset.progress = String(progress);
  const label = el.querySelector(".bend");
  if (label) label.textContent = `${progress}%`;
}
