/**
 * roads.js — the roads and odds panel of the web table (app.js), as the terminal
 * client's roads screen (client_cli/tui/screens.py): the bead plate, the big road and
 * its three derived roads, what each would show after a Banker or a Player win, and
 * the exact odds of the next coup, all as the server's `roads` reply has them (the page
 * computes none). Fetched after each settled coup, a new shoe and its burn.
 */

import { formatNumber, t } from "./i18n.js";
import { AREA_NAMES, HAND_NAMES } from "./state.js";
import { $, fill, h } from "./dom.js";

export class RoadsView {
  constructor(app) {
    this.app = app;
  }

  async fetch() {
    const app = this.app;
    const table = app.tableId;
    const state = app.state;
    if (!table || app.connState !== "open") return;
    try {
      const reply = await app.client.send("roads", { table });
      if (app.state === state) {
        state.setRoads(reply.roads, reply.odds);
        this.render();
      }
    } catch {
      // the roads come again after the next coup
    }
  }

  render() {
    const app = this.app;
    const s = app.state;
    if (!s) return;
    const roads = s.roads ?? {};
    const st = roads.stats ?? {};
    $("#road-stats").textContent = st.coups != null
      ? t("page.roads.stats", { coups: st.coups, banker: st.banker, player: st.player, tie: st.tie, player_pair: st.player_pair, banker_pair: st.banker_pair, natural: st.natural })
      : t("page.roads.none");
    fill($("#road-bead"),
      roadGrid(roads.bead_plate ?? [], roads.rows ?? 6, (c) =>
        h("span", { class: `bead ${c.outcome}${c.player_pair ? " ppair" : ""}${c.banker_pair ? " bpair" : ""}`, title: cellTitle(c) }, roadLetter(c.outcome)),
      ),
    );
    fill($("#road-big"),
      roadGrid((roads.big_road ?? {}).cells ?? [], roads.rows ?? 6, (c) =>
        h("span", { class: `ring ${c.outcome}${c.natural ? " natural" : ""}`, title: cellTitle(c) }, c.ties ? String(c.ties) : ""),
      ),
    );
    for (const [key, id, cls] of [
      ["big_eye_boy", "#road-eye", "ring-sm"],
      ["small_road", "#road-small", "dot"],
      ["cockroach_pig", "#road-pig", "slash"],
    ]) {
      fill($(id), roadGrid((roads[key] ?? {}).cells ?? [], roads.rows ?? 6, (c) => h("span", { class: `${cls} ${c.color}` })));
    }
    const pred = roads.predictions ?? {};
    fill($("#road-ask"),
      ...["banker", "player"].map((side) =>
        h(
          "span",
          { class: `ask ${side}`, title: t("page.roads.ask_title", { hand: HAND_NAMES[side] }) },
          `${t("page.roads.ask", { letter: roadLetter(side) })} `,
          ["big_eye_boy", "small_road", "cockroach_pig"].map((k) => {
            const color = pred[side]?.[k];
            return h("span", { class: `${k === "big_eye_boy" ? "ring-sm" : k === "small_road" ? "dot" : "slash"} ${color ?? "none"}` });
          }),
        ),
      ),
    );
    const odds = s.odds;
    const tbl = $("#odds");
    if (!odds) {
      fill(tbl, h("p", { class: "muted" }, t("page.odds.later")));
      return;
    }
    const pct = (v) => (typeof v === "number" ? formatNumber(v, { style: "percent", minimumFractionDigits: 3, maximumFractionDigits: 3 }) : "–");
    const edge = (v) => (typeof v === "number" ? formatNumber(v, { style: "percent", minimumFractionDigits: 3, maximumFractionDigits: 3 }) : "–");
    // One row per area this table has (its options' areas), then the naturals.
    const chance = { super6: odds.banker_six }; // Super 6 wins on "Banker wins with 6"
    const rows = [
      ...s.areas.map((area) => [AREA_NAMES[area] ?? area, chance[area] ?? odds[area], odds.edges?.[area]]),
      [t("page.odds.natural"), odds.natural, null],
    ];
    const burn = s.shoe?.burn;
    const next =
      burn && Number.isInteger(s.shoe.cards_left)
        ? t("page.odds.next_split", { cards: odds.cards, shoe: s.shoe.cards_left, burned: burn.count })
        : t("page.odds.next", { cards: odds.cards });
    fill(tbl,
      h("p", { class: "muted" }, next),
      h(
        "table",
        { class: "odds-table" },
        h("thead", {}, h("tr", {}, h("th", {}, ""), h("th", {}, t("page.odds.chance")), h("th", {}, t("page.odds.edge")))),
        h("tbody", {}, rows.map(([name, p, e]) => h("tr", {}, h("th", {}, name), h("td", {}, pct(p)), h("td", {}, e == null ? "" : edge(e))))),
      ),
    );
  }
}

/** The letter of an outcome on a road in the page's language (B/P/T; French B/J/É,
 * German B/S/U), as the stats line writes them. */
export function roadLetter(outcome) {
  return t(`road.letter.${outcome}`);
}

/** A road cell in words: "Banker 7", and the ties marked on it. */
function cellTitle(c) {
  const outcome = c.outcome === "tie" ? AREA_NAMES.tie : HAND_NAMES[c.outcome] ?? c.outcome;
  const text = t("page.roads.cell", { outcome, total: c.total ?? "" });
  return c.ties ? t("page.roads.cell_ties", { text, count: c.ties }) : text;
}

/** A road's cells on a grid of `rows` rows, the latest columns in view. */
function roadGrid(cells, rows, draw) {
  const used = Math.max(0, ...cells.map((c) => c.col + 1));
  const grid = h("div", { class: "road-grid", vars: { "--cols": Math.max(12, used + 2), "--rows": rows } });
  grid.dataset.used = String(used);
  for (const c of cells) {
    const cell = draw(c);
    cell.style.setProperty("grid-column", String(c.col + 1));
    cell.style.setProperty("grid-row", String(c.row + 1));
    grid.append(cell);
  }
  queueMicrotask(() => {
    const scroller = grid.parentElement;
    if (!scroller) return;
    fitRoad(scroller);
    roadWatch.observe(scroller);
  });
  return grid;
}

/** Draw a road's grid across its whole box and scroll it by whole columns: the first
 * column in view is never cut, and all of a short shoe stays in view; once the road is
 * wider than its box, the latest column and an empty one after it are in view. */
function fitRoad(scroller) {
  const grid = scroller.firstElementChild;
  if (!grid?.classList.contains("road-grid")) return;
  const cs = getComputedStyle(grid);
  const gap = parseFloat(cs.columnGap) || 0;
  const pitch = (parseFloat(cs.gridTemplateColumns) || 16) + gap;
  const pad = getComputedStyle(scroller);
  const room = scroller.clientWidth - parseFloat(pad.paddingLeft) - parseFloat(pad.paddingRight);
  const fits = Math.max(1, Math.floor((room + gap) / pitch));
  const used = Number(grid.dataset.used);
  grid.style.setProperty("--cols", String(Math.max(fits, used + 2)));
  scroller.scrollLeft = Math.max(0, used + 1 - fits) * pitch;
}

const roadWatch = new ResizeObserver((entries) => entries.forEach((e) => fitRoad(e.target)));
