/**
 * dialogs.js — the web table's dialogs (app.js), as the terminal client's popups and
 * screens (client_cli/tui/popups.py, screens.py): the cashier (a deposit, with one id
 * until it succeeds), the history of your coups, the rules (Help: the terminal client's
 * own rules.md) and Options (speed, balloons, sound, voices, name, language: kept in the
 * browser's storage). The cashier holds the "Responsible play" panel: a break or a
 * self-exclusion (take_break, confirmed first) and what is in force (responsible), and
 * the limits you set on your own play (limits, set_limit, remove_limit: each in force
 * in plain words, a raise or a removal waiting its 24 hours as pending). The reality
 * check (a `reality_check` from the server) is a modal that must be answered:
 * Continue or Leave (reality_ack); after Leave the page stays at the table, watching.
 */

import { language, refusalText, t } from "./i18n.js";
import { AREA_NAMES, formatMoney, parseMoney, resultText } from "./state.js";
import { $, fill, h, store } from "./dom.js";
import { cardsLine } from "./cards.js";

/** The limits a player may set (docs/protocol.md §6 set_limit), as the select lists them. */
export const LIMIT_KINDS = [
  "loss_day",
  "loss_week",
  "loss_month",
  "wager_day",
  "wager_week",
  "wager_month",
  "deposit_day",
  "deposit_week",
  "deposit_month",
  "session",
];

function when(seconds) {
  return new Date(seconds * 1000).toLocaleString(language(), { dateStyle: "medium", timeStyle: "short" });
}

/** A limit's amount as people read it: money in the player's currency, or minutes. */
export function limitAmount(kind, amount) {
  return kind === "session" ? t("page.limits.minutes", { count: amount }) : formatMoney(amount);
}

/** One limit in force, in plain words: "Daily loss limit: 50.00 — 12.00 left", and a
 * raise or a removal waiting: "(rises to 100.00 on 2 Dec 2026, 18:40)". */
export function limitLine(kind, limit) {
  const line = t("page.limits.line", {
    limit: t(`page.limits.kind.${kind}`),
    amount: limitAmount(kind, limit.amount),
    left: limitAmount(kind, limit.remaining),
  });
  const pending = pendingText(kind, limit.pending);
  return pending ? t("page.limits.with_pending", { line, pending }) : line;
}

function pendingText(kind, pending) {
  if (!pending) return "";
  const date = when(pending.from);
  return pending.amount == null ? t("page.limits.removed_on", { date }) : t("page.limits.rises", { amount: limitAmount(kind, pending.amount), date });
}

/** A `limit_reached` refusal in words: the server's own message in English, else the
 * catalog's, with the limit, its amount and what remains (the error's `limit`). */
export function limitRefusal(message, limit) {
  if (language() === "en" && message) return message;
  if (!limit?.kind) return refusalText("limit_reached", message);
  const words = { limit: t(`page.limits.kind.${limit.kind}`).toLowerCase(), amount: limitAmount(limit.kind, limit.amount), left: limitAmount(limit.kind, limit.remaining) };
  return t(limit.kind === "session" ? "page.refused.session_limit" : "page.refused.limit_reached", words);
}

/** Any refusal in words, a limit_reached with its limit. */
export function refusalOf(err) {
  if (err?.code === "limit_reached") return limitRefusal(err.message, err.reply?.limit ?? err.limit);
  return refusalText(err?.code, err?.message);
}

/** A reality check's words: "You have played for 30 minutes. Net result: -12.50." */
export function realityText(m) {
  const seconds = Math.max(0, Math.floor(Number(m.session_seconds) || 0));
  const parts = [seconds < 60 ? t("page.reality.seconds", { count: seconds }) : t("page.reality.minutes", { count: Math.floor(seconds / 60) })];
  if (Number.isInteger(m.net)) parts.push(t("page.reality.net", { net: formatMoney(m.net, { sign: true }) }));
  if (Number.isInteger(m.staked)) parts.push(t("page.reality.staked", { amount: formatMoney(m.staked) }));
  return parts.join(" ");
}

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

/** A break or a self-exclusion in force, in plain words. */
export function restrictionText(restriction) {
  const until = when(restriction.until);
  return t(restriction.kind === "exclusion" ? "page.responsible.excluded" : "page.responsible.on_break", { until });
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
      if ("required" in dlg.dataset) {
        dlg.addEventListener("cancel", (ev) => ev.preventDefault()); // Escape: it waits for an answer
        continue;
      }
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
    this.bindLimits();
    $("#reality-continue").addEventListener("click", () => this.answerReality("continue"));
    $("#reality-leave").addEventListener("click", () => this.answerReality("leave"));
  }

  // -- limits ----------------------------------------------------------------------------
  bindLimits() {
    $("#limit-kind").addEventListener("change", () => this.limitKindChosen());
    $("#limit-set").addEventListener("click", () => this.setLimit());
    $("#limit-remove").addEventListener("click", () => this.removeLimit());
    // Enter in the amount sets the limit (not the cashier's deposit).
    $("#limit-amount").addEventListener("keydown", (ev) => {
      if (ev.keyCode !== 13) return; // Enter
      ev.preventDefault();
      this.setLimit();
    });
  }

  limitKindChosen() {
    const session = $("#limit-kind").value === "session";
    $("#limit-amount-label").textContent = t(session ? "page.limits.amount_minutes" : "page.limits.amount");
    $("#limit-amount").inputMode = session ? "numeric" : "decimal";
    $("#limit-amount").placeholder = session ? "60" : formatMoney(5000);
  }

  async loadLimits() {
    try {
      this.renderLimits(await this.app.client.send("limits", {}));
    } catch (err) {
      this.limitsResult(refusalOf(err), "refused");
    }
  }

  /** The limits in force (a `limits` reply), each in plain words. */
  renderLimits(reply) {
    this.limits = reply;
    const lines = Object.entries(reply?.limits ?? {})
      .sort(([a], [b]) => LIMIT_KINDS.indexOf(a) - LIMIT_KINDS.indexOf(b))
      .map(([kind, limit]) => h("li", { dataset: { kind } }, limitLine(kind, limit)));
    if (!lines.length) lines.push(h("li", { class: "muted" }, t("page.limits.none")));
    const every = reply?.session?.reality_check;
    if (every) lines.push(h("li", { class: "muted" }, t("page.limits.reality_every", { count: every })));
    fill($("#limits-list"), ...lines);
  }

  limitsResult(text, tone = "") {
    const result = $("#limits-result");
    result.textContent = text;
    result.dataset.tone = tone;
  }

  /** The amount typed, in minor units (minutes for the session), or null. */
  limitInput(kind) {
    const text = $("#limit-amount").value.trim();
    if (kind !== "session") return parseMoney(text);
    if (!/^\d{1,4}$/.test(text)) return null;
    const minutes = Number(text);
    return minutes >= 1 && minutes <= 1440 ? minutes : null;
  }

  async setLimit() {
    const kind = $("#limit-kind").value;
    const amount = this.limitInput(kind);
    if (!amount) {
      this.limitsResult(kind === "session" ? t("page.limits.enter_minutes") : t("page.limits.enter_amount", { example: formatMoney(1250) }), "refused");
      return;
    }
    await this.changeLimit("set_limit", { kind, amount });
  }

  async removeLimit() {
    await this.changeLimit("remove_limit", { kind: $("#limit-kind").value });
  }

  async changeLimit(type, fields) {
    const kind = fields.kind;
    let reply;
    try {
      reply = await this.app.client.send(type, fields);
    } catch (err) {
      this.limitsResult(t("page.refused", { text: refusalOf(err) }), "refused");
      return;
    }
    this.renderLimits(reply);
    const limit = reply.limits?.[kind];
    const name = t(`page.limits.kind.${kind}`);
    let text;
    if (!limit) text = t("page.limits.gone", { limit: name });
    else if (limit.pending) text = t("page.limits.waits", { limit: name, pending: pendingText(kind, limit.pending) });
    else text = t("page.limits.now", { limit: name, amount: limitAmount(kind, limit.amount) });
    this.limitsResult(text, "win");
    this.app.note(text, "you");
  }

  // -- the reality check -------------------------------------------------------------------
  /** The server's `reality_check`: a modal until it is answered (bets wait for it). */
  showReality(m) {
    this.reality = m;
    $("#reality-text").textContent = realityText(m);
    $("#reality-result").textContent = "";
    for (const b of document.querySelectorAll("#dlg-reality button")) b.disabled = false;
    const dlg = $("#dlg-reality");
    if (!dlg.open) dlg.showModal();
    $("#reality-continue").focus();
  }

  /** The server's `reality_answered`: another screen of the player's answered the
   * check, so this one closes it (whatever was chosen there holds). */
  realityAnswered(m) {
    const dlg = $("#dlg-reality");
    if (!this.reality && !dlg.open) return;
    this.reality = null;
    dlg.close();
    this.app.note(t("page.reality.answered"), "you");
    if (m.choice === "leave") this.app.refreshMoney();
  }

  async answerReality(choice) {
    const app = this.app;
    const buttons = document.querySelectorAll("#dlg-reality button");
    for (const b of buttons) b.disabled = true;
    let answered = false; // by another screen of yours (the check is the player's)
    try {
      await app.client.send("reality_ack", { choice });
    } catch (err) {
      if (err.code !== "no_reality_check") {
        for (const b of buttons) b.disabled = false;
        $("#reality-result").textContent = t("page.refused", { text: refusalOf(err) });
        $("#reality-result").dataset.tone = "refused";
        return;
      }
      answered = true;
      if (this.reality === null) return; // told already: reality_answered closed it
    }
    this.reality = null;
    $("#dlg-reality").close();
    if (answered) {
      // Nothing was done here: not left, not continued (whatever was chosen there holds).
      app.note(t("page.reality.answered"), "you");
      return;
    }
    // Leave: the chips came back and you stood at every table; the page stays, watching.
    app.note(t(choice === "leave" ? "page.reality.left" : "page.reality.continued"), "you");
    if (choice === "leave") await app.refreshMoney();
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
      this.app.showRestriction(reply.restriction);
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
    state.textContent = restrictionText(restriction);
    state.dataset.tone = "refused";
  }

  openCashier() {
    const app = this.app;
    const dlg = $("#dlg-cashier");
    this.renderCashier();
    $("#cashier-result").textContent = "";
    $("#responsible-confirm").hidden = true;
    this.loadResponsible();
    this.limitsResult("");
    this.limitKindChosen();
    this.loadLimits();
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
      result.textContent = t("page.refused", { text: refusalOf(err) });
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
    const shoes = new Set(); // one "Verify shoe N" per shoe, on its newest round
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
          h("td", { class: "shoe" }, this.verifyButton(r, shoes)),
        );
      }),
    );
    status.textContent = t("page.history.status", { count: rounds.length, net: formatMoney(total, { sign: true }) });
  }

  /** "Verify shoe N" for a round of your history, on the newest round of each shoe (any
   * shoe, not only the table's latest: app.verifyShoe checks it in this browser). The
   * shoe still being dealt at your table has no seed to check yet: not offered. */
  verifyButton(r, shoes) {
    const table = r.table;
    const shoe = r.shoe_no;
    if (!table || !Number.isInteger(shoe)) return "–";
    const key = `${table}/${shoe}`;
    if (shoes.has(key)) return t("page.history.shoe_no", { shoe });
    shoes.add(key);
    const s = this.app.state;
    const current = s?.table === table && s?.shoe?.no === shoe;
    return h(
      "button",
      {
        type: "button",
        class: "verify-shoe",
        dataset: { table, shoe },
        disabled: current,
        title: current ? t("page.history.shoe_going_on") : t("page.history.verify_title", { shoe, table }),
        onclick: () => this.app.verifyShoe(table, shoe),
      },
      t("page.history.verify", { shoe }),
    );
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
