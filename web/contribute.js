/**
 * contribute.js — this page's own randomness in every shoe it sits at (docs/fairness.md §9).
 *
 * The server lists `contribute` in a seated player's actions with `step: "commit"` from
 * `shoe_started` until the cut, and `step: "reveal"` after it once committed. The page
 * answers by itself: 32 bytes from the browser's secure generator
 * (`crypto.getRandomValues`), their SHA-256 (`crypto.subtle`) sent as the commitment,
 * the bytes kept in sessionStorage (so a reload before the reveal still reveals them),
 * then sent at the reveal and forgotten with the shoe. It needs a secure context
 * (https, or localhost) for `crypto.subtle`; without one it contributes nothing.
 *
 * What it must never do: choose the value, or send anything the actions do not ask for.
 */

import { store } from "./dom.js";

const PREFIX = "chemmy.contribution.";

export function hex(bytes) {
  return Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");
}

export async function sha256Hex(bytes) {
  return hex(await crypto.subtle.digest("SHA-256", bytes));
}

export class Contributor {
  constructor() {
    this.sent = new Set(); // "table:shoe:step" sent (each at most once)
  }

  /** The `contribute` fields to send now for `table` (its TableState), or null. */
  async next(table, state) {
    const step = state?.actions?.contribute?.step;
    const no = state?.shoe?.no;
    if (!Number.isInteger(no) || (step !== "commit" && step !== "reveal") || !globalThis.crypto?.subtle) return null;
    const key = `${table}:${no}:${step}`;
    if (this.sent.has(key)) return null;
    this.sent.add(key); // before any await: one event after another never sends twice
    const name = `${PREFIX}${table}.${no}`;
    if (step === "commit") {
      const value = crypto.getRandomValues(new Uint8Array(32));
      store.set("session", name, hex(value));
      for (let old = no - 2; old > no - 6 && old > 0; old -= 1) store.remove("session", `${PREFIX}${table}.${old}`);
      return { commitment: await sha256Hex(value) };
    }
    const value = store.get("session", name);
    return value ? { value } : null;
  }

  /** This page's value for a shoe (hex), while it keeps it. */
  value(table, no) {
    return store.get("session", `${PREFIX}${table}.${no}`);
  }
}
