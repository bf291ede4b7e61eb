/**
 * squeeze.js — the squeeze of the web table (app.js): the squeeze bar (TOSS, PEEK, SIDE,
 * QUICK, CARD 1/2 or 3), drawn from the server's `toss`, `squeeze` and `turn` actions,
 * and the card being turned, bent as it is bent, for everyone at the table.
 *
 * The turner bends a card by dragging its lifting corner or edge (a mouse, a finger), or
 * with CARD 1/2, which opens it at the speed of Options; at 100 percent it is turned
 * (TURN). Each bend goes to the table as a `progress` (docs/protocol.md §6 `progress`),
 * at most one every SEND_MS (the table shows at most 4 a second per card), and comes
 * back to every watcher, whose page draws the same bend, eased from the last one over
 * SEND_MS so that it moves as the turner's does, a moment behind. The page's own squeeze
 * is drawn from `local` (hand:index -> percent) until the server's card event replaces
 * it; a watcher's from `shown`. A bend is drawn by cards.js `bend` on the card alone,
 * frame by frame: the rest of the table is not drawn again.
 *
 * It never shows a watcher a face: the server sends the face to the turner only (the
 * `squeeze` event's `cards`), and a watcher's card is drawn without one (cards.js).
 */

import { t } from "./i18n.js";
import { $, enable, show } from "./dom.js";
import { CURL, PEELS, bend } from "./cards.js";

/** Seconds one card takes to open in a squeeze, by game speed 1..5 (Options). */
export const SQUEEZE_SECONDS = { 1: 2.6, 2: 1.8, 3: 1.2, 4: 0.8, 5: 0.35 };
/** The shortest time between two bends sent for one card (the table shows one per 250 ms). */
export const SEND_MS = 280;
/** A drag let go past this percent opens the card the rest of the way and turns it. */
const LET_GO_TURNS = 70;

export class Squeeze {
  constructor(app) {
    this.app = app;
    this.local = {}; // "hand:index" -> percent of my own squeeze
    this.sent = {}; // "hand:index" -> {percent, at}: the last bend sent to the table
    this.shown = {}; // "hand:index" -> {from, to, at}: a watcher's bend, eased
    this.animating = new Set();
    this.drag = null;
    this.frame = 0; // the requestAnimationFrame easing the watchers' bends
  }

  /** Forget the squeezes' progress (a new coup, a snapshot). */
  reset() {
    this.local = {};
    this.sent = {};
    this.shown = {};
    this.drag = null;
  }

  /** The user asked the system for less motion: bends are drawn as they come, not eased. */
  get still() {
    return globalThis.matchMedia?.("(prefers-reduced-motion: reduce)").matches ?? false;
  }

  /** TOSS, the three styles, the card buttons, and dragging a card open. */
  bind() {
    const app = this.app;
    $("#sq-toss").addEventListener("click", () => {
      const hand = app.state?.actions.toss?.hand;
      if (hand) app.cmd("toss", { hand });
    });
    for (const style of ["peek", "side", "quick"]) {
      $(`#sq-${style}`).addEventListener("click", () => {
        const hand = app.state?.actions.squeeze?.hand;
        if (hand) app.cmd("squeeze", { hand, style });
      });
    }
    for (const [i, id] of ["#sq-card1", "#sq-card2"].entries()) {
      $(id).addEventListener("click", () => {
        const turn = app.state?.actions.turn;
        const index = Number($(id).dataset.card || i + 1);
        if (turn) this.squeezeCard(turn.hand, index);
      });
    }
    const hands = $("#hands");
    hands.addEventListener("pointerdown", (ev) => this.dragStart(ev));
    hands.addEventListener("pointermove", (ev) => this.dragMove(ev));
    hands.addEventListener("pointerup", (ev) => this.dragEnd(ev));
    hands.addEventListener("pointercancel", (ev) => this.dragEnd(ev, true));
  }

  /** The squeeze bar from the server's actions `a` (none while not connected). */
  renderBar(a, s) {
    const turning = Boolean(a.toss || a.squeeze || a.turn);
    show($("#squeeze-bar"), turning);
    enable($("#sq-toss"), Boolean(a.toss));
    for (const style of ["peek", "side", "quick"]) {
      enable($(`#sq-${style}`), Boolean(a.squeeze?.styles?.includes(style)));
    }
    const cards = a.turn?.cards ?? [];
    const stage = s?.coup?.stage?.endsWith("third") ? [3] : [1, 2];
    ["#sq-card1", "#sq-card2"].forEach((id, i) => {
      const el = $(id);
      const index = stage[i];
      show(el, index !== undefined);
      if (index === undefined) return;
      if (el.dataset.card !== String(index)) el.dataset.card = String(index);
      const words = t("btn.card", { n: index });
      if (el.textContent !== words) el.textContent = words;
      enable(el, cards.includes(index) && !this.animating.has(`${a.turn?.hand}:${index}`));
    });
  }

  // -- what is drawn -----------------------------------------------------------------

  /** Whether this player may bend card `index` of `hand` now (the server's `turn`). */
  mayBend(hand, index) {
    const turn = this.app.state?.actions.turn;
    return Boolean(turn && turn.hand === hand && (turn.cards ?? []).includes(index));
  }

  /** The bend to draw for card `key` ("hand:index"): mine as I bend it; another's eased
   * towards the last bend the table sent (`target`), or null when none was. */
  bendOf(key, target) {
    if (this.local[key] != null) return this.local[key];
    if (target == null) {
      delete this.shown[key];
      return null;
    }
    const now = performance.now();
    const was = this.shown[key];
    if (!was || this.still) {
      this.shown[key] = { from: target, to: target, at: now };
    } else if (was.to !== target) {
      this.shown[key] = { from: this.eased(was, now), to: target, at: now };
      this.ease();
    }
    return this.eased(this.shown[key], now);
  }

  /** The eased bend at `now` (a frame's time may be a little before the bend came). */
  eased(tw, now) {
    const k = Math.max(0, Math.min(1, (now - tw.at) / SEND_MS));
    return tw.from + (tw.to - tw.from) * k;
  }

  /** Ease the watchers' bends frame by frame, on the cards alone, until each has caught up. */
  ease() {
    if (this.frame) return;
    const step = (now) => {
      this.frame = 0;
      let more = false;
      for (const [key, tw] of Object.entries(this.shown)) {
        if (this.local[key] != null) continue;
        const el = cardOf(key);
        if (!el || el.dataset.state !== "squeeze") continue;
        bend(el, this.eased(tw, now));
        if (now - tw.at < SEND_MS) more = true;
      }
      if (more) this.frame = requestAnimationFrame(step);
    };
    this.frame = requestAnimationFrame(step);
  }

  /** Draw my own bend of card `key` on the card itself; tell the table now and then. */
  setLocal(hand, index, percent) {
    const key = `${hand}:${index}`;
    const was = this.local[key];
    this.local[key] = percent;
    let el = cardOf(key);
    if (was == null || !el || el.dataset.state !== "squeeze") {
      this.app.table.renderHands(); // the card becomes a squeezed one (drawn once)
      el = cardOf(key);
    } else {
      bend(el, percent);
    }
    this.send(hand, index, percent);
  }

  /** A bend to the table: forward only, one per SEND_MS (a bend made meanwhile goes
   * when the time comes, the latest), while the actions allow it. */
  send(hand, index, percent) {
    const app = this.app;
    const key = `${hand}:${index}`;
    const p = Math.floor(percent);
    const last = this.sent[key] ?? { percent: 0, at: -Infinity, timer: 0 };
    const now = performance.now();
    if (p <= last.percent || p >= 100) return;
    if (now - last.at < SEND_MS) {
      if (!last.timer) {
        last.timer = setTimeout(() => {
          last.timer = 0;
          if (this.sent[key] === last && this.local[key] != null) this.send(hand, index, this.local[key]);
        }, SEND_MS - (now - last.at));
      }
      return;
    }
    const allowed = app.state?.actions.progress;
    if (!allowed || allowed.hand !== hand || !(allowed.cards ?? []).includes(index)) return;
    this.sent[key] = { percent: p, at: now, timer: 0 };
    app.cmd("progress", { hand, card: index, percent: p });
  }

  // -- opening a card ----------------------------------------------------------------

  /** CARD n: open the card from where it is to the end at the speed of Options, then turn it. */
  async squeezeCard(hand, index) {
    const app = this.app;
    const key = `${hand}:${index}`;
    if (this.animating.has(key)) return;
    if (this.drag?.key === key) this.drag = null;
    this.animating.add(key);
    const seconds = SQUEEZE_SECONDS[app.opts.speed] ?? SQUEEZE_SECONDS[4];
    const from = this.local[key] ?? 0;
    const start = performance.now();
    try {
      this.renderBarNow();
      await new Promise((resolve) => {
        const frame = (now) => {
          if (!app.state?.coup || !this.animating.has(key) || !this.mayBend(hand, index)) return resolve();
          const pct = Math.min(100, from + ((now - start) / 1000 / seconds) * 100);
          this.setLocal(hand, index, pct);
          if (pct >= 100) resolve();
          else requestAnimationFrame(frame);
        };
        requestAnimationFrame(frame);
      });
      if (this.mayBend(hand, index)) await app.cmd("turn", { hand, card: index });
    } finally {
      this.animating.delete(key);
      this.renderBarNow();
    }
  }

  /** The table drawn again (the CARD buttons follow the card opening), the focus kept. */
  renderBarNow() {
    if (this.app.state) this.app.table.render();
  }

  // -- dragging a card open ----------------------------------------------------------

  dragStart(ev) {
    const el = ev.target.closest?.(".card[data-drag='1']");
    if (!el || (ev.pointerType === "mouse" && ev.button !== 0)) return;
    const hand = el.dataset.hand;
    const index = Number(el.dataset.index);
    const key = `${hand}:${index}`;
    if (!this.mayBend(hand, index) || this.animating.has(key)) return;
    ev.preventDefault();
    const box = el.getBoundingClientRect();
    const turned = /90deg/.test(getComputedStyle(el).rotate ?? ""); // a third card lies sideways
    const size = turned ? box.width : box.height; // the card's height on screen: 100 units
    const { n, reach } = PEELS[this.app.state?.coup?.style] ?? PEELS.peek;
    const along = turned ? [-n[1], n[0]] : n; // the fold's way across the screen
    this.drag = { key, hand, index, x: ev.clientX, y: ev.clientY, from: this.local[key] ?? 0, unit: 100 / size, along, reach, pointer: ev.pointerId };
    this.setLocal(hand, index, this.drag.from);
    cardOf(key)?.setPointerCapture?.(ev.pointerId);
  }

  dragMove(ev) {
    const d = this.drag;
    if (!d || ev.pointerId !== d.pointer) return;
    if (!this.mayBend(d.hand, d.index)) {
      this.drag = null;
      return;
    }
    // The lifted corner follows the pointer: it moves 1 + CURL times as far as the fold.
    const moved = ((ev.clientX - d.x) * d.along[0] + (ev.clientY - d.y) * d.along[1]) * d.unit;
    const pct = Math.min(100, d.from + ((moved / (1 + CURL)) / d.reach) * 100);
    if (pct > (this.local[d.key] ?? 0)) this.setLocal(d.hand, d.index, pct); // forward only, as the table shows
  }

  dragEnd(ev, cancelled = false) {
    const d = this.drag;
    if (!d || ev.pointerId !== d.pointer) return;
    this.drag = null;
    if (!cancelled && (this.local[d.key] ?? 0) >= LET_GO_TURNS) this.squeezeCard(d.hand, d.index);
  }
}

/** The card element of "hand:index" on the felt. */
function cardOf(key) {
  const [hand, index] = key.split(":");
  return document.querySelector(`#cards-${hand} .card[data-index='${index}']`);
}
