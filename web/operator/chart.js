/**
 * chart.js — the back office's chart of the house result over time: one point per UTC
 * day, one series per currency (amounts of two currencies are never added, nor drawn on
 * one axis: each has its panel, its axis in its units, and a line in the legend), drawn
 * as inline SVG built element by element (no library, no HTML as text: the CSP's
 * Trusted Types).
 */

import { t } from "/i18n.js";

const SVG = "http://www.w3.org/2000/svg";
const W = 640;
const PANEL_H = 200; // one currency's panel
const LEGEND_H = 30;
const PAD = { left: 90, right: 20, top: 24, bottom: 36 };

function el(tag, attrs = {}, text = null) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text != null) node.textContent = String(text);
  return node;
}

/** The chart's series from `/operator/v1/totals` lines (per day): for each currency
 * (null: play money), its days in order with the house result summed over the tables. */
export function houseSeries(lines) {
  const series = new Map();
  for (const line of lines ?? []) {
    if (!line.day) continue;
    const key = line.currency ?? "";
    if (!series.has(key)) series.set(key, new Map());
    const days = series.get(key);
    days.set(line.day, (days.get(line.day) ?? 0) + line.house_result);
  }
  return [...series.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([currency, days]) => ({
      currency: currency || null,
      points: [...days.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([day, amount]) => ({ day, amount })),
    }));
}

/** The SVG of `series` (houseSeries'): one panel per currency, each on an axis of its
 * own written in its units (amounts of two currencies are never on one scale: a euro
 * and a unit of play money are not the same size), under a legend naming each series
 * with its unit; in each panel one line and one point (`circle.point`, with `data-day`
 * and `data-amount`) per day. `money(amount, currency)` writes an amount; `unit(currency)`
 * names a currency ("EUR", "play money"). */
export function chartSvg(series, money, unit = (currency) => currency ?? t("bo.play_money")) {
  const days = [...new Set(series.flatMap((s) => s.points.map((p) => p.day)))].sort();
  const height = LEGEND_H + Math.max(1, series.length) * PANEL_H;
  const svg = el("svg", { viewBox: `0 0 ${W} ${height}`, class: "house-chart", role: "img", "aria-label": t("bo.totals.chart_label", { count: days.length }) });
  if (!days.length) {
    svg.setAttribute("viewBox", `0 0 ${W} ${PANEL_H}`);
    svg.append(el("text", { x: W / 2, y: PANEL_H / 2, "text-anchor": "middle", class: "axis-label" }, t("bo.totals.no_rounds")));
    return svg;
  }
  const legend = el("g", { class: "legend" });
  let x0 = PAD.left;
  series.forEach((s, n) => {
    const entry = el("g", { class: `legend-entry series-${n % 4}`, "data-currency": s.currency ?? "" });
    entry.append(el("rect", { x: x0, y: 8, width: 14, height: 14, rx: 3, class: "swatch" }));
    const words = t("bo.totals.series", { unit: unit(s.currency) });
    entry.append(el("text", { x: x0 + 20, y: 20, class: "legend-label" }, words));
    legend.append(entry);
    x0 += 40 + words.length * 7;
  });
  svg.append(legend);
  const x = (day) => {
    const i = days.indexOf(day);
    const inner = W - PAD.left - PAD.right;
    return days.length === 1 ? PAD.left + inner / 2 : PAD.left + (inner * i) / (days.length - 1);
  };
  series.forEach((s, n) => {
    const y0 = LEGEND_H + n * PANEL_H;
    const amounts = s.points.map((p) => p.amount);
    const top = Math.max(0, ...amounts);
    const bottom = Math.min(0, ...amounts);
    const span = top - bottom || 1;
    const y = (amount) => y0 + PAD.top + ((top - amount) * (PANEL_H - PAD.top - PAD.bottom)) / span;
    const g = el("g", { class: `series series-${n % 4}`, "data-currency": s.currency ?? "", "data-unit": unit(s.currency) });
    g.append(el("text", { x: PAD.left, y: y0 + 12, class: "axis-title" }, t("bo.totals.axis", { unit: unit(s.currency) })));
    g.append(el("line", { x1: PAD.left, x2: W - PAD.right, y1: y(0), y2: y(0), class: "zero" }));
    g.append(el("line", { x1: PAD.left, x2: PAD.left, y1: y0 + PAD.top, y2: y0 + PANEL_H - PAD.bottom, class: "axis" }));
    g.append(el("text", { x: PAD.left - 6, y: y(top) + 4, "text-anchor": "end", class: "axis-label" }, money(top, s.currency)));
    if (bottom !== top) g.append(el("text", { x: PAD.left - 6, y: y(bottom) + 4, "text-anchor": "end", class: "axis-label" }, money(bottom, s.currency)));
    for (const day of days.length > 1 ? [days[0], days.at(-1)] : days) {
      g.append(el("text", { x: x(day), y: y0 + PANEL_H - 12, "text-anchor": "middle", class: "axis-label" }, day));
    }
    if (s.points.length > 1) {
      g.append(el("polyline", { points: s.points.map((p) => `${x(p.day)},${y(p.amount)}`).join(" "), class: "line" }));
    }
    for (const p of s.points) {
      const dot = el("circle", { cx: x(p.day), cy: y(p.amount), r: 4, class: "point", "data-day": p.day, "data-amount": p.amount });
      dot.append(el("title", {}, t("bo.totals.point", { day: p.day, amount: money(p.amount, s.currency) })));
      g.append(dot);
    }
    svg.append(g);
  });
  return svg;
}
