/**
 * dialogs.js — the web table's dialogs (app.js), as the terminal client's popups and
 * screens (client_cli/tui/popups.py, screens.py): the cashier (a deposit, with one id
 * until it succeeds), the history of your coups, the rules (Help: the terminal client's
 * own rules.md) and Options (speed, balloons, sound, voices, name, language: kept in the
 * browser's storage). The cashier holds the "Responsible play" panel: a break or a
 * self-exclusion (take_break, confirmed first) and what is in force (responsible).
 */

import { language, refusalText, t } from "./i18n.js";
import { AREA_NAMES, formatMoney, parseMoney, resultText } from "./state.js";
import { $, fill, h, store } from "./dom.js";
import { cardsLine } from "./cards.js";

const OPTION_DEFAULTS = { speed: 4, balloons: true, sound: true, voices: true, name: "", language: "auto" };

export function loadOptions() {
  try {
    const saved = JSON.parse(store.get("local", "chemmy.options") ?? "{}");
    const o = { ...OPTION_DEFAULTS, ...saved };
    o.speed = Math.min(5, Math.max(1, Math.round(Number(o.speed) || 4)));
    return o;
  } catch {
    return { ...OPTION_DEFAULTS };
  }
}

function saveOptions(o) {
  store.set("local", "chemmy.options", JSON.stringify(o));
}

/** The rules text (a small Markdown: headings, lists, tables, bold, code) as DOM. */
export function markdown(text) {
  const out = document.createDocumentFragment();
  const inline = (s) => {
    const parts = [];
    const re = /(\*\*[^*]+\*\*|`[^`]+`)/g;
    let last = 0;
    for (const m of s.matchAll(re)) {
      if (m.index > last) parts.push(s.slice(last, m.index));
      const t = m[0];
      parts.push(t.startsWith("**") ? h("strong", {}, t.slice(2, -2)) : h("code", {}, t.slice(1, -1)));
      last = m.index + t.length;
    }
    if (last < s.length) parts.push(s.slice(last));
    return parts;
  };
  const lines = text.split("\n");
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (/^#{1,6} /.test(line)) {
      const level = line.indexOf(" ");
      out.append(h(`h${Math.min(6, level)}`, {}, inline(line.slice(level + 1))));
      i += 1;
    } else if (/^\s*\|/.test(line)) {
      const rows = [];
      while (i < lines.length && /^\s*\|/.test(lines[i])) rows.push(lines[i++].trim());
      const cells = (r) => r.replace(/^\||\|$/g, "").split("|").map((c) => c.trim());
      const body = rows.filter((r) => !/^\|[\s|:-]+\|$/.test(r));
      const [head, ...rest] = body;
      out.append(
        h(
          "table",
          {},
          h("thead", {}, h("tr", {}, cells(head).map((c) => h("th", {}, inline(c))))),
          h("tbody", {}, rest.map((r) => h("tr", {}, cells(r).map((c) => h("td", {}, inline(c)))))),
        ),
      );
    } else if (/^\s*- /.test(line)) {
      const items = [];
      while (i < lines.length && (/^\s*- /.test(lines[i]) || (/^\s{2,}\S/.test(lines[i]) && items.length))) {
        if (/^\s*- /.test(lines[i])) items.push(lines[i].replace(/^\s*- /, ""));
        else items[items.length - 1] += ` ${lines[i].trim()}`;
        i += 1;
      }
      out.append(h("ul", {}, items.map((t) => h("li", {}, inline(t)))));
    } else if (line.trim() === "") {
      i += 1;
    } else {
      const para = [];
      while (i < lines.length && lines[i].trim() !== "" && !/^(#|\s*\||\s*- )/.test(lines[i])) para.push(lines[i++].trim());
      out.append(h("p", {}, inline(para.join(" "))));
    }
  }
  return out;
}

export class Dialogs {
  constructor(app) {
    this.app = app;
    this.depositId = null;
    this.cashierSuggested = undefined;
  }

  /** A click on a dialog's backdrop or its close button closes it; the forms. */
  bind() {
    for (const dlg of document.querySelectorAll("dialog")) {
      dlg.addEventListener("click", (ev) => {
        if (ev.target === dlg || ev.target.closest("[data-close]")) dlg.close();
      });
    }
    $("#cashier-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      this.deposit();
    });
    $("#options-form").addEventListener("input", () => this.readOptions());
    $("#options-form").addEventListener("submit", (ev) => ev.preventDefault());
    this.bindResponsible();
  }

  /** The "Responsible play" panel's buttons: a period asks first; yes takes it. */
  bindResponsible() {
    for (const button of document.querySelectorAll("#responsible [data-period]")) {
      button.addEventListener("click", () => this.askBreak(button.dataset.period));
    }
    $("#responsible-yes").addEventListener("click", () => this.takeBreak());
    $("#responsible-no").addEventListener("click", () => {
      this.breakPeriod = null;
      $("#responsible-confirm").hidden = true;
    });
  }

  askBreak(period) {
    this.breakPeriod = period;
    $("#responsible-question").textContent = t("page.responsible.ask", { period: t(`page.responsible.${period}`) });
    $("#responsible-confirm").hidden = false;
    $("#responsible-yes").focus();
  }

  async takeBreak() {
    const period = this.breakPeriod;
    $("#responsible-confirm").hidden = true;
    if (!period) return;
    this.breakPeriod = null;
    try {
      const reply = await this.app.client.send("take_break", { period });
      this.renderResponsible(reply.restriction);
      this.app.note($("#responsible-state").textContent, "you");
      await this.app.refreshMoney(); // the chips placed come back
    } catch (err) {
      $("#responsible-state").textContent = t("page.refused", { text: refusalText(err.code, err.message) });
      $("#responsible-state").dataset.tone = "refused";
    }
  }

  async loadResponsible() {
    try {
      this.renderResponsible((await this.app.client.send("responsible", {})).restriction);
    } catch (err) {
      $("#responsible-state").textContent = refusalText(err.code, err.message);
    }
  }

  /** What is in force, in plain words (null: nothing). */
  renderResponsible(restriction) {
    const state = $("#responsible-state");
    if (!restriction) {
      state.textContent = t("page.responsible.none");
      state.dataset.tone = "";
      return;
    }
    const until = new Date(restriction.until * 1000).toLocaleString(language(), { dateStyle: "medium", timeStyle: "short" });
    state.textContent = t(restriction.kind === "exclusion" ? "page.responsible.excluded" : "page.responsible.on_break", { until });
    state.dataset.tone = "refused";
  }

  openCashier() {
    const app = this.app;
    const dlg = $("#dlg-cashier");
    this.renderCashier();
    $("#cashier-result").textContent = "";
    $("#responsible-confirm").hidden = true;
    this.loadResponsible();
    // The suggested amount as the current language writes money ("100,00" in French,
    // which parseMoney would read as 10,000.00 if it stayed "100.00"); a typed one stays.
    const input = $("#cashier-amount");
    const suggested = formatMoney(10000);
    if (input.value === (this.cashierSuggested ?? input.defaultValue)) input.value = suggested;
    input.placeholder = suggested;
    this.cashierSuggested = suggested;
    dlg.showModal();
    $("#cashier-amount").focus();
    app.refreshMoney();
  }

  renderCashier() {
    const app = this.app;
    const money = app.state ?? app.identity ?? {};
    $("#cashier-available").textContent = formatMoney(money.available ?? money.balance);
    $("#cashier-balance").textContent = formatMoney(money.balance);
  }

  async deposit() {
    const app = this.app;
    const amount = parseMoney($("#cashier-amount").value);
    const result = $("#cashier-result");
    if (!amount) {
      result.textContent = t("page.cashier.enter", { example: formatMoney(1250) });
      result.dataset.tone = "refused";
      return;
    }
    // One id per deposit until it succeeds: a retry after a lost reply is not a second one.
    this.depositId ??= `dep-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
    try {
      const reply = await app.client.send("deposit", { amount }, { id: this.depositId });
      this.depositId = null;
      result.textContent = t("page.cashier.deposited_balance", { amount: formatMoney(amount), balance: formatMoney(reply.balance) });
      result.dataset.tone = "win";
      if (app.state) app.state.balance = reply.balance;
      else if (app.identity) app.identity.balance = reply.balance;
      this.renderCashier();
      await app.refreshMoney(); // and what is available, from the server
      app.note(t("page.cashier.deposited", { amount: formatMoney(amount) }), "you");
    } catch (err) {
      if (err.code !== "disconnected" && err.code !== "timeout") this.depositId = null;
      result.textContent = t("page.refused", { text: refusalText(err.code, err.message) });
      result.dataset.tone = "refused";
    }
  }

  async openHistory() {
    $("#dlg-history").showModal();
    await this.loadHistory();
  }

  async loadHistory() {
    const app = this.app;
    const body = $("#history-body");
    const status = $("#history-status");
    status.textContent = t("page.loading");
    let rounds;
    try {
      rounds = (await app.client.send("history", { limit: 100 })).rounds ?? [];
    } catch (err) {
      status.textContent = t("page.history.unavailable", { error: err.message });
      return;
    }
    const me = app.identity?.player;
    let total = 0;
    fill(body,
      ...rounds.map((r) => {
        const mine = (r.bets ?? []).filter((b) => b.player === me);
        const net = mine.reduce((a, b) => a + b.returned - b.stake, 0);
        total += net;
        const behalf = (r.on_behalf ?? []).filter((o) => o.player === me).map((o) => o.step);
        return h(
          "tr",
          { dataset: { round: r.round_id } },
          h("td", {}, r.round_id, h("br"), h("small", {}, new Date(r.time * 1000).toLocaleTimeString(language()))),
          h("td", {}, resultText(r), behalf.length ? h("small", { class: "behalf" }, t("page.history.behalf", { steps: behalf.join(", ") })) : null),
          h("td", { class: "cards" }, cardsLine(r.player)),
          h("td", { class: "cards" }, cardsLine(r.banker)),
          h("td", {}, mine.map((b) => `${AREA_NAMES[b.area] ?? b.area} ${formatMoney(b.stake)}`).join(", ") || "–"),
          h("td", { class: net > 0 ? "pos" : net < 0 ? "neg" : "" }, formatMoney(net, { sign: true })),
          h("td", {}, formatMoney(r.balance?.after)),
        );
      }),
    );
    status.textContent = t(rounds.length === 1 ? "page.history.status_one" : "page.history.status", { count: rounds.length, net: formatMoney(total, { sign: true }) });
  }

  async openHelp() {
    const dlg = $("#dlg-help");
    dlg.showModal();
    const body = $("#help-body");
    if (body.dataset.loaded) return;
    try {
      const res = await fetch(new URL("rules.md", location.href));
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      fill(body, markdown(await res.text()));
      body.dataset.loaded = "1";
    } catch (err) {
      fill(body, h("p", {}, t("page.help.unavailable", { error: err.message })));
    }
  }

  openOptions() {
    const app = this.app;
    const f = $("#options-form");
    f.elements.speed.value = String(app.opts.speed);
    f.elements.balloons.checked = app.opts.balloons;
    f.elements.sound.checked = app.opts.sound;
    f.elements.voices.checked = app.opts.voices;
    f.elements.name.value = app.opts.name ?? "";
    f.elements.language.value = app.opts.language ?? "auto";
    $("#speed-value").textContent = String(app.opts.speed);
    $("#dlg-options").showModal();
  }

  readOptions() {
    const app = this.app;
    const f = $("#options-form");
    app.opts = {
      speed: Math.min(5, Math.max(1, Number(f.elements.speed.value) || 4)),
      balloons: f.elements.balloons.checked,
      sound: f.elements.sound.checked,
      voices: f.elements.voices.checked,
      name: f.elements.name.value.trim().slice(0, 32),
      language: f.elements.language.value || "auto",
    };
    $("#speed-value").textContent = String(app.opts.speed);
    if (!app.opts.voices && globalThis.speechSynthesis) speechSynthesis.cancel();
    saveOptions(app.opts);
    app.applyOptions();
    app.render();
    app.applyLanguage();
  }
}
