/**
 * lobby.js — the lobby of the web table (app.js), as the terminal client's lobby
 * (client_cli/tui/lobby.py): the tables by tier of limits, as the server's `tables`
 * reply has them, drawn again every 5 seconds; a click joins one.
 */

import { t } from "./i18n.js";
import { PHASE_NAMES, formatMoney } from "./state.js";
import { $, fill, h, show } from "./dom.js";

export class LobbyView {
  constructor(app) {
    this.app = app;
    this.timer = null;
  }

  /** The list stops being drawn again (a table was chosen). */
  stop() {
    clearInterval(this.timer);
  }

  async show() {
    const app = this.app;
    app.refreshMoney(); // chips that were on a table came back
    show($("#lobby"), true);
    show($("#table"), false);
    document.body.dataset.view = "lobby";
    $("#plaque").textContent = t("page.choose_table");
    $("#phase").textContent = "";
    await this.refresh();
    clearInterval(this.timer);
    this.timer = setInterval(() => this.refresh(), 5000);
  }

  async refresh() {
    const app = this.app;
    if (!app.client || app.connState !== "open" || app.tableId) return;
    try {
      const reply = await app.client.send("tables");
      app.tables = reply.tables ?? [];
    } catch (err) {
      app.note(t("page.no_tables", { error: err.message }), "refused");
      return;
    }
    if (app.tableId) return; // a table was chosen meanwhile
    // The table a keyboard is on keeps the focus when the list is drawn anew.
    const focusedTable = document.activeElement?.closest?.("#tables .table-card")?.dataset.table;
    const tiers = new Map();
    for (const tb of app.tables) {
      const key = tb.tier ?? "custom";
      if (!tiers.has(key)) tiers.set(key, []);
      tiers.get(key).push(tb);
    }
    const list = $("#tables");
    fill(list,
      ...[...tiers.entries()].map(([tier, tables]) =>
        h(
          "section",
          { class: "tier" },
          h("h2", {}, tier === "custom" ? t("page.lobby.other") : t("page.lobby.limits", { limits: tierText(tables[0]) })),
          h(
            "div",
            { class: "tier-tables" },
            tables.map((tb) =>
              h(
                "button",
                { class: "table-card", dataset: { table: tb.table }, onclick: () => app.openTable(tb.table) },
                h("span", { class: "table-name" }, tb.name),
                h("span", { class: "table-limits" }, tierText(tb)),
                h("span", { class: "table-tie" }, t("page.tie_max", { amount: formatMoney(tb.limits?.tie_max) })),
                h("span", { class: "table-seats" }, t("page.lobby.seats", { seated: tb.seated, seats: tb.seats, watching: tb.spectators })),
                h("span", { class: "table-phase" }, t("page.lobby.phase", { phase: PHASE_NAMES[tb.phase] ?? tb.phase, shoe: tb.shoe_no, coup: tb.coup_no })),
                h("span", { class: "table-flags" }, tb.commission ? t("page.lobby.commission") : t("page.lobby.no_commission")),
              ),
            ),
          ),
        ),
      ),
    );
    if (focusedTable) list.querySelector(`.table-card[data-table="${CSS.escape(focusedTable)}"]`)?.focus();
  }
}

function tierText(t) {
  const lim = t.limits ?? {};
  return `${formatMoney(lim.min)}–${formatMoney(lim.max)}`;
}
