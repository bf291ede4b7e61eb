/**
 * squeeze.js — the squeeze of the web table (app.js): the squeeze bar (TOSS, PEEK, SIDE,
 * QUICK, CARD 1/2 or 3), drawn from the server's `toss`, `squeeze` and `turn` actions,
 * and a card opening under the turner's hand at the speed of Options, its progress sent
 * to the table at 25, 50 and 75 percent, then TURN. The page's own squeeze is drawn
 * from `local` (hand:index -> percent) until the server's card event replaces it.
 */

import { t } from "./i18n.js";
import { $, enable, show } from "./dom.js";

/** Seconds one card takes to open in a squeeze, by game speed 1..5 (Options). */
export const SQUEEZE_SECONDS = { 1: 2.6, 2: 1.8, 3: 1.2, 4: 0.8, 5: 0.35 };
const PROGRESS_STEPS = [25, 50, 75]; // percents sent to the table while a card opens

export class Squeeze {
  constructor(app) {
    this.app = app;
    this.local = {}; // "hand:index" -> percent of my own squeeze animation
    this.animating = new Set();
  }

  /** Forget my own squeezes' progress (a new coup, a snapshot). */
  reset() {
    this.local = {};
  }

  /** TOSS, the three styles and the card buttons. */
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
      el.dataset.card = String(index);
      el.textContent = t("btn.card", { n: index });
      enable(el, cards.includes(index) && !this.animating.has(`${a.turn?.hand}:${index}`));
    });
  }

  async squeezeCard(hand, index) {
    const app = this.app;
    const key = `${hand}:${index}`;
    if (this.animating.has(key)) return;
    this.animating.add(key);
    const seconds = SQUEEZE_SECONDS[app.opts.speed] ?? SQUEEZE_SECONDS[4];
    const start = performance.now();
    const steps = [...PROGRESS_STEPS];
    try {
      await new Promise((resolve) => {
        const frame = (now) => {
          const pct = Math.min(100, Math.round(((now - start) / 1000 / seconds) * 100));
          if (!app.state?.coup || !this.animating.has(key)) return resolve();
          this.local[key] = pct;
          while (steps.length && pct >= steps[0]) {
            const p = steps.shift();
            const allowed = app.state.actions.progress;
            if (allowed && allowed.hand === hand && (allowed.cards ?? []).includes(index)) {
              app.cmd("progress", { hand, card: index, percent: p });
            }
          }
          app.table.renderHands();
          if (pct >= 100) resolve();
          else requestAnimationFrame(frame);
        };
        requestAnimationFrame(frame);
      });
      if (app.state?.actions.turn?.cards?.includes(index)) await app.cmd("turn", { hand, card: index });
    } finally {
      this.animating.delete(key);
    }
  }
}
