/**
 * cards.js — the web table's cards: one card on the felt (face up with its pips, face
 * down, or being squeezed: its back peeling off as far as it is bent, `peel`), and the
 * cards and hands in words for a screen reader (the catalogs' `a11y.*`). A hand's total
 * is the server's (state.js keeps it from the card and result events): the page counts
 * no points. It draws a face only from what the page was given: a card face up, or the
 * turner's own squeezed card (the `squeeze` event's private `cards`); anyone else's
 * squeezed card has no face in the page at all (docs/architecture.md §11b).
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

/** Where the pips of 2 to 10 lie on a card's face: [x, y] in percent of the pips' box
 * (the pips in the lower half upside down, as printed). */
const PIPS = {
  2: [[50, 0], [50, 100]],
  3: [[50, 0], [50, 50], [50, 100]],
  4: [[0, 0], [100, 0], [0, 100], [100, 100]],
  5: [[0, 0], [100, 0], [50, 50], [0, 100], [100, 100]],
  6: [[0, 0], [100, 0], [0, 50], [100, 50], [0, 100], [100, 100]],
  7: [[0, 0], [100, 0], [50, 25], [0, 50], [100, 50], [0, 100], [100, 100]],
  8: [[0, 0], [100, 0], [50, 25], [0, 50], [100, 50], [50, 75], [0, 100], [100, 100]],
  9: [[0, 0], [100, 0], [0, 33.3], [100, 33.3], [50, 50], [0, 66.7], [100, 66.7], [0, 100], [100, 100]],
  10: [[0, 0], [100, 0], [50, 16.7], [0, 33.3], [100, 33.3], [0, 66.7], [100, 66.7], [50, 83.3], [0, 100], [100, 100]],
};

/** A card's face as printed: both indices, and the pips (an ace's one large pip, a court
 * card's frame). */
function faceEl(card) {
  const r = card.slice(0, -1);
  const rank = r === "T" ? "10" : r;
  const suit = cardText(card).slice(rank.length);
  let middle;
  if (r === "A") {
    middle = h("span", { class: "pips ace" }, h("span", { class: "pip" }, suit));
  } else if (/^[JQK]$/.test(r)) {
    middle = h("span", { class: "pips court" }, h("span", { class: "court-rank" }, rank), h("span", { class: "court-suit" }, suit));
  } else {
    middle = h(
      "span",
      { class: "pips", dataset: { n: rank } },
      PIPS[Number(rank)].map(([x, y]) => h("span", { class: `pip${y > 50 ? " down" : ""}`, vars: { "--x": `${x}%`, "--y": `${y}%` } }, suit)),
    );
  }
  return h("span", { class: "face" }, h("span", { class: "corner tl" }, rank, h("br"), suit), middle, h("span", { class: "corner br" }, rank, h("br"), suit));
}

/** One card: face up, face down, or being squeezed (`progress` percent: its back peels
 * off, see `peel`). The face is drawn only for one who knows it: face up, or the turner
 * squeezing it (`known`); anyone else sees the back lift over a face they cannot read. */
export function cardEl(c, { known = null, progress, style, croupier = null, small = false, index, hand } = {}) {
  const face = c.up ? c.card : known;
  const state = c.up ? "up" : progress != null ? "squeeze" : "down";
  const el = h("span", {
    class: `card${small ? " small" : ""}${face && isRed(face) ? " red" : ""}`,
    dataset: { state, ...(index ? { index } : {}), ...(hand ? { hand } : {}), ...(c.up ? { card: c.card } : {}) },
    role: "img",
    "aria-label": cardName(c, { known, squeezing: progress != null }),
  });
  if (face) el.append(faceEl(face));
  if (!c.up) {
    if (!face && progress != null) el.append(h("span", { class: "face unseen" }));
    // The curl's shadow on what the lifted back uncovers, the back, and its lifted part.
    if (progress != null) el.append(h("span", { class: "curl-shade" }));
    el.append(h("span", { class: "back" }));
    if (progress != null) {
      el.dataset.style = PEELS[style] ? style : "peek";
      el.append(h("span", { class: "flap-wrap" }, h("span", { class: "flap" })));
      bend(el, progress);
    }
  }
  if (croupier) {
    el.dataset.croupier = "1";
    el.append(h("span", { class: "croupier-mark", title: t("page.card.by_croupier", { who: croupier }) }, t("page.card.croupier")));
  }
  return el;
}

// ---------------------------------------------------------------------------- the peel

/** A card's shape in the peel's units (chemmy.css: --card-w is 0.69 --card-h). */
const W = 69;
const H = 100;
/** Each squeeze style's peel: the corner or edge that lifts (`o`), the way the fold moves
 * across the card (`n`, a unit vector) and how far it goes (`reach`): PEEK lifts the
 * near right corner (its index first), SIDE the long right side (a column of pips
 * first), QUICK the near short edge (a row of pips first). */
const DIAGONAL = Math.hypot(W, H);
export const PEELS = {
  // Its fold runs parallel to the diagonal from the lower left corner to the upper
  // right one: the corner's index is uncovered first, then the pips, the far index last.
  peek: { o: [W, H], n: [-H / DIAGONAL, -W / DIAGONAL], reach: (2 * W * H) / DIAGONAL },
  side: { o: [W, 0], n: [-1, 0], reach: W },
  quick: { o: [0, H], n: [0, -1], reach: H },
};
/** How much shorter the lifted part looks than it is (it curls up from the felt). */
export const CURL = 0.5;

const dot = (a, b) => a[0] * b[0] + a[1] * b[1];

/** The card's rectangle cut by the line s(x) = d: the part where s < d (`below`) or s >= d. */
function cut(o, n, d, below) {
  const pts = [[0, 0], [W, 0], [W, H], [0, H]];
  const s = (x) => dot([x[0] - o[0], x[1] - o[1]], n) - d;
  const out = [];
  for (let i = 0; i < pts.length; i++) {
    const a = pts[i];
    const b = pts[(i + 1) % pts.length];
    const sa = s(a);
    const sb = s(b);
    const ina = below ? sa < 0 : sa >= 0;
    const inb = below ? sb < 0 : sb >= 0;
    if (ina) out.push(a);
    if (ina !== inb) {
      const k = sa / (sa - sb);
      out.push([a[0] + (b[0] - a[0]) * k, a[1] + (b[1] - a[1]) * k]);
    }
  }
  return out;
}

const pct = (v) => `${Math.round(v * 100) / 100}%`;
/** A polygon (card units) as a clip-path of a box spanning [-m W, (1+m) W] x [-m H, (1+m) H]. */
function polygon(points, m = 0) {
  if (points.length < 3) return "polygon(0 0, 0 0, 0 0)";
  const span = 1 + 2 * m;
  return `polygon(${points.map(([x, y]) => `${pct(((x / W + m) / span) * 100)} ${pct(((y / H + m) / span) * 100)}`).join(", ")})`;
}

/** A linear gradient along `n` over a box m card-sizes wider on each side, its stops
 * [s, colour] at a distance s from the lifted corner or edge (card units). */
function gradient(o, n, stops, m = 0) {
  const angle = (Math.atan2(n[0], -n[1]) * 180) / Math.PI;
  const span = 1 + 2 * m;
  const length = Math.abs(W * span * n[0]) + Math.abs(H * span * n[1]);
  const c0 = dot([o[0] - W / 2, o[1] - H / 2], n) + length / 2;
  return `linear-gradient(${Math.round(angle * 100) / 100}deg, ${stops.map(([s, colour]) => `${colour} ${pct(((s + c0) / length) * 100)}`).join(", ")})`;
}

/** Draw a squeezed card bent to `progress` percent: the fold line has crossed that much
 * of the card from the lifted corner or edge; behind it the back is lifted and folded
 * over (the flap, foreshortened by its curl, shaded), uncovering the face (the turner's)
 * or, for anyone else, a face turned away. The same for every viewer at the same
 * percent. Only styles are set: no layout is read. */
export function peel(el, progress) {
  const p = Math.max(0, Math.min(100, progress));
  const { o, n, reach } = PEELS[el.dataset.style] ?? PEELS.peek;
  const d = (reach * p) / 100;
  const back = el.querySelector(":scope > .back");
  const flap = el.querySelector(":scope > .flap-wrap > .flap");
  const shade = el.querySelector(":scope > .curl-shade");
  if (!back || !flap || !shade) return;
  back.style.clipPath = p > 0 ? polygon(cut(o, n, d, false)) : "";
  // The lifted part, folded over the fold line and shortened by its curl.
  const lifted = cut(o, n, d, true).map((x) => {
    const k = (1 + CURL) * (d - dot([x[0] - o[0], x[1] - o[1]], n));
    return [x[0] + k * n[0], x[1] + k * n[1]];
  });
  const M = 1; // the flap's box: the card and a card's size round it (it may stick out)
  flap.style.clipPath = p > 0 ? polygon(lifted, M) : "polygon(0 0, 0 0, 0 0)";
  const tip = d * (1 + CURL);
  flap.style.backgroundImage = gradient(o, n, [
    [d, "#bdb6a2"],
    [d + (tip - d) * 0.12, "#f3efe3"],
    [d + (tip - d) * 0.3, "#fffdf7"],
    [tip, "#d9d3c1"],
  ], M);
  const reachOfShade = Math.min(d, 14);
  shade.style.backgroundImage = p > 0
    ? gradient(o, n, [[d - reachOfShade, "rgba(0, 0, 0, 0)"], [d - reachOfShade * 0.4, "rgba(0, 0, 0, 0.12)"], [d, "rgba(0, 0, 0, 0.42)"], [d, "rgba(0, 0, 0, 0)"]])
    : "";
}

/** How far a squeezed card is bent (its back peels off: `peel`). */
export function bend(el, progress) {
  el.dataset.progress = String(Math.round(progress));
  peel(el, progress);
}
