/**
 * table.js — the table screen of the web table (app.js): the felt and its bet areas,
 * the seats, the shoe and its cut, the two hands, the result's banner, the chips (the
 * rack of standard values, the piles on the felt, collected and paid when a coup is
 * settled) and the bars of buttons, drawn from the App's state (state.js) and the
 * server's `actions`. Like the terminal client's table screen (client_cli/tui/table.py),
 * it decides no rule: a button is enabled by the server's actions, a hand's total is the
 * server's (the card and result events), the winning areas the result's `won`, a payout
 * the settled event's, a click is a command (app.js `cmd`) and nothing moves until an
 * event says so. The squeeze bar and a card's bend are squeeze.js's. A drawing writes
 * only what changed (a bend, 4 times a second, redraws no seat). docs/architecture.md §11b.
 */

import { formatNumber, language, t } from "./i18n.js";
import { AREA_NAMES, PHASE_NAMES, formatMoney, resultText } from "./state.js";
import { $, enable, fill, h, show } from "./dom.js";
import { a11yText, bend, cardEl, handName, handTotal } from "./cards.js";

/** Where each bet area sits on the felt, left to right (the side bets above). */
const AREA_ORDER = ["player_pair", "dragon_player", "super6", "dragon_banker", "banker_pair", "player", "tie", "banker"];
const MAIN_AREAS = new Set(["player", "tie", "banker"]);
const LONG_PRESS_MS = 550;
const RESULT_BIG_MS = 3200; // the result's banner large, before it sits on the hands' edge
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
    $("#seats").addEventListener("scroll", () => this.seatsInView(), { passive: true });
    new ResizeObserver(() => this.seatsInView()).observe($("#seats"));
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
    this.showPlay();
  }

  /** Just seated: the felt is brought back to its top, where the hands, the bet areas,
   * the chips and the buttons are (a Sit button may be far below them on a phone). */
  showPlay() {
    const seated = Boolean(this.app.state?.mySeat);
    if (seated && !this.seated) {
      for (const el of [document.querySelector("main"), $("#table .felt")]) el?.scrollTo?.({ top: 0 });
    }
    this.seated = seated;
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
    const { decimals, code } = this.money();
    fill(rack,
      ...app.chips().map((value, i) => {
        const chip = chipButton(value, i, decimals, code);
        chip.setAttribute("aria-pressed", String(i === app.chip));
        chip.addEventListener("click", () => {
          app.chip = i;
          this.renderChips();
        });
        return chip;
      }),
    );
    app.chip = Math.min(app.chip, app.chips().length - 1);
  }

  /** The table's money: its minor units' digits and its currency (null: play money). */
  money() {
    const o = this.app.state?.options ?? {};
    return { decimals: Number.isInteger(o.decimals) ? o.decimals : 2, code: o.currency ?? null };
  }

  /** The table's rack of chips (`chipSet`), in minor units, smallest first. */
  rack() {
    return chipSet(this.app.state?.limits, this.money().decimals);
  }

  renderPlaque() {
    const app = this.app;
    const s = app.state;
    const lim = s.limits;
    setText($("#plaque"), `${s.options.name ?? s.table} · ${formatMoney(lim.min)}–${formatMoney(lim.max)} · ${t("page.tie_max", { amount: formatMoney(lim.tie_max) })}`);
  }

  renderClock() {
    const app = this.app;
    const s = app.state;
    if (!s || !app.client) return;
    const deadline = s.deadline ?? s.coup?.deadline ?? s.offer?.deadline ?? null;
    const left = app.client.remaining(deadline);
    setText($("#phase"), PHASE_NAMES[s.phase] ?? s.phase);
    const cd = $("#countdown");
    if (left == null) {
      setText(cd, "");
      cd.hidden = true;
    } else {
      cd.hidden = false;
      setText(cd, `${Math.ceil(left)}s`);
      if (cd.dataset.urgent !== (left < 4 ? "1" : "0")) cd.dataset.urgent = left < 4 ? "1" : "0";
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
    const bar = $("#seats");
    // Drawn anew only when a seat changed (a bend or a chip elsewhere changes none).
    const sig = seats.map((el) => `${el.className}|${el.dataset.player}|${el.textContent}|${el.querySelector(".sit-here")?.tabIndex ?? ""}`).join("\n");
    setAttr(bar, "role", sittable.length ? "toolbar" : "group");
    if (this.seatsDrawn !== sig) {
      fill(bar, ...seats);
      this.seatsDrawn = sig;
      this.seatsInView();
    }
    const you = s.mySeat ? t("page.you.seat", { seat: s.mySeat }) : s.bettingWithoutSeat ? t("page.you.betting") : t("page.you.watching");
    const shoe = s.holder === s.me && s.me ? ` · ${t("page.you.hold_shoe")}` : s.houseHolds ? ` · ${t("page.you.house_holds")}` : "";
    // How many bet without a seat (the felt's `bettors`, §5): never who.
    const bettors = s.bettors ? ` · ${t("page.you.bettors", { count: s.bettors })}` : "";
    setText($("#you-seat"), `${you}${shoe} · ${t("page.you.spectators", { count: s.spectators })}${bettors}`);
  }

  /** When the seats' row is wider than the felt (it scrolls sideways): which seats are in
   * view, said beside it ("Seats 1–11 of 14 ›") and by a fade on the side where more are;
   * with no Sit button in it, the row itself takes the focus, so that the arrow keys
   * scroll it (the Sit buttons bring theirs into view as they get the focus). */
  seatsInView() {
    const bar = $("#seats");
    const range = $("#seats-range");
    const seats = [...bar.children];
    const over = bar.scrollWidth - bar.clientWidth > 1 && bar.clientWidth > 0;
    const shown = seats.filter((el) => el.offsetLeft >= bar.scrollLeft - 1 && el.offsetLeft + el.offsetWidth <= bar.scrollLeft + bar.clientWidth + 1);
    const first = shown[0]?.dataset.seat;
    const last = shown.at(-1)?.dataset.seat;
    const before = over && bar.scrollLeft > 1;
    const after = over && bar.scrollLeft < bar.scrollWidth - bar.clientWidth - 1;
    const more = before && after ? "both" : before ? "before" : after ? "after" : "";
    if (bar.dataset.more !== more) bar.dataset.more = more;
    if (range.hidden === (over && Boolean(first))) show(range, over && Boolean(first));
    const words = { first, last, count: seats.length };
    if (over && first) setText(range, t("page.seats.range", words));
    const alone = over && !bar.querySelector(".sit-here");
    if (alone) {
      setAttr(bar, "tabindex", "0");
      setAttr(bar, "aria-label", t("page.seats.scroll", words));
    } else {
      if (bar.hasAttribute("tabindex")) bar.removeAttribute("tabindex");
      setAttr(bar, "aria-label", a11yText("seats"));
    }
  }

  renderShoe() {
    const app = this.app;
    const s = app.state;
    const shoe = s.shoe;
    const info = $("#shoe-info");
    const drawn = JSON.stringify([shoe, s.me, language()]);
    if (this.shoeDrawn === drawn) {
      this.renderCut();
      return;
    }
    this.shoeDrawn = drawn;
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
    setText($("#cut-value"), t("page.cut.value", { at: this.cutValue, min: cut.min, max: cut.max }));
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
      // The server's total (the card and result events), never the page's own: a
      // snapshot joined mid-coup says none until the hand's next card or the result.
      const total = handTotal(coup, hand);
      box.dataset.active = active ? "1" : "0";
      const shown = cards.some((c) => c.up) && total != null;
      setText($(`#total-${hand}`), shown ? String(total) : "");
      setAttr(box, "aria-label", handName(hand, cards, shown ? total : null));
      const who = [];
      if (s.coup && coup === s.coup) {
        who.push(t("page.turns", { who: s.name(turner) }));
        if (squeezing) who.push(String(s.coup.style).toUpperCase());
      }
      setText($(`#turner-${hand}`), who.join(" · "));
      // Cards are kept from one drawing to the next (a new element would deal again):
      // only a card whose face or state changed is drawn anew; a squeeze just bends.
      const holder = $(`#cards-${hand}`);
      const round = coup?.roundId ?? "";
      const els = cards.map((c, i) => {
        const key = `${hand}:${i + 1}`;
        const known = s.coup?.private?.[key] ?? null;
        // Mine as I bend it (a card I may bend lies ready, unbent); another's as the
        // table last said, eased (squeeze.js).
        const mine = !c.up && squeezing && app.squeeze.mayBend(hand, i + 1);
        const progress = c.up ? null : app.squeeze.bendOf(key, coup.progress[key]) ?? (mine ? 0 : null);
        const croupier = c.up && c.by === "croupier" ? c.onBehalf : null;
        const style = c.up ? "" : (s.coup?.style ?? "");
        const sig = [round, c.up, c.card, known, style, progress == null, croupier].join("|");
        let el = holder.children[i];
        if (!el || el.dataset.sig !== sig) {
          const again = el?.dataset.sig?.startsWith(`${round}|`);
          // Turned: it flips for those who could not see it; the turner saw it open.
          const opened = el?.dataset.state === "squeeze" && !el.querySelector(".unseen");
          el = cardEl(c, { known, progress, style, croupier, index: i + 1, hand });
          el.dataset.sig = sig;
          if (again) el.classList.add(opened ? "opened" : "again");
        } else if (progress != null) {
          bend(el, progress);
        }
        setAttr(el, "data-drag", mine ? "1" : "");
        return el;
      });
      if (els.length !== holder.children.length || els.some((el, i) => holder.children[i] !== el)) fill(holder, els);
    }
    this.announceHands(coup);
    this.renderResult(coup);
  }

  /** The result's banner over the hands: the winner, both totals, the coup's notes and,
   * big, what you won. It comes large (RESULT_BIG_MS), then sits small on the hands'
   * edge until the next coup's chips take the coup off the felt. */
  renderResult(coup) {
    const s = this.app.state;
    const box = $("#result");
    const r = coup?.result;
    if (!r || (s.coup && !s.coup.result)) {
      show(box, false);
      box.dataset.round = "";
      return;
    }
    const key = [coup.roundId, coup.net ?? "", language()].join("|");
    if (box.dataset.round !== key) {
      const fresh = box.hidden || !box.dataset.round?.startsWith(`${coup.roundId}|`);
      fill(box, resultBanner(r, coup));
      box.dataset.round = key;
      box.dataset.outcome = r.void ? "void" : r.outcome;
      if (fresh) {
        box.dataset.size = "big";
        clearTimeout(this.bannerTimer);
        this.bannerTimer = setTimeout(() => (box.dataset.size = "small"), RESULT_BIG_MS);
      }
    }
    show(box, true);
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
    // After STAND, the Sit buttons before the chips (which a table that takes bettors
    // without a seat offers a spectator too); a bettor without a seat's, the chips.
    const sit = !s.mySeat && was.inTable ? [$("#seats .sit-here[tabindex='0']"), $("#act-sit")] : [];
    if (!s.bettingWithoutSeat) candidates.push(...sit);
    if (s.actions.bet) candidates.push($("#chips .chip[aria-pressed='true']"));
    candidates.push(...sit);
    // The focus moves without scrolling the felt away from the hands: a step's control
    // is brought into view only as far as it must be; "You: seat N" is not.
    const target = candidates.find(usable);
    if (target) {
      target.focus({ preventScroll: true });
      target.scrollIntoView({ block: "nearest", inline: "nearest" });
      this.focusParked = false;
    } else if (s.mySeat && !parked) {
      $("#you-seat").focus({ preventScroll: true });
      this.focusParked = true;
    }
  }

  renderLayout() {
    const app = this.app;
    const s = app.state;
    const coup = s.shownCoup;
    // The settled coup on show: its chips stay on the felt, the losing ones collected,
    // the winning ones paid (chemmy.css), until the next coup's chips.
    const settled = !s.coup && coup?.payouts ? coup : null;
    const stacks = settled ? stacksOf(settled.bets, s) : s.stacks();
    const bet = s.actions.bet?.areas ?? {};
    const remove = s.actions.remove_bet?.areas ?? {};
    const open = app.connState === "open";
    // The areas the result says won (result.won): the page decides no rule. (A result
    // stored before the server said so: the areas it paid as won.)
    const won = new Set(
      coup?.result?.won ?? (coup?.payouts ?? []).filter((p) => p.outcome === "win").map((p) => p.area),
    );
    const rack = this.rack();
    const { decimals } = this.money();
    for (const el of document.querySelectorAll("#layout .area")) {
      const area = el.dataset.area;
      const list = stacks[area] ?? [];
      // Everyone's chips here, the bettors' without a seat too: the felt's totals (§5);
      // the settled coup's own wagers while it is on show.
      const total = settled ? (settled.felt?.[area] ?? list.reduce((a, b) => a + b.amount, 0)) : s.areaTotal(area, stacks);
      const mine = list.find((x) => x.player === s.me)?.amount ?? 0;
      const closed = !open || !(bet[area] || remove[area]);
      if (el.disabled !== closed) el.disabled = closed;
      setAttr(el, "data-mine", String(mine));
      setAttr(el, "data-total", String(total));
      setAttr(el, "data-won", coup?.result && won.has(area) ? "1" : "0");
      setAttr(el, "title", bet[area]
        ? t("page.area.title", { min: formatMoney(bet[area].min), max: formatMoney(bet[area].max) })
        : t("page.area.max", { amount: formatMoney(s.maxFor(area)) }));
      // The server's word for each of your bets here (settled.payouts): win, lose or push.
      const paid = settled?.payouts?.find((x) => x.player === s.me && x.area === area) ?? null;
      const outcome = settled ? (paid?.outcome ?? (won.has(area) ? "win" : "lose")) : "";
      const pile = el.querySelector(".area-pile");
      // Drawn anew only when it changed: a chip's animation is not restarted by a drawing.
      const sig = [settled?.roundId ?? "", mine, total, outcome, paid?.win ?? 0, rack.join(",")].join("|");
      if (pile.dataset.sig !== sig) {
        pile.dataset.sig = sig;
        pile.dataset.outcome = outcome;
        fill(pile,
          mine ? h("span", { class: "pile mine", dataset: { outcome } }, chipStack(mine, rack, decimals)) : null,
          outcome === "win" && paid?.win > 0
            ? h("span", { class: "pile paid" }, chipStack(paid.win, rack, decimals, { sign: true }))
            : null,
          total ? h("span", { class: "balloon", dataset: { outcome } }, formatMoney(total)) : null,
        );
      }
      setText(el.querySelector(".area-others"), list
        .filter((x) => x.player !== s.me)
        .map((x) => `${s.name(x.player)} ${formatMoney(x.amount)}`)
        .join(" · "));
    }
  }

  renderChips() {
    const app = this.app;
    for (const el of document.querySelectorAll("#chips .chip")) {
      setAttr(el, "aria-pressed", String(Number(el.dataset.index) === app.chip));
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
    // The betting buttons give their row to the squeeze's while you turn (none of them
    // is allowed then): the felt keeps its height.
    // A spectator bets without a seat where the table takes bettors (§5): the chips and
    // the bar, without DONE (a bettor never holds the betting open).
    const betting = Boolean(s?.mySeat || s?.takesBettors);
    show($("#bet-bar"), betting && !(a.toss || a.squeeze || a.turn));
    show($("#chips"), betting);
    show($("#act-done"), Boolean(s?.mySeat));
    this.renderBettorNote();
  }

  /** Why a spectator's bet areas are open or closed (§5): a seated-only table, a table
   * with all the bettors it takes, or an invitation to bet without a seat. */
  renderBettorNote() {
    const s = this.app.state;
    const el = $("#bettor-note");
    let text = "";
    if (s && !s.mySeat && !s.closed) {
      if (!s.takesBettors) text = t("page.bettor.seated_only");
      else if (s.actions.bet || s.bettingWithoutSeat) text = t("page.bettor.open");
      else if (s.phase === "betting" && s.bettors >= s.options.bettors) text = t("page.bettor.full");
    }
    setText(el, text);
    show(el, Boolean(text));
  }

  renderMoney(balance, bet) {
    const app = this.app;
    const s = app.state;
    const shown = balance ?? (s ? s.available ?? s.balance : app.identity?.available ?? app.identity?.balance);
    setText($("#balance"), formatMoney(shown));
    // (my tables: your chips on all of them, as their frames say: grid.js)
    setText($("#bet"), formatMoney(bet ?? (s ? s.myStake : app.grid?.shown ? app.grid.stake() : 0)));
  }
}

// ---------------------------------------------------------------------------- the result

/** The result's banner: who won (in big letters), both totals, the coup's notes, and
 * what you won or lost (`coup.net`, the settled event's); the whole sentence for a
 * screen reader (the message display says it too, in the live region). */
function resultBanner(r, coup) {
  if (r.void) return [h("span", { class: "result-winner" }, resultText(r))];
  const net = Number.isInteger(coup.net) ? coup.net : null;
  const winner = r.outcome === "tie" ? t("page.result.tie") : t("page.result.wins", { hand: t(`hand_title.${r.outcome}`) });
  const notes = [r.natural ? t("result.natural") : null, r.player_pair ? AREA_NAMES.player_pair : null, r.banker_pair ? AREA_NAMES.banker_pair : null].filter(Boolean);
  const you = net ? t(net > 0 ? "page.result.you_win" : "page.result.you_lose", { amount: formatMoney(Math.abs(net)) }) : null;
  const sentence = [resultText(r), you].filter(Boolean).join(" — ");
  return [
    h("span", { class: "sr-only" }, sentence),
    h(
      "span",
      { class: "result-show", "aria-hidden": "true" },
      h("span", { class: "result-winner" }, winner),
      h(
        "span",
        { class: "result-totals" },
        h("span", { class: "rt player" }, h("span", { class: "rt-name" }, t("hand_title.player")), h("b", {}, r.player_total)),
        h("span", { class: "rt banker" }, h("span", { class: "rt-name" }, t("hand_title.banker")), h("b", {}, r.banker_total)),
      ),
      notes.length ? h("span", { class: "result-notes" }, notes.join(" · ")) : null,
      you ? h("span", { class: "result-you", dataset: { tone: net > 0 ? "win" : "lose" } }, you) : null,
    ),
  ];
}

// ---------------------------------------------------------------------------- chips

/** The standard chip values, in whole currency units, and each one's colour on the rack
 * and on the felt (its ink: the digits' colour, 4.5:1 on it). The rack of a table is the
 * first five of these from the table's minimum up to its maximum (`chipSet`): 1, 5, 10,
 * 25, 100 at a 1-100 table; 100, 500, 1K, 5K, 10K at a 100-10,000 one (100 yen to 10,000
 * yen at a JPY table of tier 1-100); 0.1, 0.25, 0.5, 1, 5 dinars at a KWD table of tier
 * 1-100 (its minimum is 0.100 KWD). A value a currency's minor units cannot hold (half a
 * yen) is not a chip. docs/architecture.md §11b. */
export const CHIP_SERIES = [
  [0.01, "#8f98a0", "dark"],
  [0.05, "#d77fa8", "dark"],
  [0.1, "#2a7097", "light"],
  [0.25, "#1f7f74", "light"],
  [0.5, "#8a6b4a", "light"],
  [1, "#f1ede0", "dark"],
  [5, "#c72c33", "light"],
  [10, "#2f6fe0", "light"],
  [25, "#1f7a42", "light"],
  [100, "#1f1f1f", "light"],
  [500, "#6f36b8", "light"],
  [1000, "#e8b723", "dark"],
  [5000, "#7b4a1f", "light"],
  [10000, "#2a7097", "light"],
  [25000, "#c2416b", "light"],
  [100000, "#d9d9d9", "dark"],
  [500000, "#b8860b", "dark"],
  [1000000, "#0f5132", "light"],
  [5000000, "#c72c33", "light"],
  [10000000, "#2f6fe0", "light"],
  [25000000, "#1f7a42", "light"],
  [100000000, "#1f1f1f", "light"],
];
const RACK_SIZE = 5;
const OFF_SERIES = ["#2f6fe0", "#c72c33", "#1f7a42", "#1f1f1f", "#6f36b8"]; // a minimum that is no chip

/** The chips of the series in minor units of a currency with `decimals` digits:
 * [{value, colour, ink}], smallest first. */
function seriesIn(decimals) {
  const scale = 10 ** decimals;
  return CHIP_SERIES.map(([units, colour, ink]) => ({ value: Math.round(units * scale), units, colour, ink }))
    .filter((c) => c.value >= 1 && Math.abs(c.value - c.units * scale) < 1e-6);
}

/** The rack of a table (limits in minor units, as the snapshot's `options.limits`): the
 * first RACK_SIZE standard values from the minimum up to the maximum, smallest first;
 * a table whose minimum is below every chip, or none between its limits, has its
 * minimum as its one chip. */
export function chipSet(limits = {}, decimals = 2) {
  const min = Number.isInteger(limits.min) && limits.min > 0 ? limits.min : 10 ** decimals;
  const max = Number.isInteger(limits.max) && limits.max >= min ? limits.max : min * 100;
  const chips = seriesIn(decimals).filter((c) => c.value >= min && c.value <= max).slice(0, RACK_SIZE);
  return chips.length ? chips.map((c) => c.value) : [min];
}

/** A chip's colour and ink: the series' for a standard value, else one by its place. */
export function chipColour(value, decimals = 2, index = 0) {
  const found = seriesIn(decimals).find((c) => c.value === value);
  return found ? { colour: found.colour, ink: found.ink } : { colour: OFF_SERIES[index % OFF_SERIES.length], ink: "light" };
}

/** What a chip says: its value short, as casinos print it ("5", "25", "1K", "2.5K",
 * "1M", "0.25" in the page's language), and the currency's sign under it ("€", "¥",
 * "KWD"; nothing for play money), so that both fit inside its ring. */
export function chipFace(value, decimals = 2, code = null) {
  const units = value / 10 ** decimals;
  const short = (n, suffix) => `${formatNumber(n, { maximumFractionDigits: 2 })}${suffix}`;
  let number;
  if (units >= 1e6 && units % 1e5 === 0) number = short(units / 1e6, "M");
  else if (units >= 1e3 && units % 1e2 === 0) number = short(units / 1e3, "K");
  else number = formatNumber(units, { maximumFractionDigits: decimals, useGrouping: false });
  let unit = "";
  if (code) {
    try {
      unit = new Intl.NumberFormat(language(), { style: "currency", currency: code, currencyDisplay: "narrowSymbol" })
        .formatToParts(1).find((p) => p.type === "currency")?.value ?? code;
    } catch {
      unit = code;
    }
  }
  return { number, unit };
}

/** An amount as chips of the rack, the largest first (a pile on the felt: display only;
 * what no chip makes up, an odd payout's cents, is shown as one more smallest chip). */
export function chipsFor(amount, rack) {
  const values = [...rack].sort((a, b) => b - a);
  const out = [];
  let left = amount;
  for (const v of values) {
    while (left >= v && out.length < 64) {
      out.push(v);
      left -= v;
    }
  }
  if (left > 0 && values.length) out.push(values.at(-1));
  return out;
}

// ---------------------------------------------------------------------------- pieces

/** Text and attributes written only when they change: a drawing that changes nothing
 * costs the browser no layout (a squeeze's bends come 4 times a second, the clock's
 * tick 4 times too, with 14 players' seats, piles and names on the felt). */
function setText(el, text) {
  if (el.textContent !== text) el.textContent = text;
}

function setAttr(el, name, value) {
  if (el.getAttribute(name) !== value) el.setAttribute(name, value);
}

const PILE_DISCS = 8; // the most discs drawn in one pile (its value says the rest)

/** A pile of chip discs for an amount, in the rack's colours (display only), and its value. */
function chipStack(amount, rack, decimals, { sign = false } = {}) {
  const discs = chipsFor(amount, rack).slice(0, PILE_DISCS); // the largest at the bottom
  return [
    ...discs.map((v, i) => {
      const { colour } = chipColour(v, decimals, rack.indexOf(v));
      return h("span", { class: "disc", dataset: { value: v }, vars: { "--i": i, "--c": colour } });
    }),
    h("span", { class: "pile-value" }, formatMoney(amount, { sign })),
  ];
}

/** Who had what on each area in a settled coup's held wagers: {area: [{player, amount}]}. */
function stacksOf(bets, s) {
  const order = (pid) => s.seats.get(pid)?.seat ?? 99;
  const out = {};
  for (const [pid, b] of Object.entries(bets ?? {})) {
    for (const [area, amount] of Object.entries(b ?? {})) if (amount) (out[area] ??= []).push({ player: pid, amount });
  }
  for (const list of Object.values(out)) list.sort((x, y) => order(x.player) - order(y.player));
  return out;
}

/** A chip of the rack, worth `value` minor units of a currency with `decimals` digits
 * (`code`: its ISO code, null for play money): its colour, its face, its name. */
export function chipButton(value, index, decimals = 2, code = null) {
  const { colour, ink } = chipColour(value, decimals, index);
  return h(
    "button",
    {
      class: "chip",
      type: "button",
      dataset: { value, index, ink },
      vars: { "--c": colour },
      "aria-label": formatMoney(value, { compact: true }),
    },
    chipLabel(chipFace(value, decimals, code)),
  );
}

/** A chip's face on the rack: its value, sized to fit the ring by its length
 * (chemmy.css), and its currency's sign under it. */
function chipLabel({ number, unit }) {
  return [
    h("span", { class: "chip-label", vars: { "--chars": Math.max(number.length, 2) } }, number),
    unit ? h("span", { class: "chip-unit", vars: { "--chars": Math.max(unit.length, 2) } }, unit) : null,
  ];
}
