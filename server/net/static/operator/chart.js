/**
 * chart.js — the back office's chart of the house result over time: one point per UTC
 * day (and per currency: amounts of two currencies are never added), drawn as inline
 * SVG built element by element (no library, no HTML as text: the CSP's Trusted Types).
 */

import { t } from "/i18n.js";

const SVG = "http://www.w3.org/2000/svg";
const W = 640;
const H = 220;
const PAD = { left: 90, right: 20, top: 16, bottom: 36 };

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

/** The SVG of `series` (houseSeries'): every day on one axis, one line and one point
 * (`circle.point`, with `data-day` and `data-amount`) per day of each currency.
 * `money(amount, currency)` writes an amount. */
export function chartSvg(series, money) {
  const days = [...new Set(series.flatMap((s) => s.points.map((p) => p.day)))].sort();
  const amounts = series.flatMap((s) => s.points.map((p) => p.amount));
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, class: "house-chart", role: "img", "aria-label": t("bo.totals.chart_label", { days: days.length }) });
  if (!days.length) {
    svg.append(el("text", { x: W / 2, y: H / 2, "text-anchor": "middle", class: "axis-label" }, t("bo.totals.no_rounds")));
    return svg;
  }
  const top = Math.max(0, ...amounts);
  const bottom = Math.min(0, ...amounts);
  const span = top - bottom || 1;
  const x = (day) => {
    const i = days.indexOf(day);
    const inner = W - PAD.left - PAD.right;
    return days.length === 1 ? PAD.left + inner / 2 : PAD.left + (inner * i) / (days.length - 1);
  };
  const y = (amount) => PAD.top + ((top - amount) * (H - PAD.top - PAD.bottom)) / span;
  svg.append(el("line", { x1: PAD.left, x2: W - PAD.right, y1: y(0), y2: y(0), class: "zero" }));
  svg.append(el("line", { x1: PAD.left, x2: PAD.left, y1: PAD.top, y2: H - PAD.bottom, class: "axis" }));
  const currency = series.length === 1 ? series[0].currency : null;
  svg.append(el("text", { x: PAD.left - 6, y: y(top) + 4, "text-anchor": "end", class: "axis-label" }, money(top, currency)));
  if (bottom !== top) svg.append(el("text", { x: PAD.left - 6, y: y(bottom) + 4, "text-anchor": "end", class: "axis-label" }, money(bottom, currency)));
  for (const day of days.length > 1 ? [days[0], days.at(-1)] : days) {
    svg.append(el("text", { x: x(day), y: H - 12, "text-anchor": "middle", class: "axis-label" }, day));
  }
  series.forEach((s, n) => {
    const g = el("g", { class: `series series-${n % 4}`, "data-currency": s.currency ?? "" });
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
