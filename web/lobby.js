/**
 * lobby.js — the lobby of the web table (app.js), as players know it from live tables:
 * every table as a tile with its live big road in miniature and its last results, its
 * free seats and watchers, its limits and its variant (commission, side bets), grouped
 * by tier of limits as the terminal client's lobby (client_cli/tui/lobby.py) lists them.
 * A filter by limits (or the favourites only), and favourite tables marked with a star,
 * both remembered in the browser; a table added to "my tables" (its ＋: up to four, played
 * side by side, grid.js). Each line says whether spectators may bet without a seat there
 * (`bettors_max`, and how many `bettors` do: GAME_RULES §5). Drawn from the server's `tables` reply (each lobby
 * line's `road`: docs/protocol.md §6), asked again every few seconds, so a coup played
 * at any table shows here soon after; a click joins the table.
 *
 * It decides nothing: the road is the server's (its columns and rows, from the engine's
 * roads), the free seats its `seats - seated`, the variant its `commission` and `areas`.
 */

import { formatNumber, t } from "./i18n.js";
import { AREA_NAMES, HAND_NAMES, PHASE_NAMES, formatMoney } from "./state.js";
import { $, fill, h, show, store } from "./dom.js";
import { roadLetter } from "./roads.js";

const REFRESH_MS = 3000; // the lobby asks for the tables this often while it is shown
const ROAD_ROWS = 6;
const ROAD_COLUMNS = 16; // as many as a lobby line carries (server/table/views.py)
const FAVOURITES = "chemmy.favourites"; // localStorage: the ids of the favourite tables
const FILTER = "chemmy.lobby.filter"; // localStorage: "all", "favourites" or a tier's key
const SIDE_BETS = ["player_pair", "banker_pair", "super6", "dragon_player", "dragon_banker"];

export class LobbyView {
  constructor(app) {
    this.app = app;
    this.timer = null;
    this.favourites = new Set(readFavourites());
    this.filter = store.get("local", FILTER) ?? "all";
    this.bound = false;
  }

  /** The list stops being drawn again (a table was chosen). */
  stop() {
    clearInterval(this.timer);
  }

  bind() {
    if (this.bound) return;
    this.bound = true;
    $("#lobby-filter").addEventListener("change", (ev) => {
      this.filter = ev.target.value;
      store.set("local", FILTER, this.filter);
      this.draw();
    });
  }

  async show() {
    const app = this.app;
    this.bind();
    app.refreshMoney(); // chips that were on a table came back
    show($("#lobby"), true);
    show($("#table"), false);
    show($("#grid"), false); // my tables stay at their tables meanwhile (grid.js)
    document.body.dataset.view = "lobby";
    app.grid.renderMenu();
    $("#plaque").textContent = t("page.choose_table");
    $("#phase").textContent = "";
    await this.refresh();
    clearInterval(this.timer);
    this.timer = setInterval(() => this.refresh(), REFRESH_MS);
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
    this.draw();
  }

  /** The tiles drawn again from the last `tables` reply, the focus kept on the same
   * table (its join button or its star). */
  draw() {
    const app = this.app;
    const focused = document.activeElement?.closest?.("#tables [data-table]");
    const keep = focused ? { table: focused.dataset.table, kind: [...focused.classList].find((c) => ["fav", "my-table"].includes(c)) ?? "table-card" } : null;
    const tiers = new Map();
    for (const tb of app.tables) {
      const key = tierKey(tb);
      if (!tiers.has(key)) tiers.set(key, { label: tierLabel(tb), tables: [] });
      tiers.get(key).tables.push(tb);
    }
    this.drawFilter(tiers);
    const wanted = (key, tb) => this.filter === "all" || this.filter === key || (this.filter === "favourites" && this.favourites.has(tb.table));
    const sections = [];
    for (const [key, tier] of tiers) {
      const shown = tier.tables.filter((tb) => wanted(key, tb));
      if (!shown.length) continue;
      // Favourites first, then as the server lists them.
      shown.sort((a, b) => Number(this.favourites.has(b.table)) - Number(this.favourites.has(a.table)));
      sections.push(
        h(
          "section",
          { class: "tier", dataset: { tier: key } },
          h("h2", {}, key === "custom" ? t("page.lobby.other") : t("page.lobby.limits", { limits: tier.label })),
          h("ul", { class: "tier-tables" }, shown.map((tb) => this.tile(tb))),
        ),
      );
    }
    if (!sections.length) sections.push(h("p", { class: "muted lobby-empty" }, t(this.filter === "favourites" ? "page.lobby.no_favourites" : "page.lobby.none")));
    fill($("#tables"), ...sections);
    if (keep) {
      const sel = `.${keep.kind}[data-table="${CSS.escape(keep.table)}"]`;
      $("#tables").querySelector(sel)?.focus();
    }
  }

  drawFilter(tiers) {
    const select = $("#lobby-filter");
    const options = [
      ["all", t("page.lobby.filter.all")],
      ...[...tiers].map(([key, tier]) => [key, key === "custom" ? t("page.lobby.other") : tier.label]),
      ["favourites", t("page.lobby.filter.favourites")],
    ];
    if (!options.some(([key]) => key === this.filter)) this.filter = "all";
    fill(select, ...options.map(([key, label]) => h("option", { value: key }, label)));
    select.value = this.filter;
  }

  /** One table: the join button (its name, limits, variant, road, results, seats and
   * phase) and its favourite star beside it. */
  tile(tb) {
    const app = this.app;
    const fav = this.favourites.has(tb.table);
    const road = tb.road ?? {};
    const free = Math.max(0, (tb.seats ?? 0) - (tb.seated ?? 0));
    const sides = (tb.areas ?? []).filter((a) => SIDE_BETS.includes(a)).map((a) => AREA_NAMES[a] ?? a);
    const variant = [tb.commission ? t("page.lobby.commission") : t("page.lobby.no_commission"), ...sides].join(" · ");
    return h(
      "li",
      { class: `table-tile${fav ? " favourite" : ""}`, dataset: { tile: tb.table } },
      h(
        "button",
        { type: "button", class: "table-card", dataset: { table: tb.table }, onclick: () => app.openTable(tb.table) },
        h("span", { class: "table-name" }, tb.name),
        h("span", { class: "table-limits" }, tierText(tb)),
        h("span", { class: "table-tie" }, t("page.tie_max", { amount: formatMoney(tb.limits?.tie_max) })),
        h("span", { class: "table-variant" }, variant),
        miniRoad(road),
        lastResults(road.last ?? []),
        h("span", { class: "sr-only" }, roadWords(road)),
        h(
          "span",
          { class: "table-seats" },
          h("span", { class: "table-free", dataset: { free } }, t("page.lobby.free", { count: free })),
          " · ",
          h("span", { class: "table-watching" }, t("page.lobby.watching", { count: tb.spectators ?? 0 })),
          " · ",
          // Bettors without a seat (§5): how many are in, or a seated-only table.
          tb.bettors_max === 0
            ? h("span", { class: "table-bettors", dataset: { bettors: "none" } }, t("page.lobby.seated_only"))
            : h("span", { class: "table-bettors", dataset: { bettors: tb.bettors ?? 0 } }, t("page.lobby.bettors", { count: tb.bettors ?? 0 })),
        ),
        h("span", { class: "table-phase" }, t("page.lobby.phase", { phase: PHASE_NAMES[tb.phase] ?? tb.phase, shoe: tb.shoe_no, coup: tb.coup_no })),
      ),
      h(
        "button",
        {
          type: "button",
          class: "fav",
          dataset: { table: tb.table },
          "aria-pressed": String(fav),
          "aria-label": t(fav ? "page.lobby.favourite.remove" : "page.lobby.favourite.add", { name: tb.name }),
          title: t(fav ? "page.lobby.favourite.remove" : "page.lobby.favourite.add", { name: tb.name }),
          onclick: () => this.toggleFavourite(tb.table),
        },
        fav ? "★" : "☆",
      ),
      this.mineButton(tb),
    );
  }

  /** ＋ / ✓: the table in "my tables" (grid.js), or not. */
  mineButton(tb) {
    const grid = this.app.grid;
    const mine = grid.has(tb.table);
    const words = t(mine ? "page.lobby.mine.remove" : "page.lobby.mine.add", { name: tb.name });
    return h(
      "button",
      {
        type: "button",
        class: "my-table",
        dataset: { table: tb.table },
        "aria-pressed": String(mine),
        "aria-label": words,
        title: words,
        onclick: () => {
          grid.toggle(tb.table, tb.name);
          this.draw();
        },
      },
      mine ? "✓" : "＋",
    );
  }

  toggleFavourite(table) {
    if (this.favourites.has(table)) this.favourites.delete(table);
    else this.favourites.add(table);
    store.set("local", FAVOURITES, JSON.stringify([...this.favourites]));
    this.draw();
  }
}

function readFavourites() {
  try {
    const ids = JSON.parse(store.get("local", FAVOURITES) ?? "[]");
    return Array.isArray(ids) ? ids.filter((id) => typeof id === "string") : [];
  } catch {
    return [];
  }
}

/** The tier a table is listed under: its limits' (the server's `tier`), else "custom". */
function tierKey(tb) {
  return tb.tier ?? "custom";
}

function tierLabel(tb) {
  return tierText(tb);
}

function tierText(tb) {
  const lim = tb.limits ?? {};
  return `${formatMoney(lim.min)}–${formatMoney(lim.max)}`;
}

/** The big road's latest columns, drawn small (the lobby line's `road.big_road`). */
function miniRoad(road) {
  const cells = road.big_road ?? [];
  const grid = h("span", { class: "mini-road", "aria-hidden": "true", vars: { "--cols": ROAD_COLUMNS, "--rows": ROAD_ROWS } });
  for (const c of cells) {
    const cell = h("span", { class: `ring ${c.outcome}`, dataset: { col: c.col, row: c.row } }, c.ties ? String(c.ties) : "");
    cell.style.setProperty("grid-column", String(c.col + 1));
    cell.style.setProperty("grid-row", String(c.row + 1));
    grid.append(cell);
  }
  return grid;
}

/** The last results, oldest first: the winner's letter and total ("B7"). */
function lastResults(last) {
  return h(
    "span",
    { class: "last-results", "aria-hidden": "true" },
    last.map((r) => h("span", { class: `result-chip ${r.outcome}` }, `${roadLetter(r.outcome)}${r.total ?? ""}`)),
  );
}

/** The road in words, for a screen reader: the shoe's counts and its last results. */
function roadWords(road) {
  if (!road.coups) return t("page.lobby.road_none");
  const name = (o) => (o === "tie" ? AREA_NAMES.tie : HAND_NAMES[o] ?? o);
  const last = (road.last ?? []).map((r) => `${name(r.outcome)} ${r.total ?? ""}`.trim()).join(", ");
  return t("page.lobby.road_words", {
    count: road.coups,
    banker: formatNumber(road.banker ?? 0),
    player: formatNumber(road.player ?? 0),
    tie: formatNumber(road.tie ?? 0),
    last,
  });
}
