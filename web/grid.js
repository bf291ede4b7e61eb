/**
 * grid.js — "my tables": one player at up to four tables at once (issue 37 §2), side by
 * side on a laptop or a wide screen, one at a time with a tab for each on a phone
 * (chemmy.css `.grid-view`).
 *
 * Each table is this same page in a frame of its own (`?embed=1&grid=1&table=…`, same
 * origin: it signs in with this tab's token, or as this tab's guest), so every table is
 * the whole web table (app.js, state.js, table.js, squeeze.js) unchanged, each over its
 * own WebSocket. This page keeps its own connection for what is the player's across the
 * tables: the money (one Available, the server's `balance` asked again whenever a table
 * says its money moved; Bet, the sum of the tables' chips), and the reality check, shown
 * here once (the frames show none: the server holds it per player, so one answer covers
 * every table). A frame tells this page its table's phase, whether it waits for the
 * player, and its money (`chemmy:status`); the tabs say them.
 *
 * It decides nothing: a table is left with the page's own `leave` (refused while a wager
 * is in play there, and then kept), and every amount is the server's.
 */

import { t } from "./i18n.js";
import { PHASE_NAMES, formatMoney } from "./state.js";
import { $, fill, h, show, store } from "./dom.js";

export const MAX_TABLES = 4;
const MINE = "chemmy.mine"; // localStorage: [{table, name}] in the order they were added
const LEAVE_MS = 5000; // how long a table's leave may take before the frame goes anyway

export class GridView {
  constructor(app) {
    this.app = app;
    this.tables = readMine(); // [{table, name}]
    this.current = this.tables[0]?.table ?? null;
    this.status = new Map(); // table -> the frame's last chemmy:status
    this.frames = new Map(); // table -> its iframe
    this.moneyTimer = 0;
  }

  has(table) {
    return this.tables.some((x) => x.table === table);
  }

  get shown() {
    return document.body.dataset.view === "grid";
  }

  /** The table in my tables, or out of them (the lobby's ＋ / ✓). */
  toggle(table, name) {
    if (this.has(table)) {
      this.remove(table);
      return;
    }
    if (this.tables.length >= MAX_TABLES) {
      this.app.note(t("page.lobby.mine.full"), "refused");
      return;
    }
    this.tables.push({ table, name: name ?? table });
    this.current ??= table;
    this.save();
  }

  save() {
    store.set("local", MINE, JSON.stringify(this.tables));
    this.renderMenu();
  }

  bind() {
    $("#btn-mine").addEventListener("click", () => this.open());
    window.addEventListener("message", (ev) => this.onFrameMessage(ev));
    this.renderMenu();
  }

  renderMenu() {
    const btn = $("#btn-mine");
    btn.textContent = t("page.menu.mine", { count: this.tables.length });
    btn.setAttribute("aria-pressed", String(this.shown));
  }

  /** My tables on screen: from the lobby, or from a table (left first: its frame is here). */
  async open() {
    const app = this.app;
    if (app.tableId) {
      await app.leaveTable();
      if (app.tableId) return; // the leave was refused (a wager in play): said already
    }
    app.lobby.stop();
    show($("#lobby"), false);
    show($("#table"), false);
    show($("#grid"), true);
    document.body.dataset.view = "grid";
    $("#plaque").textContent = t("page.grid.title");
    $("#phase").textContent = "";
    this.renderMenu();
    this.render();
    app.refreshMoney();
  }

  /** The tabs and the frames, as my tables are now: a frame is made once and kept (its
   * connection and its table with it) while the table is one of mine. */
  render() {
    const cells = $("#grid-frames");
    for (const [table, frame] of this.frames) {
      if (!this.has(table)) {
        frame.closest(".grid-cell")?.remove();
        this.frames.delete(table);
        this.status.delete(table);
      }
    }
    if (this.current && !this.has(this.current)) this.current = this.tables[0]?.table ?? null;
    this.current ??= this.tables[0]?.table ?? null;
    for (const x of this.tables) {
      if (this.frames.has(x.table)) continue;
      const frame = h("iframe", { src: this.frameUrl(x.table), title: t("page.grid.frame", { name: x.name }), dataset: { table: x.table } });
      const cell = h(
        "section",
        { class: "grid-cell", dataset: { table: x.table }, "aria-label": x.name },
        h(
          "div",
          { class: "grid-cell-head" },
          h("span", { class: "grid-cell-name" }, x.name),
          h("span", { class: "grid-cell-status" }),
          h("button", { type: "button", class: "grid-remove", dataset: { table: x.table }, onclick: () => this.remove(x.table) }, "✕"),
        ),
        frame,
      );
      this.frames.set(x.table, frame);
      cells.append(cell);
    }
    cells.style.setProperty("--cols", String(this.tables.length > 1 ? 2 : 1));
    cells.dataset.count = String(this.tables.length);
    show($("#grid-empty"), !this.tables.length);
    this.renderTabs();
  }

  frameUrl(table) {
    const q = new URLSearchParams({ embed: "1", grid: "1", table });
    if (this.app.identity?.guest) q.set("guest", "1");
    const url = this.app.params?.get("url"); // (the same server as this page's)
    if (url) q.set("url", url);
    const lang = this.app.params?.get("lang");
    if (lang) q.set("lang", lang);
    return `./?${q}`;
  }

  /** A tab for each table (its phase, your turn, your chips there): the one shown on a
   * phone; on a wider screen, the one brought into view. */
  renderTabs() {
    const tabs = $("#grid-tabs");
    const focused = document.activeElement?.closest?.("#grid-tabs [data-table]")?.dataset.table;
    fill(tabs, ...this.tables.map((x) => {
      const st = this.status.get(x.table) ?? {};
      const words = this.statusWords(st);
      return h(
        "button",
        {
          type: "button",
          class: "grid-tab",
          dataset: { table: x.table, turn: st.turn ? "1" : "0" },
          "aria-pressed": String(x.table === this.current),
          onclick: () => this.select(x.table),
        },
        h("span", { class: "grid-tab-name" }, x.name),
        h("span", { class: "grid-tab-status" }, words),
      );
    }));
    if (focused) tabs.querySelector(`[data-table="${CSS.escape(focused)}"]`)?.focus();
    for (const x of this.tables) {
      const cell = $("#grid-frames").querySelector(`.grid-cell[data-table="${CSS.escape(x.table)}"]`);
      if (!cell) continue;
      if (x.table === this.current) cell.dataset.current = "1";
      else delete cell.dataset.current;
      const st = this.status.get(x.table) ?? {};
      cell.dataset.turn = st.turn ? "1" : "0";
      cell.querySelector(".grid-cell-status").textContent = this.statusWords(st);
      const remove = cell.querySelector(".grid-remove");
      const words = t("page.grid.remove", { name: x.name });
      remove.setAttribute("aria-label", words);
      remove.title = words;
    }
  }

  statusWords(st) {
    const parts = [PHASE_NAMES[st.phase] ?? st.phase ?? "…"];
    if (st.turn) parts.push(t("page.grid.your_turn"));
    if (st.stake) parts.push(t("page.grid.your_bet", { amount: formatMoney(st.stake) }));
    return parts.join(" · ");
  }

  select(table) {
    this.current = table;
    this.renderTabs();
    const cell = $("#grid-frames").querySelector(`.grid-cell[data-table="${CSS.escape(table)}"]`);
    cell?.scrollIntoView({ block: "nearest", inline: "nearest" });
  }

  /** A table out of my tables: left at the server first (its frame's own `leave`, refused
   * while a wager of yours is in play there: then it stays), then its frame goes. */
  async remove(table) {
    const frame = this.frames.get(table);
    const page = frame?.contentWindow?.chemmyPage;
    const name = this.tables.find((x) => x.table === table)?.name ?? table;
    if (page?.tableId === table) {
      const left = await Promise.race([
        page.leaveTable().then(() => page.tableId !== table),
        new Promise((resolve) => setTimeout(() => resolve(true), LEAVE_MS)),
      ]);
      if (!left) {
        this.app.note(t("page.grid.cannot_remove", { name }), "refused");
        return;
      }
    }
    this.tables = this.tables.filter((x) => x.table !== table);
    this.save();
    if (this.shown) {
      this.render();
      this.app.refreshMoney(); // chips that were on that table came back
      $("#grid-tabs .grid-tab")?.focus();
    }
  }

  /** A frame's `chemmy:status`: its table's phase, turn and money. The money shown here
   * is the server's, asked again whenever a table's moved (one Available for all). */
  onFrameMessage(ev) {
    if (ev.origin !== location.origin) return;
    const m = ev.data;
    const frame = [...this.frames.values()].find((f) => f.contentWindow === ev.source);
    if (!m || !frame) return;
    if (m.type === "chemmy:ready") {
      // A frame with no token in this tab's storage (this page got its own from its host
      // page, docs/embedding.md §3): it is handed the one this page signed in with.
      const auth = this.app.client?.auth ?? {};
      const connect = auth.token ? { token: auth.token } : { guest: true, name: this.app.identity?.name };
      frame.contentWindow.postMessage({ type: "chemmy:connect", ...connect, table: frame.dataset.table }, location.origin);
      return;
    }
    if (m.type !== "chemmy:status" || m.table !== frame.dataset.table) return;
    const before = this.status.get(m.table);
    this.status.set(m.table, m);
    if (!before || before.balance !== m.balance || before.stake !== m.stake) this.moneyMoved();
    if (!before || before.phase !== m.phase || before.turn !== m.turn || before.stake !== m.stake) this.renderTabs();
  }

  moneyMoved() {
    clearTimeout(this.moneyTimer);
    this.moneyTimer = setTimeout(() => this.app.refreshMoney(), 100);
  }

  /** Your chips on all my tables together (for the bottom bar's Bet). */
  stake() {
    let sum = 0;
    for (const x of this.tables) sum += this.status.get(x.table)?.stake ?? 0;
    return sum;
  }
}

function readMine() {
  try {
    const list = JSON.parse(store.get("local", MINE) ?? "[]");
    return Array.isArray(list)
      ? list.filter((x) => x && typeof x.table === "string").slice(0, MAX_TABLES).map((x) => ({ table: x.table, name: String(x.name ?? x.table) }))
      : [];
  } catch {
    return [];
  }
}
