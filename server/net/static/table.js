/**
 * table.js — the table screen of the web table (app.js): the felt and its bet areas,
 * the seats, the shoe and its cut, the two hands, the chips and the bars of buttons,
 * drawn from the App's state (state.js) and the server's `actions`. Like the terminal
 * client's table screen (client_cli/tui/table.py), it decides no rule: a button is
 * enabled by the server's actions, a hand's total is the server's (the card and result
 * events), a click is a command (app.js `cmd`) and nothing moves until an event says so.
 * The squeeze bar and a card's opening are squeeze.js's.
 */

import { t } from "./i18n.js";
import { AREA_NAMES, PHASE_NAMES, formatMoney, resultText } from "./state.js";
import { $, enable, fill, h, show } from "./dom.js";
import { a11yText, bend, cardEl, handName, handTotal } from "./cards.js";

/** Where each bet area sits on the felt, left to right (the side bets above). */
const AREA_ORDER = ["player_pair", "dragon_player", "super6", "dragon_banker", "banker_pair", "player", "tie", "banker"];
const MAIN_AREAS = new Set(["player", "tie", "banker"]);
const LONG_PRESS_MS = 550;
const PAYS = {
  player: "1:1",
  get banker() { return t("page.pays.banker"); },
  tie: "8:1",
  player_pair: "11:1",
  banker_pair: "11:1",
  super6: "12:1",
  get dragon_player() { return t("page.pays.dragon"); },
  get dragon_banker() { return t("page.pays.dragon"); },
};

export class TableView {
  constructor(app) {
    this.app = app;
    this.lastLongPress = 0;
    this.cutValue = null;
    this.seatFocus = undefined; // the Sit button the roving tabindex is on
    this.focusParked = false; // the focus waits on "You: seat N" (keepFocus)
    this.spoken = null; // the hands as last said to a screen reader (announceHands)
  }

  /** The table's own buttons: SIT, STAND, the bets' bar, the shoe's offer, the cut. */
  bind() {
    const app = this.app;
    $("#act-sit").addEventListener("click", () => app.cmd("sit"));
    $("#act-stand").addEventListener("click", () => app.cmd("stand"));
    $("#act-regret").addEventListener("click", () => app.regret());
    $("#act-clear").addEventListener("click", async () => {
      if (await app.cmd("clear_bets")) app.placed = [];
    });
    $("#act-same").addEventListener("click", () => app.cmd("same_bet"));
    $("#act-done").addEventListener("click", () => app.cmd("done"));
    $("#act-accept").addEventListener("click", () => app.cmd("accept_shoe"));
    $("#act-decline").addEventListener("click", () => app.cmd("decline_shoe"));
    $("#act-pass").addEventListener("click", () => app.cmd("pass_shoe"));
    $("#cut-range").addEventListener("input", (ev) => {
      this.cutValue = Number(ev.target.value);
      this.renderCut();
    });
    $("#act-cut").addEventListener("click", () => app.cmd("cut", { position: Number($("#cut-range").value) }));
  }

  /** Everything drawn again from the state, the focus kept where it was. */
  render() {
    const focused = this.focusWas();
    this.renderPlaque();
    this.renderSeats();
    this.renderShoe();
    this.renderHands();
    this.renderLayout();
    this.renderChips();
    this.renderButtons();
    this.renderMoney();
    this.renderClock();
    this.keepFocus(focused);
  }

  buildLayout() {
    const app = this.app;
    const s = app.state;
    const layout = $("#layout");
    // As on a felt: the side bets in a row above the three main areas, Player left of
    // Tie, Banker right; each side's bets on its side.
    const rows = { side: [], main: [] };
    const sorted = [...s.areas].sort((a, b) => AREA_ORDER.indexOf(a) - AREA_ORDER.indexOf(b));
    for (const area of sorted) {
      const el = (() => {
        const el = h(
          "button",
          { class: "area", dataset: { area }, type: "button" },
          h("span", { class: "area-name" }, AREA_NAMES[area] ?? area),
          h("span", { class: "area-pays" }, area === "banker" && s.options.commission === false ? t("page.pays.no_commission") : PAYS[area] ?? ""),
          h("span", { class: "area-pile" }),
          h("span", { class: "area-others" }),
        );
        let timer = null;
        el.addEventListener("pointerdown", (ev) => {
          if (ev.pointerType === "mouse") return;
          timer = setTimeout(() => {
            timer = null;
            this.lastLongPress = Date.now();
            app.remove(area);
          }, LONG_PRESS_MS);
        });
        const cancel = () => {
          if (timer) clearTimeout(timer);
          timer = null;
        };
        el.addEventListener("pointerup", cancel);
        el.addEventListener("pointercancel", cancel);
        el.addEventListener("pointerleave", cancel);
        el.addEventListener("click", (ev) => {
          if (Date.now() - this.lastLongPress < 800) return; // the long press already removed
          if (ev.ctrlKey || ev.metaKey) app.remove(area);
          else app.place(area);
        });
        el.addEventListener("contextmenu", (ev) => {
          ev.preventDefault(); // a right click regrets a chip, as at the old tables
          if (Date.now() - this.lastLongPress < 800) return;
          app.remove(area);
        });
        return el;
      })();
      rows[MAIN_AREAS.has(area) ? "main" : "side"].push(el);
    }
    fill(layout,
      rows.side.length ? h("div", { class: "layout-row side-bets" }, rows.side) : null,
      h("div", { class: "layout-row main-bets" }, rows.main),
    );
    const rack = $("#chips");
    fill(rack,
      ...app.chips().map((value, i) =>
        h(
          "button",
          {
            class: "chip",
            type: "button",
            dataset: { value, index: i, tier: i },
            "aria-pressed": String(i === app.chip),
            onclick: () => {
              app.chip = i;
              this.renderChips();
            },
          },
          chipLabel(formatMoney(value, { compact: true })),
        ),
      ),
    );
    app.chip = Math.min(app.chip, app.chips().length - 1);
  }

  renderPlaque() {
    const app = this.app;
    const s = app.state;
    const lim = s.limits;
    $("#plaque").textContent = `${s.options.name ?? s.table} · ${formatMoney(lim.min)}–${formatMoney(lim.max)} · ${t("page.tie_max", { amount: formatMoney(lim.tie_max) })}`;
  }

  renderClock() {
    const app = this.app;
    const s = app.state;
    if (!s || !app.client) return;
    const deadline = s.deadline ?? s.coup?.deadline ?? s.offer?.deadline ?? null;
    const left = app.client.remaining(deadline);
    $("#phase").textContent = PHASE_NAMES[s.phase] ?? s.phase;
    const cd = $("#countdown");
    if (left == null) {
      cd.textContent = "";
      cd.hidden = true;
    } else {
      cd.hidden = false;
      cd.textContent = `${Math.ceil(left)}s`;
      cd.dataset.urgent = left < 4 ? "1" : "0";
    }
  }

  renderSeats() {
    const app = this.app;
    const s = app.state;
    const bySeat = new Map(s.seatsInOrder().map((p) => [p.seat, p]));
    const free = new Set(s.actions.sit?.seats ?? []);
    const n = s.options.seats ?? 14;
    const seats = [];
    // The Sit buttons are one tab stop (a roving tabindex, WAI-ARIA toolbar): the arrow
    // keys, Home and End move between them.
    const sittable = app.connState === "open" ? [...free].filter((i) => i >= 1 && i <= n && !bySeat.has(i)).sort((a, b) => a - b) : [];
    const roving = sittable.includes(this.seatFocus) ? this.seatFocus : sittable[0];
    for (let i = 1; i <= n; i++) {
      const p = bySeat.get(i);
      if (!p) {
        seats.push(
          h(
            "div",
            { class: "seat empty", dataset: { seat: i } },
            h("span", { class: "seat-no" }, i),
            free.has(i) && app.connState === "open"
              ? h(
                  "button",
                  {
                    class: "sit-here",
                    type: "button",
                    tabindex: i === roving ? "0" : "-1",
                    "aria-label": a11yText("sitIn", i),
                    onclick: () => app.cmd("sit", { seat: i }),
                    onfocus: () => (this.seatFocus = i),
                    onkeydown: (ev) => this.seatKey(ev, i),
                  },
                  t("page.seat.sit"),
                )
              : h("span", { class: "seat-name" }, "–"),
          ),
        );
        continue;
      }
      const total = Object.values(p.bets).reduce((a, b) => a + b, 0);
      const held = s.coup?.bets?.[p.player];
      const stake = held ? Object.values(held).reduce((a, b) => a + b, 0) : total;
      seats.push(
        h(
          "div",
          {
            class: `seat${p.player === s.me ? " me" : ""}${p.player === s.holder ? " holder" : ""}${p.connected ? "" : " away"}`,
            dataset: { seat: i, player: p.player },
          },
          h("span", { class: "seat-no" }, i),
          p.player === s.holder ? h("span", { class: "shoe-mark", title: t("page.seat.holds") }, t("page.seat.shoe")) : null,
          h("span", { class: "seat-name" }, p.player === s.me ? t("page.seat.you", { name: p.name }) : p.name),
          stake ? h("span", { class: "seat-chips" }, formatMoney(stake)) : null,
          p.done && s.phase === "betting" ? h("span", { class: "seat-done", title: t("btn.done") }, "✓") : null,
          p.connected ? null : h("span", { class: "seat-away", title: t("page.conn.disconnected") }, t("page.seat.away")),
          s.offer?.player === p.player ? h("span", { class: "seat-offer" }, t("page.seat.offered")) : null,
        ),
      );
    }
    fill($("#seats"), ...seats);
    const bar = $("#seats");
    bar.setAttribute("role", sittable.length ? "toolbar" : "group");
    bar.setAttribute("aria-label", a11yText("seats"));
    const you = s.mySeat ? t("page.you.seat", { seat: s.mySeat }) : t("page.you.watching");
    const shoe = s.holder === s.me && s.me ? ` · ${t("page.you.hold_shoe")}` : s.houseHolds ? ` · ${t("page.you.house_holds")}` : "";
    $("#you-seat").textContent = `${you}${shoe} · ${t("page.you.spectators", { count: s.spectators })}`;
  }

  renderShoe() {
    const app = this.app;
    const s = app.state;
    const shoe = s.shoe;
    const info = $("#shoe-info");
    if (!shoe) {
      fill(info, h("span", {}, t("page.shoe.none")));
    } else {
      fill(info,
        h("span", { class: "shoe-no" }, t("page.shoe.no", { shoe: shoe.no })),
        h("span", {}, t("page.shoe.cards", { cards: shoe.cards_left ?? "?" })),
        shoe.cut != null ? h("span", {}, t("page.shoe.cut", { cut: shoe.cut })) : null,
        shoe.burn
          ? h(
              "span",
              { class: "burn", id: "burn" },
              `${t("page.shoe.burn")} `,
              cardEl({ card: shoe.burn.card, up: true }, { small: true }),
              ` ${t("page.shoe.face_down", { count: shoe.burn.count })}`,
            )
          : null,
        shoe.stop_card_out ? h("span", { class: "stop" }, t("page.shoe.stop")) : null,
        this.randomness(shoe, s.me),
        h("span", { class: "commitment", title: t("page.shoe.commitment", { commitment: shoe.commitment }) }, `#${String(shoe.commitment ?? "").slice(0, 10)}`),
      );
    }
    this.renderCut();
  }

  /** The players' randomness in this shoe (docs/fairness.md §9), yours said first. */
  randomness(shoe, me) {
    const given = (shoe.contributions ?? []).filter((c) => c.value);
    if (!given.length) return null;
    const mine = given.some((c) => c.player === me);
    return h("span", { class: "randomness", id: "randomness" }, t(mine ? "page.shoe.randomness_yours" : "page.shoe.randomness", { count: given.length }));
  }

  renderCut() {
    const app = this.app;
    const s = app.state;
    const cut = s?.actions.cut;
    const box = $("#cut-box");
    show(box, Boolean(cut));
    if (!cut) {
      this.cutValue = null;
      return;
    }
    const range = $("#cut-range");
    range.min = String(cut.min);
    range.max = String(cut.max);
    if (this.cutValue == null || this.cutValue < cut.min || this.cutValue > cut.max) {
      this.cutValue = Math.round((cut.min + cut.max) / 2);
    }
    range.value = String(this.cutValue);
    const size = cut.max + cut.min;
    $("#cut-marker").style.setProperty("--at", `${(this.cutValue / size) * 100}%`);
    $("#cut-value").textContent = t("page.cut.value", { at: this.cutValue, min: cut.min, max: cut.max });
  }

  renderHands() {
    const app = this.app;
    const s = app.state;
    if (!s) return;
    const coup = s.shownCoup;
    for (const hand of ["player", "banker"]) {
      const box = $(`#hand-${hand}`);
      const cards = coup ? coup[hand] : [];
      const turner = coup?.turners?.[hand];
      const active = s.coup && s.phase === "turn" && s.coup.stage.startsWith(hand);
      const squeezing = active && s.coup.style;
      const pcts = coup ? Object.entries(coup.progress).filter(([k]) => k.startsWith(`${hand}:`)).map(([, v]) => v) : [];
      // The server's total (the card and result events), never the page's own: a
      // snapshot joined mid-coup says none until the hand's next card or the result.
      const total = handTotal(coup, hand);
      box.dataset.active = active ? "1" : "0";
      const shown = cards.some((c) => c.up) && total != null;
      $(`#total-${hand}`).textContent = shown ? String(total) : "";
      box.setAttribute("aria-label", handName(hand, cards, shown ? total : null));
      const who = [];
      if (s.coup && coup === s.coup) {
        who.push(t("page.turns", { who: s.name(turner) }));
        if (squeezing) who.push(`${String(s.coup.style).toUpperCase()}${pcts.length && s.coup.squeezer !== s.me ? ` ${Math.max(...pcts)}%` : ""}`);
      }
      $(`#turner-${hand}`).textContent = who.join(" · ");
      // Cards are kept from one drawing to the next (a new element would deal again):
      // only a card whose face or state changed is drawn anew; a squeeze just bends.
      const holder = $(`#cards-${hand}`);
      const round = coup?.roundId ?? "";
      const els = cards.map((c, i) => {
        const key = `${hand}:${i + 1}`;
        const known = s.coup?.private?.[key] ?? null;
        const progress = app.squeeze.local[key] ?? coup.progress[key];
        const croupier = c.up && c.by === "croupier" ? c.onBehalf : null;
        const style = c.up ? "" : (s.coup?.style ?? "");
        const sig = [round, c.up, c.card, known, style, progress == null, croupier].join("|");
        let el = holder.children[i];
        if (!el || el.dataset.sig !== sig) {
          const again = el?.dataset.sig?.startsWith(`${round}|`);
          el = cardEl(c, { known, progress, style, croupier, index: i + 1, hand });
          el.dataset.sig = sig;
          if (again) el.classList.add("again"); // the same card, turned: it flips, not deals
        } else if (progress != null) {
          bend(el, progress);
        }
        return el;
      });
      if (els.length !== holder.children.length || els.some((el, i) => holder.children[i] !== el)) fill(holder, els);
    }
    this.announceHands(coup);
    const result = $("#result");
    const r = coup?.result;
    if (r && (!s.coup || s.coup.result)) {
      result.textContent = s.coup ? resultText(r) : s.resultLine || resultText(r);
      result.dataset.outcome = r.outcome;
      show(result, true);
    } else {
      show(result, false);
    }
  }

  /** Say a hand, politely, when a card of it is turned face up: not while a card is
   * squeezed (its progress would flood), nor what was already there on joining. */
  announceHands(coup) {
    const app = this.app;
    const round = coup?.roundId ?? null;
    const said = [];
    const now = { round };
    for (const hand of ["player", "banker"]) {
      const cards = coup ? coup[hand] : [];
      now[hand] = cards.filter((c) => c.up).map((c) => c.card).join(",");
      if (round && round === this.spoken?.round && now[hand] && now[hand] !== this.spoken[hand]) {
        said.push(handName(hand, cards, handTotal(coup, hand)));
      }
    }
    this.spoken = now;
    if (!said.length) return;
    // A card the croupier turned for someone keeps its note: it says why.
    const lead = app.justSaid?.tone === "croupier" ? `${app.justSaid.text}. ` : "";
    $("#announce").textContent = lead + said.join(". ");
  }

  /** The arrow keys, Home and End on a Sit button: the next free seat's button. */
  seatKey(ev, seat) {
    const buttons = [...document.querySelectorAll("#seats .sit-here")];
    const at = buttons.findIndex((b) => b.closest("[data-seat]")?.dataset.seat === String(seat));
    const last = buttons.length - 1;
    const next = {
      ArrowRight: (at + 1) % buttons.length,
      ArrowDown: (at + 1) % buttons.length,
      ArrowLeft: (at + last) % buttons.length,
      ArrowUp: (at + last) % buttons.length,
      Home: 0,
      End: last,
    }[ev.key];
    if (next === undefined) return;
    ev.preventDefault();
    for (const [k, b] of buttons.entries()) b.tabIndex = k === next ? 0 : -1;
    buttons[next].focus();
  }

  /** Where the focus is before a drawing, to find it again after (keepFocus). */
  focusWas() {
    const el = document.activeElement;
    const inTable = Boolean(el && el !== document.body && $("#table").contains(el));
    return {
      el,
      inTable,
      seat: inTable ? (el.closest("#seats [data-seat]")?.dataset.seat ?? null) : null,
      bar: inTable ? el.closest(".bar, .offer-box, .cut-box") : null,
    };
  }

  /** The focus never drops to the page's body because a drawing replaced, hid or
   * disabled the control that had it: it goes to the same control drawn anew, else the
   * next one of its bar, else the step the table waits for from this player, else to
   * "You: seat N" (after SIT), where it waits for such a step (ACCEPT, CUT, TOSS...). */
  keepFocus(was) {
    const app = this.app;
    const usable = (el) => Boolean(el?.isConnected && !el.disabled && !el.closest("[hidden]") && el.checkVisibility?.() !== false);
    const now = document.activeElement;
    const parked = now?.id === "you-seat" && this.focusParked;
    if (now && now !== document.body && !parked && usable(now)) {
      this.focusParked = false;
      return;
    }
    if (!was.inTable && !parked) {
      this.focusParked = false; // the player put the focus elsewhere (a click on the felt)
      return;
    }
    const s = app.state;
    const candidates = [];
    if (was.inTable && (was.seat || was.el?.id === "act-sit")) {
      candidates.push(s.mySeat ? null : $(`#seats .seat[data-seat='${was.seat}'] .sit-here`), $("#seats .sit-here[tabindex='0']"));
    }
    if (was.bar) {
      // The next control of the same bar (PEEK -> CARD 1 -> CARD 2), then the ones before.
      const all = [...was.bar.querySelectorAll("button, input")];
      const at = all.indexOf(was.el);
      candidates.push(...all.slice(at + 1), ...all.slice(0, Math.max(0, at)));
    }
    candidates.push(...["#act-accept", "#cut-range", "#sq-toss", "#sq-peek", "#sq-card1", "#sq-card2"].map((sel) => $(sel)));
    if (s.actions.bet) candidates.push($("#chips .chip[aria-pressed='true']"));
    if (!s.mySeat && was.inTable) candidates.push($("#seats .sit-here[tabindex='0']"), $("#act-sit")); // after STAND
    const target = candidates.find(usable);
    if (target) {
      target.focus();
      this.focusParked = false;
    } else if (s.mySeat && !parked) {
      $("#you-seat").focus();
      this.focusParked = true;
    }
  }

  renderLayout() {
    const app = this.app;
    const s = app.state;
    const stacks = s.stacks();
    const bet = s.actions.bet?.areas ?? {};
    const remove = s.actions.remove_bet?.areas ?? {};
    const open = app.connState === "open";
    for (const el of document.querySelectorAll("#layout .area")) {
      const area = el.dataset.area;
      const list = stacks[area] ?? [];
      const total = list.reduce((a, b) => a + b.amount, 0);
      const mine = list.find((x) => x.player === s.me)?.amount ?? 0;
      el.disabled = !open || !(bet[area] || remove[area]);
      el.dataset.mine = String(mine);
      el.dataset.total = String(total);
      el.title = bet[area]
        ? t("page.area.title", { min: formatMoney(bet[area].min), max: formatMoney(bet[area].max) })
        : t("page.area.max", { amount: formatMoney(s.maxFor(area)) });
      const pile = el.querySelector(".area-pile");
      fill(pile,
        mine ? h("span", { class: "pile mine" }, chipStack(mine, s.limits.min)) : null,
        total ? h("span", { class: "balloon" }, formatMoney(total)) : null,
      );
      el.querySelector(".area-others").textContent = list
        .filter((x) => x.player !== s.me)
        .map((x) => `${s.name(x.player)} ${formatMoney(x.amount)}`)
        .join(" · ");
    }
    const coup = s.shownCoup;
    // The areas the result says won (result.won): the page decides no rule. (A result
    // stored before the server said so: the areas it paid as won.)
    const won = new Set(
      coup?.result?.won ?? (coup?.payouts ?? []).filter((p) => p.outcome === "win").map((p) => p.area),
    );
    for (const el of document.querySelectorAll("#layout .area")) {
      el.dataset.won = coup?.result && won.has(el.dataset.area) ? "1" : "0";
    }
  }

  renderChips() {
    const app = this.app;
    for (const el of document.querySelectorAll("#chips .chip")) {
      el.setAttribute("aria-pressed", String(Number(el.dataset.index) === app.chip));
    }
  }

  renderButtons() {
    const app = this.app;
    const s = app.state;
    const a = s && app.connState === "open" ? s.actions : {};
    enable($("#act-sit"), Boolean(a.sit));
    show($("#act-sit"), !s?.mySeat);
    enable($("#act-stand"), Boolean(a.stand));
    show($("#act-stand"), Boolean(s?.mySeat));
    enable($("#act-regret"), Boolean(a.remove_bet));
    enable($("#act-clear"), Boolean(a.clear_bets));
    enable($("#act-same"), Boolean(a.same_bet));
    enable($("#act-done"), Boolean(a.done));
    show($("#offer-box"), Boolean(a.accept_shoe || a.decline_shoe));
    enable($("#act-accept"), Boolean(a.accept_shoe));
    enable($("#act-decline"), Boolean(a.decline_shoe));
    show($("#act-pass"), Boolean(a.pass_shoe));
    enable($("#act-pass"), Boolean(a.pass_shoe));
    app.squeeze.renderBar(a, s);
    show($("#bet-bar"), Boolean(s?.mySeat));
    show($("#chips"), Boolean(s?.mySeat));
  }

  renderMoney(balance, bet) {
    const app = this.app;
    const s = app.state;
    const shown = balance ?? (s ? s.available ?? s.balance : app.identity?.available ?? app.identity?.balance);
    $("#balance").textContent = formatMoney(shown);
    $("#bet").textContent = formatMoney(bet ?? (s ? s.myStake : 0));
  }
}

// ---------------------------------------------------------------------------- pieces

/** A pile of a few chip discs for an amount (display only). */
function chipStack(amount, unit) {
  const discs = Math.max(1, Math.min(6, Math.round(Math.log2(amount / (unit || 100) + 1))));
  return [...Array.from({ length: discs }, (_, i) => h("span", { class: "disc", vars: { "--i": i } })), h("span", { class: "pile-value" }, formatMoney(amount))];
}

/** A chip's value, its size fitted to the chip by its length (chemmy.css). */
function chipLabel(text) {
  return h("span", { class: "chip-label", vars: { "--chars": text.length } }, text);
}
