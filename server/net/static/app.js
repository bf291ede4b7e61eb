/**
 * app.js — the Chemmy web table: the page chemmy-server serves at `/`, built on
 * chemmy.js (the client) and state.js (the table's model), as the example an operator
 * copies or embeds (docs/embedding.md).
 *
 * Where the connection comes from: the query string (`?url=&token=` or `?guest=1&name=`,
 * `&table=` to go straight to a table), or, in an iframe (or with `?embed=1`), a
 * `postMessage` from the parent page: `{type: "chemmy:connect", token, url?, table?}`,
 * so a token never has to sit in a URL (`?parent=ORIGIN` accepts it only from that
 * origin). The page answers the parent with `chemmy:ready` and then `chemmy:status`.
 *
 * What it must never do: decide a rule. Every button is enabled from the server's
 * `actions` (state.actions); a click sends the command and the server's refusal, if
 * any, goes to the message display. It changes nothing on its own: the table moves
 * only with the server's events. No innerHTML anywhere (the CSP enforces Trusted Types).
 */

import { ChemmyError, connect } from "./chemmy.js";
import { chooseLanguage, formatNumber, language, refusalText, setLanguage, t, translatePage } from "./i18n.js";
import {
  AREA_NAMES,
  HAND_NAMES,
  PHASE_NAMES,
  TableState,
  cardText,
  formatMoney,
  isRed,
  parseMoney,
  resultText,
} from "./state.js";

// ---------------------------------------------------------------------------- constants

const CHIP_MULTIPLES = [1, 5, 10, 25, 50];
/** Where each bet area sits on the felt, left to right (the side bets above). */
const AREA_ORDER = ["player_pair", "dragon_player", "super6", "dragon_banker", "banker_pair", "player", "tie", "banker"];
const MAIN_AREAS = new Set(["player", "tie", "banker"]);
/** Seconds one card takes to open in a squeeze, by game speed 1..5 (Options). */
const SQUEEZE_SECONDS = { 1: 2.6, 2: 1.8, 3: 1.2, 4: 0.8, 5: 0.35 };
const PROGRESS_STEPS = [25, 50, 75]; // percents sent to the table while a card opens
const LONG_PRESS_MS = 550;
const RESULT_MIN_MS = 5000; // the settled coup stays at least this long under others' chips
const OPTION_DEFAULTS = { speed: 4, balloons: true, sound: true, voices: true, name: "", language: "auto" };
const PAYS = {
  player: "1:1",
  get banker() { return t("page.pays.banker"); },
  tie: "8:1",
  player_pair: "11:1",
  banker_pair: "11:1",
  super6: "12:1",
  get dragon_player() { return t("page.pays.dragon"); },
  get dragon_banker() { return t("page.pays.dragon"); },
};
const STALE = new Set([
  "wrong_phase",
  "not_offered",
  "not_your_turn",
  "not_cutter",
  "not_holder",
  "card_already_turned",
  "not_squeezing",
  "already_squeezing",
]);

// ---------------------------------------------------------------------------- DOM helpers

const $ = (sel, root = document) => root.querySelector(sel);

/** Build an element: h("button", {class: "x", onclick: fn}, "text", child, ...). */
function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props ?? {})) {
    if (v == null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "dataset") for (const [dk, dv] of Object.entries(v)) el.dataset[dk] = String(dv);
    else if (k === "vars") for (const [p, val] of Object.entries(v)) el.style.setProperty(p, String(val));
    else if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "text") el.textContent = String(v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c == null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** Replace an element's children, skipping the empty ones. */
function fill(el, ...children) {
  el.replaceChildren(...children.flat(Infinity).filter((c) => c != null && c !== false));
}

function show(el, on) {
  el.hidden = !on;
}

function enable(el, on) {
  el.disabled = !on;
}

// ---------------------------------------------------------------------------- storage

/** The browser's storage, where there is any: an iframe on another site may be denied
 * it (third-party storage), and the page then remembers for this visit only. */
const memory = new Map();
function storage(kind) {
  try {
    const s = kind === "local" ? globalThis.localStorage : globalThis.sessionStorage;
    s.length; // throws when access is denied
    return s;
  } catch {
    return null;
  }
}
const store = {
  get(kind, key) {
    const s = storage(kind);
    return s ? s.getItem(key) : (memory.get(`${kind}:${key}`) ?? null);
  },
  set(kind, key, value) {
    const s = storage(kind);
    try {
      if (s) s.setItem(key, value);
      else memory.set(`${kind}:${key}`, value);
    } catch {
      memory.set(`${kind}:${key}`, value); // full, or private browsing
    }
  },
  remove(kind, key) {
    storage(kind)?.removeItem(key);
    memory.delete(`${kind}:${key}`);
  },
};

// ---------------------------------------------------------------------------- options

function loadOptions() {
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

// ---------------------------------------------------------------------------- sound

class Sounds {
  constructor(app) {
    this.app = app;
    this.ctx = null;
  }

  _tone(freq, start, length, type = "sine", gain = 0.08) {
    const ctx = this.ctx;
    const osc = ctx.createOscillator();
    const g = ctx.createGain();
    osc.type = type;
    osc.frequency.value = freq;
    g.gain.setValueAtTime(gain, ctx.currentTime + start);
    g.gain.exponentialRampToValueAtTime(0.0001, ctx.currentTime + start + length);
    osc.connect(g).connect(ctx.destination);
    osc.start(ctx.currentTime + start);
    osc.stop(ctx.currentTime + start + length);
  }

  play(kind) {
    if (!this.app.opts.sound) return;
    try {
      this.ctx ??= new AudioContext();
      if (this.ctx.state === "suspended") this.ctx.resume();
      if (kind === "chip") this._tone(1800, 0, 0.05, "triangle", 0.05);
      else if (kind === "card") this._tone(500, 0, 0.07, "sawtooth", 0.02);
      else if (kind === "win") [660, 880, 1320].forEach((f, i) => this._tone(f, i * 0.09, 0.18));
      else if (kind === "turn") this._tone(980, 0, 0.15);
      else if (kind === "refused") this._tone(180, 0, 0.2, "square", 0.03);
    } catch {
      // no audio here
    }
  }

  say(text) {
    if (!this.app.opts.voices || !text || !globalThis.speechSynthesis) return;
    try {
      const u = new SpeechSynthesisUtterance(text);
      u.lang = language();
      u.rate = 1.05;
      speechSynthesis.speak(u);
    } catch {
      // no voices here
    }
  }
}

// ---------------------------------------------------------------------------- markdown

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

// ---------------------------------------------------------------------------- the app

class App {
  constructor() {
    this.opts = loadOptions();
    this.sounds = new Sounds(this);
    this.client = null;
    this.identity = null;
    this.tableId = null;
    this.state = null;
    this.tables = [];
    this.chip = 0;
    this.placed = []; // [area, amount] placed this round, for REGRET
    this.localProgress = {}; // "hand:index" -> percent of my own squeeze animation
    this.animating = new Set();
    this.log = [];
    this.chat = [];
    this.parentOrigin = null;
    this.depositId = null;
    this.lastLongPress = 0;
    this.lobbyTimer = null;
    this.cutValue = null;
    this.connState = "idle";
    this.inflight = 0;
    this.messages = 0; // how many times the message display changed
    this.settledAt = 0; // performance.now() at the last settled coup
  }

  // -- start --------------------------------------------------------------------------
  async start() {
    this.params = new URLSearchParams(location.search);
    this.bindStatic();
    this.applyOptions();
    await this.applyLanguage();
    let token = this.params.get("token");
    if (token) {
      // Out of the address bar (and of the history) at once; kept for this tab only, so
      // that a reload is the same player.
      const clean = new URL(location.href);
      clean.searchParams.delete("token");
      history.replaceState(null, "", clean);
      store.set("session", "chemmy.token", token);
    } else {
      token = store.get("session", "chemmy.token");
    }
    const embedded = window.parent !== window || this.params.get("embed") === "1";
    window.addEventListener("message", (ev) => this.onParentMessage(ev));
    if (token || this.params.get("guest") === "1" || !embedded) {
      this.begin({ url: this.params.get("url"), token, table: this.params.get("table") });
    } else {
      this.waitForHost();
      this.toParent({ type: "chemmy:ready" }, "*");
    }
  }

  /** No token yet: this page waits for its host page's `chemmy:connect` (docs/embedding.md §3). */
  waitForHost(ignored = null) {
    this.hostIgnored = ignored; // drawn again in another language (applyLanguage)
    const expected = this.params.get("parent");
    this.setMessage(t("page.host_wait"));
    $("#plaque").textContent = t("page.plaque.host_wait");
    const pill = $("#conn");
    pill.dataset.state = "waiting";
    pill.textContent = t("page.conn.waiting");
    const message = '{type: "chemmy:connect", token}';
    let text = t("page.host.banner", { message });
    if (expected && ignored) text = t("page.host.banner_from_ignored", { message, origin: expected, ignored });
    else if (expected) text = t("page.host.banner_from", { message, origin: expected });
    const banner = $("#banner");
    banner.textContent = window.parent === window ? `${text} ${t("page.host.not_framed")}` : text;
    banner.dataset.tone = "warn";
    show(banner, true);
  }

  /** The words in the language chosen in Options, else the operator's (the token's
   * `language`, else `?lang=`), else the browser's (i18n.js); everything drawn again. */
  async applyLanguage() {
    const lang = chooseLanguage({
      option: this.opts.language,
      token: this.identity?.language,
      param: this.params.get("lang"),
      browser: navigator.languages,
    });
    if (lang === language() && document.documentElement.lang === lang) return;
    await setLanguage(lang);
    translatePage();
    if (!this.client && $("#conn").dataset.state === "waiting") {
      this.waitForHost(this.hostIgnored ?? null); // still waiting for the host page
      return;
    }
    const conn = { open: "connected", reconnecting: "reconnecting", closed: "disconnected" }[this.connState] ?? "connecting";
    $("#conn").textContent = t(`page.conn.${conn}`);
    if (!this.identity && this.connState === "closed") $("#plaque").textContent = t("page.plaque.not_connected");
    if (this.identity) {
      $("#who").textContent = this.identity.guest ? t("page.guest", { name: this.identity.name }) : this.identity.name;
      if (document.body.dataset.view === "lobby") $("#plaque").textContent = t("page.choose_table");
    }
    if (this.state) {
      if (document.body.dataset.view === "table") this.buildLayout();
      this.render();
      this.renderRoads();
    } else if (this.identity && document.body.dataset.view === "lobby") {
      this.refreshLobby();
    }
  }

  defaultUrl() {
    const u = new URL(".", location.href);
    u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
    u.search = "";
    u.hash = "";
    return u.href;
  }

  onParentMessage(ev) {
    if (ev.source !== window.parent || window.parent === window) return;
    const expected = this.params.get("parent");
    const m = ev.data;
    if (expected && ev.origin !== expected) {
      if (!this.client && m?.type === "chemmy:connect") this.waitForHost(ev.origin);
      return;
    }
    if (!m || typeof m !== "object") return;
    if (m.type === "chemmy:connect" && !this.client) {
      this.parentOrigin = ev.origin;
      if (typeof m.token !== "string" && m.guest !== true) {
        this.setMessage(t("page.host_no_token"), "refused");
        return;
      }
      // The table: the message's, else the frame's address's (`?table=`).
      const table = m.table ?? this.params.get("table");
      this.begin({ url: m.url, token: m.token, guest: m.guest, name: m.name, table });
    } else if (m.type === "chemmy:token" && this.client && typeof m.token === "string") {
      this.client.setToken(m.token);
    }
  }

  toParent(message, origin = this.parentOrigin) {
    if (window.parent === window || !origin) return;
    try {
      window.parent.postMessage(message, origin);
    } catch {
      // the parent went away
    }
  }

  begin({ url, token, name, table }) {
    const auth = token
      ? { token }
      : {
          guest: true,
          name: name || this.params.get("name") || this.opts.name || undefined,
          resume: store.get("session", "chemmy.resume") || undefined,
        };
    this.client = connect(url || this.defaultUrl(), auth);
    this.setMessage(t("page.connecting"));
    this.connectingMessage = this.messages; // replaced at the hello, if still shown
    show($("#banner"), false);
    window.chemmyPage = this; // for operators debugging an embedding (and the tests)
    const c = this.client;
    c.on("status", (s) => this.onStatus(s));
    c.on("hello", (hello) => this.onHello(hello, table));
    c.on("snapshot", ({ table: t, snapshot }) => this.onSnapshot(t, snapshot));
    c.on("resumed", ({ table: tb }) => tb === this.tableId && this.note(t("page.resumed")));
    c.on("event", (ev) => this.onEvent(ev));
    c.on("chat", (m) => this.onChat(m));
    c.on("error", (m) => this.note(refusalText(m.code, m.message), "refused"));
  }

  // -- connection ----------------------------------------------------------------------
  onStatus(s) {
    this.connState = s.state;
    const pill = $("#conn");
    pill.dataset.state = s.state;
    const banner = $("#banner");
    if (s.state === "open") {
      pill.textContent = t("page.conn.connected");
      show(banner, false);
      if (s.resumed) {
        this.note(s.sameIdentity ? t("page.reconnected") : t("page.reconnected_new_guest"), "you");
      }
    } else if (s.state === "reconnecting") {
      pill.textContent = t("page.conn.reconnecting");
      banner.textContent =
        s.attempt > 0
          ? t("page.banner.reconnecting", { attempt: s.attempt })
          : t("page.connecting");
      banner.dataset.tone = "warn";
      show(banner, s.attempt > 0);
      if (s.attempt === 1 && s.code !== undefined) this.note(t("page.connection_lost"), "refused");
    } else if (s.state === "closed") {
      pill.textContent = t("page.conn.disconnected");
      // A refused sign-in (the token expired, or is not valid here) is refused again on a
      // reload: only the operator's site can sign the player in again.
      const auth = /^(token_expired|bad_token|auth_required)\b/.exec(s.reason ?? "")?.[1];
      let again = t("page.banner.reload");
      if (auth) {
        again = this.parentOrigin ? t("page.banner.host_told") : t("page.banner.sign_in_again");
      } else if (this.parentOrigin) {
        again = t("page.banner.new_token");
      }
      // "code: message" (a refused hello): the message in the page's language too.
      const refused = /^([a-z_]+): (.*)$/s.exec(s.reason ?? "");
      const reason = refused ? `${refused[1]}: ${refusalText(refused[1], refused[2])}` : s.reason || t("page.banner.closed");
      banner.textContent = t("page.banner.disconnected", { reason, again });
      if (!this.identity) $("#plaque").textContent = t("page.plaque.not_connected"); // it said "Connecting…"
      banner.dataset.tone = "error";
      show(banner, true);
    } else {
      pill.textContent = t("page.conn.connecting");
    }
    const why = s.state === "closed" ? { code: s.code ?? null, reason: s.reason ?? null } : {};
    this.toParent({ type: "chemmy:status", state: s.state, player: this.identity?.player ?? null, ...why });
    this.render(); // every button follows the connection too
  }

  onHello(hello, table) {
    const first = !this.identity;
    this.identity = hello;
    if (hello.language) this.applyLanguage();
    if (hello.resume) store.set("session", "chemmy.resume", hello.resume);
    $("#who").textContent = hello.guest ? t("page.guest", { name: hello.name }) : hello.name;
    if (this.messages === this.connectingMessage) this.setMessage(t("page.connected_as", { name: hello.name }), "you");
    if (!this.state) this.renderMoney(undefined, 0);
    if (!first) return;
    const target = table || store.get("session", "chemmy.table");
    if (target) this.openTable(target);
    else this.showLobby();
  }

  // -- lobby ---------------------------------------------------------------------------
  async showLobby() {
    this.refreshMoney(); // chips that were on a table came back
    show($("#lobby"), true);
    show($("#table"), false);
    document.body.dataset.view = "lobby";
    $("#plaque").textContent = t("page.choose_table");
    $("#phase").textContent = "";
    await this.refreshLobby();
    clearInterval(this.lobbyTimer);
    this.lobbyTimer = setInterval(() => this.refreshLobby(), 5000);
  }

  /** Balance and available money as the server has them now (the `balance` reply):
   * after chips came back without an event saying how much (STAND, the lobby), and for
   * the cashier. */
  async refreshMoney() {
    if (!this.client || this.connState !== "open") return;
    const state = this.state;
    let reply;
    try {
      reply = await this.client.send("balance");
    } catch {
      return; // the next event or reply brings it
    }
    if (state && this.state === state) {
      state.balance = reply.balance;
      state.available = reply.available;
    } else if (!this.state && this.identity) {
      this.identity.balance = reply.balance;
      this.identity.available = reply.available;
    }
    if (!this.state || this.state === state) this.renderMoney();
    if ($("#dlg-cashier").open) this.renderCashier();
  }

  async refreshLobby() {
    if (!this.client || this.connState !== "open" || this.tableId) return;
    try {
      const reply = await this.client.send("tables");
      this.tables = reply.tables ?? [];
    } catch (err) {
      this.note(t("page.no_tables", { error: err.message }), "refused");
      return;
    }
    if (this.tableId) return; // a table was chosen meanwhile
    // The table a keyboard is on keeps the focus when the list is drawn anew.
    const focusedTable = document.activeElement?.closest?.("#tables .table-card")?.dataset.table;
    const tiers = new Map();
    for (const tb of this.tables) {
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
                { class: "table-card", dataset: { table: tb.table }, onclick: () => this.openTable(tb.table) },
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

  async openTable(table) {
    clearInterval(this.lobbyTimer);
    this.tableId = table;
    this.state = new TableState(this.identity?.player ?? null);
    this.placed = [];
    this.localProgress = {};
    try {
      await this.client.join(table);
    } catch (err) {
      this.tableId = null;
      this.state = null;
      store.remove("session", "chemmy.table");
      this.note(t("page.cannot_join", { table, error: err.message }), "refused");
      this.showLobby();
      return;
    }
    store.set("session", "chemmy.table", table);
  }

  async leaveTable() {
    const table = this.tableId;
    if (!table) return;
    try {
      await this.client.leave(table);
    } catch (err) {
      this.refused(err, "leave");
      return;
    }
    this.tableId = null;
    this.state = null;
    store.remove("session", "chemmy.table");
    this.showLobby();
  }

  // -- the table's stream --------------------------------------------------------------
  onSnapshot(table, snapshot) {
    if (table !== this.tableId) return;
    const first = document.body.dataset.view !== "table";
    this.state.me = this.identity?.player ?? this.state.me;
    const notes = this.state.load(snapshot);
    this.localProgress = {};
    const fromLobby = first && $("#lobby").contains(document.activeElement);
    if (first) {
      show($("#lobby"), false);
      show($("#table"), true);
      document.body.dataset.view = "table";
      this.buildLayout();
    }
    this.showNotes(notes);
    this.render();
    // A table chosen in the lobby: the focus goes to its Sit buttons, not the body (or
    // waits on "You are watching" for them: they come with the actions, maybe later).
    if (fromLobby) {
      const sit = $("#seats .sit-here[tabindex='0']");
      (sit ?? $("#you-seat")).focus();
      this.focusParked = !sit;
    }
    this.fetchRoads();
  }

  onEvent({ table, kind, data }) {
    if (table !== this.tableId || !this.state) return;
    let notes;
    try {
      notes = this.state.apply(kind, data);
    } catch (err) {
      console.error(err);
      this.note(t("page.catching_up", { error: err.message }), "refused");
      this.client.resync(table).catch(() => {});
      return;
    }
    const me = this.state.me;
    if (kind === "settled") {
      this.settledAt = performance.now();
      const state = this.state;
      setTimeout(() => {
        if (this.state === state && this.retireLast()) this.render();
      }, RESULT_MIN_MS + 50);
      this.placed = [];
      this.localProgress = {};
      this.fetchRoads();
      if (Number.isInteger(data.net) && data.net > 0) this.sounds.play("win");
      if ($("#dlg-history").open) this.loadHistory();
    } else if (kind === "betting_opened") {
      this.placed = [];
    } else if (kind === "card") {
      delete this.localProgress[`${data.hand}:${data.index}`];
      this.sounds.play("card");
    } else if (kind === "bets" && data.player === me) {
      this.sounds.play("chip");
      const bets = Object.entries(data.bets ?? {}).filter(([, v]) => v);
      const what = bets.map(([a, v]) => t("page.your_bets.item", { area: AREA_NAMES[a] ?? a, amount: formatMoney(v) })).join(" · ");
      this.setMessage(what ? t("page.your_bets", { bets: what }) : t("page.your_bets_none"), "you"); // the display only, not the log
    } else if (kind === "shoe_started" || kind === "burned") {
      this.fetchRoads(); // the burn card is seen: the odds change
    } else if ((kind === "stood" || kind === "bets_void") && data.player === me) {
      this.refreshMoney(); // the chips placed came back (the event does not say how much)
    } else if (kind === "closed") {
      setTimeout(() => {
        if (this.tableId === table) {
          this.tableId = null;
          this.state = null;
          store.remove("session", "chemmy.table");
          this.showLobby();
        }
      }, 3000);
    }
    if ((kind === "turn" && data.turner === me) || (kind === "shoe_offered" && data.player === me) || (kind === "cut_offered" && data.player === me)) {
      this.sounds.play("turn");
    }
    this.retireLast();
    this.showNotes(notes);
    this.render();
  }

  /** The settled coup leaves the felt under the next coup's chips: at once for yours
   * (state.js), after RESULT_MIN_MS for the others'. True when it just left. */
  retireLast() {
    const s = this.state;
    if (!s?.lastShown || !s.nextChips || performance.now() - this.settledAt < RESULT_MIN_MS) return false;
    s.lastShown = false;
    return true;
  }

  onChat(m) {
    if (m.table !== this.tableId) return;
    this.chat.push(m);
    this.chat.splice(0, this.chat.length - 100);
    const log = $("#chat-log");
    log.append(h("li", {}, h("b", {}, `${m.name}: `), m.text));
    while (log.children.length > 100) log.firstChild.remove();
    log.scrollTop = log.scrollHeight;
  }

  async fetchRoads() {
    const table = this.tableId;
    const state = this.state;
    if (!table || this.connState !== "open") return;
    try {
      const reply = await this.client.send("roads", { table });
      if (this.state === state) {
        state.setRoads(reply.roads, reply.odds);
        this.renderRoads();
      }
    } catch {
      // the roads come again after the next coup
    }
  }

  // -- messages ------------------------------------------------------------------------
  showNotes(notes) {
    for (const n of notes ?? []) {
      this.note(n.text, n.tone);
      if (n.say) this.sounds.say(n.say);
    }
  }

  note(text, tone = "info", code = null) {
    if (!text) return;
    this.setMessage(text, tone, code);
    this.log.push({ text, tone });
    this.log.splice(0, this.log.length - 200);
    const list = $("#log");
    list.append(h("li", { dataset: { tone } }, text));
    while (list.children.length > 200) list.firstChild.remove();
    list.scrollTop = list.scrollHeight;
  }

  setMessage(text, tone = "info", code = null) {
    this.messages += 1;
    const m = $("#message");
    m.textContent = text;
    m.dataset.tone = tone;
    if (code) m.dataset.code = code;
    else delete m.dataset.code;
    this.announce(text, tone);
  }

  /** What a screen reader is told, politely, in one live region (#announce): the
   * message display's words, except that a turned card is said as its whole hand
   * (announceHands overwrites the card's note in the same task, so it is said once). */
  announce(text, tone = "info") {
    $("#announce").textContent = text;
    this.justSaid = { text, tone };
    queueMicrotask(() => (this.justSaid = null));
  }

  /** A refusal in words, on the message display. Nothing else changes: the page moves
   * only with the server's events. */
  refused(err, type, fields = {}) {
    if (!(err instanceof ChemmyError)) {
      console.error(err);
      this.note(t("page.failed", { command: type, error: err.message }), "refused");
      return;
    }
    if (err.code === "disconnected" || err.code === "closed") {
      this.note(t("page.not_connected", { command: type.replaceAll("_", " ") }), "refused", err.code);
      return;
    }
    const s = this.state;
    const area = AREA_NAMES[fields.area] ?? fields.area;
    let text;
    if (err.code === "over_max" && s) text = t("page.refused.over_max", { area, amount: formatMoney(s.maxFor(fields.area)) });
    else if (err.code === "below_min" && s) text = t("page.refused.below_min", { area, amount: formatMoney(s.limits.min) });
    else if (err.code === "insufficient_funds") text = t("page.refused.funds");
    else if (STALE.has(err.code)) text = t("page.refused.too_late", { reason: refusalText(err.code, String(err.message).replace(/^not now: /, "")) });
    else text = refusalText(err.code, err.message) || err.code;
    this.note(t("page.refused", { text }), "refused", err.code);
    this.sounds.play("refused");
  }

  async cmd(type, fields = {}) {
    if (!this.tableId) return null;
    const all = { table: this.tableId, ...fields };
    this.inflight += 1; // commands sent and not answered yet (a reply follows its events)
    const shown = this.messages;
    try {
      const reply = await this.client.send(type, all);
      // Done: a refusal still on the display (nothing said since) is no longer news.
      if (shown === this.messages && $("#message").dataset.tone === "refused") {
        this.setMessage(this.state?.phaseText() ?? "");
      }
      return reply;
    } catch (err) {
      if (type !== "progress") this.refused(err, type, all);
      return null;
    } finally {
      this.inflight -= 1;
    }
  }

  // -- actions (the server's) ------------------------------------------------------------
  can(name) {
    return Boolean(this.state && this.connState === "open" && this.state.actions[name]);
  }

  chips() {
    const lim = this.state?.limits ?? {};
    const low = lim.min || 100;
    const high = lim.max || low * 100;
    const chips = CHIP_MULTIPLES.map((m) => low * m).filter((v) => v <= high);
    return chips.length ? chips : [low];
  }

  chipValue() {
    const chips = this.chips();
    return chips[Math.min(this.chip, chips.length - 1)];
  }

  async place(area) {
    const amount = this.chipValue();
    const reply = await this.cmd("bet", { area, amount });
    if (reply) this.placed.push([area, amount]);
  }

  /** Take chips off an area: the selected chip's worth when the server allows that much
   * off (`remove_bet.areas[area].max_partial`), else the whole bet. */
  async remove(area, amount = this.chipValue()) {
    const allowed = this.state?.actions.remove_bet?.areas?.[area];
    const partial = allowed && amount <= (allowed.max_partial ?? 0) ? { amount } : {};
    const reply = await this.cmd("remove_bet", { area, ...partial });
    if (reply) {
      const i = this.placed.findLastIndex(([a]) => a === area);
      if (i >= 0) this.placed.splice(i, 1);
    }
  }

  async regret() {
    const last = this.placed.at(-1);
    if (last) {
      await this.remove(last[0], last[1]);
      return;
    }
    const areas = Object.keys(this.state?.actions.remove_bet?.areas ?? {});
    if (areas.length) await this.remove(areas.at(-1), Infinity);
  }

  async squeezeCard(hand, index) {
    const key = `${hand}:${index}`;
    if (this.animating.has(key)) return;
    this.animating.add(key);
    const seconds = SQUEEZE_SECONDS[this.opts.speed] ?? SQUEEZE_SECONDS[4];
    const start = performance.now();
    const steps = [...PROGRESS_STEPS];
    try {
      await new Promise((resolve) => {
        const frame = (now) => {
          const pct = Math.min(100, Math.round(((now - start) / 1000 / seconds) * 100));
          if (!this.state?.coup || !this.animating.has(key)) return resolve();
          this.localProgress[key] = pct;
          while (steps.length && pct >= steps[0]) {
            const p = steps.shift();
            const allowed = this.state.actions.progress;
            if (allowed && allowed.hand === hand && (allowed.cards ?? []).includes(index)) {
              this.cmd("progress", { hand, card: index, percent: p });
            }
          }
          this.renderHands();
          if (pct >= 100) resolve();
          else requestAnimationFrame(frame);
        };
        requestAnimationFrame(frame);
      });
      if (this.state?.actions.turn?.cards?.includes(index)) await this.cmd("turn", { hand, card: index });
    } finally {
      this.animating.delete(key);
    }
  }

  // -- static bindings -------------------------------------------------------------------
  bindStatic() {
    $("#btn-lobby").addEventListener("click", () => (this.tableId ? this.leaveTable() : this.showLobby()));
    $("#btn-history").addEventListener("click", () => this.openHistory());
    $("#btn-help").addEventListener("click", () => this.openHelp());
    $("#btn-options").addEventListener("click", () => this.openOptions());
    $("#btn-cashier").addEventListener("click", () => this.openCashier());
    for (const dlg of document.querySelectorAll("dialog")) {
      dlg.addEventListener("click", (ev) => {
        if (ev.target === dlg || ev.target.closest("[data-close]")) dlg.close();
      });
    }
    $("#act-sit").addEventListener("click", () => this.cmd("sit"));
    $("#act-stand").addEventListener("click", () => this.cmd("stand"));
    $("#act-regret").addEventListener("click", () => this.regret());
    $("#act-clear").addEventListener("click", async () => {
      if (await this.cmd("clear_bets")) this.placed = [];
    });
    $("#act-same").addEventListener("click", () => this.cmd("same_bet"));
    $("#act-done").addEventListener("click", () => this.cmd("done"));
    $("#act-accept").addEventListener("click", () => this.cmd("accept_shoe"));
    $("#act-decline").addEventListener("click", () => this.cmd("decline_shoe"));
    $("#act-pass").addEventListener("click", () => this.cmd("pass_shoe"));
    $("#cut-range").addEventListener("input", (ev) => {
      this.cutValue = Number(ev.target.value);
      this.renderCut();
    });
    $("#act-cut").addEventListener("click", () => this.cmd("cut", { position: Number($("#cut-range").value) }));
    $("#sq-toss").addEventListener("click", () => {
      const hand = this.state?.actions.toss?.hand;
      if (hand) this.cmd("toss", { hand });
    });
    for (const style of ["peek", "side", "quick"]) {
      $(`#sq-${style}`).addEventListener("click", () => {
        const hand = this.state?.actions.squeeze?.hand;
        if (hand) this.cmd("squeeze", { hand, style });
      });
    }
    for (const [i, id] of ["#sq-card1", "#sq-card2"].entries()) {
      $(id).addEventListener("click", () => {
        const turn = this.state?.actions.turn;
        const index = Number($(id).dataset.card || i + 1);
        if (turn) this.squeezeCard(turn.hand, index);
      });
    }
    $("#chat-form").addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const input = $("#chat-input");
      const text = input.value.trim();
      if (!text) return;
      if (await this.cmd("chat", { text })) input.value = "";
    });
    $("#cashier-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      this.deposit();
    });
    $("#options-form").addEventListener("input", () => this.readOptions());
    $("#options-form").addEventListener("submit", (ev) => ev.preventDefault());
    setInterval(() => this.renderClock(), 250);
  }

  // -- dialogs ---------------------------------------------------------------------------
  openCashier() {
    const dlg = $("#dlg-cashier");
    this.renderCashier();
    $("#cashier-result").textContent = "";
    // The suggested amount as the current language writes money ("100,00" in French,
    // which parseMoney would read as 10,000.00 if it stayed "100.00"); a typed one stays.
    const input = $("#cashier-amount");
    const suggested = formatMoney(10000);
    if (input.value === (this.cashierSuggested ?? input.defaultValue)) input.value = suggested;
    input.placeholder = suggested;
    this.cashierSuggested = suggested;
    dlg.showModal();
    $("#cashier-amount").focus();
    this.refreshMoney();
  }

  renderCashier() {
    const money = this.state ?? this.identity ?? {};
    $("#cashier-available").textContent = formatMoney(money.available ?? money.balance);
    $("#cashier-balance").textContent = formatMoney(money.balance);
  }

  async deposit() {
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
      const reply = await this.client.send("deposit", { amount }, { id: this.depositId });
      this.depositId = null;
      result.textContent = t("page.cashier.deposited_balance", { amount: formatMoney(amount), balance: formatMoney(reply.balance) });
      result.dataset.tone = "win";
      if (this.state) this.state.balance = reply.balance;
      else if (this.identity) this.identity.balance = reply.balance;
      this.renderCashier();
      await this.refreshMoney(); // and what is available, from the server
      this.note(t("page.cashier.deposited", { amount: formatMoney(amount) }), "you");
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
    const body = $("#history-body");
    const status = $("#history-status");
    status.textContent = t("page.loading");
    let rounds;
    try {
      rounds = (await this.client.send("history", { limit: 100 })).rounds ?? [];
    } catch (err) {
      status.textContent = t("page.history.unavailable", { error: err.message });
      return;
    }
    const me = this.identity?.player;
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
    const f = $("#options-form");
    f.elements.speed.value = String(this.opts.speed);
    f.elements.balloons.checked = this.opts.balloons;
    f.elements.sound.checked = this.opts.sound;
    f.elements.voices.checked = this.opts.voices;
    f.elements.name.value = this.opts.name ?? "";
    f.elements.language.value = this.opts.language ?? "auto";
    $("#speed-value").textContent = String(this.opts.speed);
    $("#dlg-options").showModal();
  }

  readOptions() {
    const f = $("#options-form");
    this.opts = {
      speed: Math.min(5, Math.max(1, Number(f.elements.speed.value) || 4)),
      balloons: f.elements.balloons.checked,
      sound: f.elements.sound.checked,
      voices: f.elements.voices.checked,
      name: f.elements.name.value.trim().slice(0, 32),
      language: f.elements.language.value || "auto",
    };
    $("#speed-value").textContent = String(this.opts.speed);
    if (!this.opts.voices && globalThis.speechSynthesis) speechSynthesis.cancel();
    saveOptions(this.opts);
    this.applyOptions();
    this.render();
    this.applyLanguage();
  }

  applyOptions() {
    document.body.dataset.balloons = this.opts.balloons ? "on" : "off";
    document.body.style.setProperty("--deal-ms", `${Math.round(SQUEEZE_SECONDS[this.opts.speed] * 300)}ms`);
  }

  // ---------------------------------------------------------------------------- drawing
  buildLayout() {
    const s = this.state;
    const layout = $("#layout");
    // As on a felt: the side bets in a row above the three main areas, Player left of
    // Tie, Banker right; each side's bets on its side.
    const rows = { side: [], main: [] };
    const sorted = [...s.areas].sort((a, b) => AREA_ORDER.indexOf(a) - AREA_ORDER.indexOf(b));
    for (const area of sorted) {
      const el = (() => {
        const el = h(
          "button",
          { class: "area", dataset: { area }, type: "button" },
          h("span", { class: "area-name" }, AREA_NAMES[area] ?? area),
          h("span", { class: "area-pays" }, area === "banker" && s.options.commission === false ? t("page.pays.no_commission") : PAYS[area] ?? ""),
          h("span", { class: "area-pile" }),
          h("span", { class: "area-others" }),
        );
        let timer = null;
        el.addEventListener("pointerdown", (ev) => {
          if (ev.pointerType === "mouse") return;
          timer = setTimeout(() => {
            timer = null;
            this.lastLongPress = Date.now();
            this.remove(area);
          }, LONG_PRESS_MS);
        });
        const cancel = () => {
          if (timer) clearTimeout(timer);
          timer = null;
        };
        el.addEventListener("pointerup", cancel);
        el.addEventListener("pointercancel", cancel);
        el.addEventListener("pointerleave", cancel);
        el.addEventListener("click", (ev) => {
          if (Date.now() - this.lastLongPress < 800) return; // the long press already removed
          if (ev.ctrlKey || ev.metaKey) this.remove(area);
          else this.place(area);
        });
        el.addEventListener("contextmenu", (ev) => {
          ev.preventDefault(); // a right click regrets a chip, as at the old tables
          if (Date.now() - this.lastLongPress < 800) return;
          this.remove(area);
        });
        return el;
      })();
      rows[MAIN_AREAS.has(area) ? "main" : "side"].push(el);
    }
    fill(layout,
      rows.side.length ? h("div", { class: "layout-row side-bets" }, rows.side) : null,
      h("div", { class: "layout-row main-bets" }, rows.main),
    );
    const rack = $("#chips");
    fill(rack,
      ...this.chips().map((value, i) =>
        h(
          "button",
          {
            class: "chip",
            type: "button",
            dataset: { value, index: i, tier: i },
            "aria-pressed": String(i === this.chip),
            onclick: () => {
              this.chip = i;
              this.renderChips();
            },
          },
          chipLabel(formatMoney(value).replace(/[.,]00$/, "")),
        ),
      ),
    );
    this.chip = Math.min(this.chip, this.chips().length - 1);
  }

  render() {
    if (!this.state || document.body.dataset.view !== "table") return;
    const focused = this.focusWas();
    this.renderPlaque();
    this.renderSeats();
    this.renderShoe();
    this.renderHands();
    this.renderLayout();
    this.renderChips();
    this.renderButtons();
    this.renderMoney();
    this.renderClock();
    this.keepFocus(focused);
    this.toParent({
      type: "chemmy:status",
      state: this.connState,
      player: this.identity?.player ?? null,
      table: this.tableId,
      seat: this.state.mySeat,
      balance: this.state.balance,
    });
  }

  renderPlaque() {
    const s = this.state;
    const lim = s.limits;
    $("#plaque").textContent = `${s.options.name ?? s.table} · ${formatMoney(lim.min)}–${formatMoney(lim.max)} · ${t("page.tie_max", { amount: formatMoney(lim.tie_max) })}`;
  }

  renderClock() {
    const s = this.state;
    if (!s || !this.client) return;
    const deadline = s.deadline ?? s.coup?.deadline ?? s.offer?.deadline ?? null;
    const left = this.client.remaining(deadline);
    $("#phase").textContent = PHASE_NAMES[s.phase] ?? s.phase;
    const cd = $("#countdown");
    if (left == null) {
      cd.textContent = "";
      cd.hidden = true;
    } else {
      cd.hidden = false;
      cd.textContent = `${Math.ceil(left)}s`;
      cd.dataset.urgent = left < 4 ? "1" : "0";
    }
  }

  renderSeats() {
    const s = this.state;
    const bySeat = new Map(s.seatsInOrder().map((p) => [p.seat, p]));
    const free = new Set(s.actions.sit?.seats ?? []);
    const n = s.options.seats ?? 14;
    const seats = [];
    // The Sit buttons are one tab stop (a roving tabindex, WAI-ARIA toolbar): the arrow
    // keys, Home and End move between them.
    const sittable = this.connState === "open" ? [...free].filter((i) => i >= 1 && i <= n && !bySeat.has(i)).sort((a, b) => a - b) : [];
    const roving = sittable.includes(this.seatFocus) ? this.seatFocus : sittable[0];
    for (let i = 1; i <= n; i++) {
      const p = bySeat.get(i);
      if (!p) {
        seats.push(
          h(
            "div",
            { class: "seat empty", dataset: { seat: i } },
            h("span", { class: "seat-no" }, i),
            free.has(i) && this.connState === "open"
              ? h(
                  "button",
                  {
                    class: "sit-here",
                    type: "button",
                    tabindex: i === roving ? "0" : "-1",
                    "aria-label": a11yText("sitIn", i),
                    onclick: () => this.cmd("sit", { seat: i }),
                    onfocus: () => (this.seatFocus = i),
                    onkeydown: (ev) => this.seatKey(ev, i),
                  },
                  t("page.seat.sit"),
                )
              : h("span", { class: "seat-name" }, "–"),
          ),
        );
        continue;
      }
      const total = Object.values(p.bets).reduce((a, b) => a + b, 0);
      const held = s.coup?.bets?.[p.player];
      const stake = held ? Object.values(held).reduce((a, b) => a + b, 0) : total;
      seats.push(
        h(
          "div",
          {
            class: `seat${p.player === s.me ? " me" : ""}${p.player === s.holder ? " holder" : ""}${p.connected ? "" : " away"}`,
            dataset: { seat: i, player: p.player },
          },
          h("span", { class: "seat-no" }, i),
          p.player === s.holder ? h("span", { class: "shoe-mark", title: t("page.seat.holds") }, t("page.seat.shoe")) : null,
          h("span", { class: "seat-name" }, p.player === s.me ? t("page.seat.you", { name: p.name }) : p.name),
          stake ? h("span", { class: "seat-chips" }, formatMoney(stake)) : null,
          p.done && s.phase === "betting" ? h("span", { class: "seat-done", title: t("btn.done") }, "✓") : null,
          p.connected ? null : h("span", { class: "seat-away", title: t("page.conn.disconnected") }, t("page.seat.away")),
          s.offer?.player === p.player ? h("span", { class: "seat-offer" }, t("page.seat.offered")) : null,
        ),
      );
    }
    fill($("#seats"), ...seats);
    const bar = $("#seats");
    bar.setAttribute("role", sittable.length ? "toolbar" : "group");
    bar.setAttribute("aria-label", a11yText("seats"));
    const you = s.mySeat ? t("page.you.seat", { seat: s.mySeat }) : t("page.you.watching");
    const shoe = s.holder === s.me && s.me ? ` · ${t("page.you.hold_shoe")}` : s.houseHolds ? ` · ${t("page.you.house_holds")}` : "";
    $("#you-seat").textContent = `${you}${shoe} · ${t("page.you.spectators", { count: s.spectators })}`;
  }

  renderShoe() {
    const s = this.state;
    const shoe = s.shoe;
    const info = $("#shoe-info");
    if (!shoe) {
      fill(info, h("span", {}, t("page.shoe.none")));
    } else {
      fill(info,
        h("span", { class: "shoe-no" }, t("page.shoe.no", { shoe: shoe.no })),
        h("span", {}, t("page.shoe.cards", { cards: shoe.cards_left ?? "?" })),
        shoe.cut != null ? h("span", {}, t("page.shoe.cut", { cut: shoe.cut })) : null,
        shoe.burn
          ? h(
              "span",
              { class: "burn", id: "burn" },
              `${t("page.shoe.burn")} `,
              cardEl({ card: shoe.burn.card, up: true }, { small: true }),
              ` ${t("page.shoe.face_down", { count: shoe.burn.count })}`,
            )
          : null,
        shoe.stop_card_out ? h("span", { class: "stop" }, t("page.shoe.stop")) : null,
        h("span", { class: "commitment", title: t("page.shoe.commitment", { commitment: shoe.commitment }) }, `#${String(shoe.commitment ?? "").slice(0, 10)}`),
      );
    }
    this.renderCut();
  }

  renderCut() {
    const s = this.state;
    const cut = s?.actions.cut;
    const box = $("#cut-box");
    show(box, Boolean(cut));
    if (!cut) {
      this.cutValue = null;
      return;
    }
    const range = $("#cut-range");
    range.min = String(cut.min);
    range.max = String(cut.max);
    if (this.cutValue == null || this.cutValue < cut.min || this.cutValue > cut.max) {
      this.cutValue = Math.round((cut.min + cut.max) / 2);
    }
    range.value = String(this.cutValue);
    const size = cut.max + cut.min;
    $("#cut-marker").style.setProperty("--at", `${(this.cutValue / size) * 100}%`);
    $("#cut-value").textContent = t("page.cut.value", { at: this.cutValue, min: cut.min, max: cut.max });
  }

  renderHands() {
    const s = this.state;
    if (!s) return;
    const coup = s.shownCoup;
    for (const hand of ["player", "banker"]) {
      const box = $(`#hand-${hand}`);
      const cards = coup ? coup[hand] : [];
      const turner = coup?.turners?.[hand];
      const active = s.coup && s.phase === "turn" && s.coup.stage.startsWith(hand);
      const squeezing = active && s.coup.style;
      const pcts = coup ? Object.entries(coup.progress).filter(([k]) => k.startsWith(`${hand}:`)).map(([, v]) => v) : [];
      // The server's total (the card and result events), never the page's own: a
      // snapshot joined mid-coup says none until the hand's next card or the result.
      const total = handTotal(coup, hand);
      box.dataset.active = active ? "1" : "0";
      const shown = cards.some((c) => c.up) && total != null;
      $(`#total-${hand}`).textContent = shown ? String(total) : "";
      box.setAttribute("aria-label", handName(hand, cards, shown ? total : null));
      const who = [];
      if (s.coup && coup === s.coup) {
        who.push(t("page.turns", { who: s.name(turner) }));
        if (squeezing) who.push(`${String(s.coup.style).toUpperCase()}${pcts.length && s.coup.squeezer !== s.me ? ` ${Math.max(...pcts)}%` : ""}`);
      }
      $(`#turner-${hand}`).textContent = who.join(" · ");
      // Cards are kept from one drawing to the next (a new element would deal again):
      // only a card whose face or state changed is drawn anew; a squeeze just bends.
      const holder = $(`#cards-${hand}`);
      const round = coup?.roundId ?? "";
      const els = cards.map((c, i) => {
        const key = `${hand}:${i + 1}`;
        const known = s.coup?.private?.[key] ?? null;
        const progress = this.localProgress[key] ?? coup.progress[key];
        const croupier = c.up && c.by === "croupier" ? c.onBehalf : null;
        const style = c.up ? "" : (s.coup?.style ?? "");
        const sig = [round, c.up, c.card, known, style, progress == null, croupier].join("|");
        let el = holder.children[i];
        if (!el || el.dataset.sig !== sig) {
          const again = el?.dataset.sig?.startsWith(`${round}|`);
          el = cardEl(c, { known, progress, style, croupier, index: i + 1, hand });
          el.dataset.sig = sig;
          if (again) el.classList.add("again"); // the same card, turned: it flips, not deals
        } else if (progress != null) {
          bend(el, progress);
        }
        return el;
      });
      if (els.length !== holder.children.length || els.some((el, i) => holder.children[i] !== el)) fill(holder, els);
    }
    this.announceHands(coup);
    const result = $("#result");
    const r = coup?.result;
    if (r && (!s.coup || s.coup.result)) {
      result.textContent = s.coup ? resultText(r) : s.resultLine || resultText(r);
      result.dataset.outcome = r.outcome;
      show(result, true);
    } else {
      show(result, false);
    }
  }

  /** Say a hand, politely, when a card of it is turned face up: not while a card is
   * squeezed (its progress would flood), nor what was already there on joining. */
  announceHands(coup) {
    const round = coup?.roundId ?? null;
    const said = [];
    const now = { round };
    for (const hand of ["player", "banker"]) {
      const cards = coup ? coup[hand] : [];
      now[hand] = cards.filter((c) => c.up).map((c) => c.card).join(",");
      if (round && round === this.spoken?.round && now[hand] && now[hand] !== this.spoken[hand]) {
        said.push(handName(hand, cards, handTotal(coup, hand)));
      }
    }
    this.spoken = now;
    if (!said.length) return;
    // A card the croupier turned for someone keeps its note: it says why.
    const lead = this.justSaid?.tone === "croupier" ? `${this.justSaid.text}. ` : "";
    $("#announce").textContent = lead + said.join(". ");
  }

  /** The arrow keys, Home and End on a Sit button: the next free seat's button. */
  seatKey(ev, seat) {
    const buttons = [...document.querySelectorAll("#seats .sit-here")];
    const at = buttons.findIndex((b) => b.closest("[data-seat]")?.dataset.seat === String(seat));
    const last = buttons.length - 1;
    const next = {
      ArrowRight: (at + 1) % buttons.length,
      ArrowDown: (at + 1) % buttons.length,
      ArrowLeft: (at + last) % buttons.length,
      ArrowUp: (at + last) % buttons.length,
      Home: 0,
      End: last,
    }[ev.key];
    if (next === undefined) return;
    ev.preventDefault();
    for (const [k, b] of buttons.entries()) b.tabIndex = k === next ? 0 : -1;
    buttons[next].focus();
  }

  /** Where the focus is before a drawing, to find it again after (keepFocus). */
  focusWas() {
    const el = document.activeElement;
    const inTable = Boolean(el && el !== document.body && $("#table").contains(el));
    return {
      el,
      inTable,
      seat: inTable ? (el.closest("#seats [data-seat]")?.dataset.seat ?? null) : null,
      bar: inTable ? el.closest(".bar, .offer-box, .cut-box") : null,
    };
  }

  /** The focus never drops to the page's body because a drawing replaced, hid or
   * disabled the control that had it: it goes to the same control drawn anew, else the
   * next one of its bar, else the step the table waits for from this player, else to
   * "You: seat N" (after SIT), where it waits for such a step (ACCEPT, CUT, TOSS...). */
  keepFocus(was) {
    const usable = (el) => Boolean(el?.isConnected && !el.disabled && !el.closest("[hidden]") && el.checkVisibility?.() !== false);
    const now = document.activeElement;
    const parked = now?.id === "you-seat" && this.focusParked;
    if (now && now !== document.body && !parked && usable(now)) {
      this.focusParked = false;
      return;
    }
    if (!was.inTable && !parked) {
      this.focusParked = false; // the player put the focus elsewhere (a click on the felt)
      return;
    }
    const s = this.state;
    const candidates = [];
    if (was.inTable && (was.seat || was.el?.id === "act-sit")) {
      candidates.push(s.mySeat ? null : $(`#seats .seat[data-seat='${was.seat}'] .sit-here`), $("#seats .sit-here[tabindex='0']"));
    }
    if (was.bar) {
      // The next control of the same bar (PEEK -> CARD 1 -> CARD 2), then the ones before.
      const all = [...was.bar.querySelectorAll("button, input")];
      const at = all.indexOf(was.el);
      candidates.push(...all.slice(at + 1), ...all.slice(0, Math.max(0, at)));
    }
    candidates.push(...["#act-accept", "#cut-range", "#sq-toss", "#sq-peek", "#sq-card1", "#sq-card2"].map((sel) => $(sel)));
    if (s.actions.bet) candidates.push($("#chips .chip[aria-pressed='true']"));
    if (!s.mySeat && was.inTable) candidates.push($("#seats .sit-here[tabindex='0']"), $("#act-sit")); // after STAND
    const target = candidates.find(usable);
    if (target) {
      target.focus();
      this.focusParked = false;
    } else if (s.mySeat && !parked) {
      $("#you-seat").focus();
      this.focusParked = true;
    }
  }

  renderLayout() {
    const s = this.state;
    const stacks = s.stacks();
    const bet = s.actions.bet?.areas ?? {};
    const remove = s.actions.remove_bet?.areas ?? {};
    const open = this.connState === "open";
    for (const el of document.querySelectorAll("#layout .area")) {
      const area = el.dataset.area;
      const list = stacks[area] ?? [];
      const total = list.reduce((a, b) => a + b.amount, 0);
      const mine = list.find((x) => x.player === s.me)?.amount ?? 0;
      el.disabled = !open || !(bet[area] || remove[area]);
      el.dataset.mine = String(mine);
      el.dataset.total = String(total);
      el.title = bet[area]
        ? t("page.area.title", { min: formatMoney(bet[area].min), max: formatMoney(bet[area].max) })
        : t("page.area.max", { amount: formatMoney(s.maxFor(area)) });
      const pile = el.querySelector(".area-pile");
      fill(pile,
        mine ? h("span", { class: "pile mine" }, chipStack(mine, s.limits.min)) : null,
        total ? h("span", { class: "balloon" }, formatMoney(total)) : null,
      );
      el.querySelector(".area-others").textContent = list
        .filter((x) => x.player !== s.me)
        .map((x) => `${s.name(x.player)} ${formatMoney(x.amount)}`)
        .join(" · ");
    }
    const coup = s.shownCoup;
    // The areas the result says won (result.won): the page decides no rule. (A result
    // stored before the server said so: the areas it paid as won.)
    const won = new Set(
      coup?.result?.won ?? (coup?.payouts ?? []).filter((p) => p.outcome === "win").map((p) => p.area),
    );
    for (const el of document.querySelectorAll("#layout .area")) {
      el.dataset.won = coup?.result && won.has(el.dataset.area) ? "1" : "0";
    }
  }

  renderChips() {
    for (const el of document.querySelectorAll("#chips .chip")) {
      el.setAttribute("aria-pressed", String(Number(el.dataset.index) === this.chip));
    }
  }

  renderButtons() {
    const s = this.state;
    const a = s && this.connState === "open" ? s.actions : {};
    enable($("#act-sit"), Boolean(a.sit));
    show($("#act-sit"), !s?.mySeat);
    enable($("#act-stand"), Boolean(a.stand));
    show($("#act-stand"), Boolean(s?.mySeat));
    enable($("#act-regret"), Boolean(a.remove_bet));
    enable($("#act-clear"), Boolean(a.clear_bets));
    enable($("#act-same"), Boolean(a.same_bet));
    enable($("#act-done"), Boolean(a.done));
    show($("#offer-box"), Boolean(a.accept_shoe || a.decline_shoe));
    enable($("#act-accept"), Boolean(a.accept_shoe));
    enable($("#act-decline"), Boolean(a.decline_shoe));
    show($("#act-pass"), Boolean(a.pass_shoe));
    enable($("#act-pass"), Boolean(a.pass_shoe));
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
    show($("#bet-bar"), Boolean(s?.mySeat));
    show($("#chips"), Boolean(s?.mySeat));
  }

  renderMoney(balance, bet) {
    const s = this.state;
    const shown = balance ?? (s ? s.available ?? s.balance : this.identity?.available ?? this.identity?.balance);
    $("#balance").textContent = formatMoney(shown);
    $("#bet").textContent = formatMoney(bet ?? (s ? s.myStake : 0));
  }

  renderRoads() {
    const s = this.state;
    if (!s) return;
    const roads = s.roads ?? {};
    const st = roads.stats ?? {};
    $("#road-stats").textContent = st.coups != null
      ? t("page.roads.stats", { coups: st.coups, banker: st.banker, player: st.player, tie: st.tie, player_pair: st.player_pair, banker_pair: st.banker_pair, natural: st.natural })
      : t("page.roads.none");
    fill($("#road-bead"),
      roadGrid(roads.bead_plate ?? [], roads.rows ?? 6, (c) =>
        h("span", { class: `bead ${c.outcome}${c.player_pair ? " ppair" : ""}${c.banker_pair ? " bpair" : ""}`, title: `${c.outcome} ${c.total}` }, c.outcome[0].toUpperCase()),
      ),
    );
    fill($("#road-big"),
      roadGrid((roads.big_road ?? {}).cells ?? [], roads.rows ?? 6, (c) =>
        h("span", { class: `ring ${c.outcome}${c.natural ? " natural" : ""}`, title: `${c.outcome} ${c.total}${c.ties ? `, ${c.ties} tie(s)` : ""}` }, c.ties ? String(c.ties) : ""),
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
          { class: `ask ${side}` },
          `${side === "banker" ? "B" : "P"}? `,
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

// ---------------------------------------------------------------------------- pieces

function tierText(t) {
  const lim = t.limits ?? {};
  return `${formatMoney(lim.min)}–${formatMoney(lim.max)}`;
}

// ---------------------------------------------------------------------------- accessible names

/** The words a screen reader says for the table (one place, to be translated). */
/** The words a screen reader says (the catalogs' ``a11y.*``): cards, hands, seats. */
function a11yText(key, ...args) {
  switch (key) {
    case "card":
      return t("a11y.card", { rank: args[0], suit: args[1] });
    case "youSee":
      return t("a11y.you_see", { what: args[0], card: args[1] });
    case "hand": {
      const [hand, cards, total] = args;
      const list = cards.length ? cards.join(", ") : t("a11y.no_cards");
      return total == null ? t("a11y.hand", { hand, cards: list }) : t("a11y.hand_total", { hand, cards: list, total });
    }
    case "sitIn":
      return t("a11y.sit_in", { seat: args[0] });
    default:
      return t(`a11y.${key}`);
  }
}

/** A card in words: "9 of spades", "king of diamonds"; "face down" (and, for the one
 * squeezing it, what they see). */
export function cardName(c, { known = null, squeezing = false } = {}) {
  const words = (card) => {
    const r = card.slice(0, -1);
    const rank = /^[AKQJT]$/.test(r) ? t(`a11y.rank.${r}`) : r;
    return a11yText("card", rank, t(`a11y.suit.${card.slice(-1)}`));
  };
  if (c.up && c.card) return words(c.card);
  const down = a11yText(squeezing ? "squeezing" : "face_down");
  return known ? a11yText("youSee", down, words(known)) : down;
}

/** A hand in words: "Player: 9 of spades, king of diamonds — 9". */
function handName(hand, cards, total) {
  return a11yText("hand", HAND_NAMES[hand] ?? hand, cards.map((c) => cardName(c)), total);
}

function cardsLine(cards) {
  return (cards ?? []).map((c) => [h("span", { class: isRed(c) ? "red" : "black", role: "img", "aria-label": cardName({ card: c, up: true }) }, cardText(c)), " "]);
}

/** A hand's total as the server gave it (the card and result events), else null. */
function handTotal(coup, hand) {
  const total = coup?.totals?.[hand];
  return Number.isInteger(total) ? total : null;
}

/** One card: face up, face down, or being squeezed (`progress` percent; the face is
 * drawn only for the turner, who `known`s it). */
function cardEl(c, { known = null, progress, style, croupier = null, small = false, index, hand } = {}) {
  const face = c.up ? c.card : known;
  const state = c.up ? "up" : progress != null ? "squeeze" : "down";
  const el = h("span", {
    class: `card${small ? " small" : ""}${face && isRed(face) ? " red" : ""}`,
    dataset: { state, ...(index ? { index } : {}), ...(hand ? { hand } : {}), ...(c.up ? { card: c.card } : {}) },
    role: "img",
    "aria-label": cardName(c, { known, squeezing: progress != null }),
  });
  if (face) {
    const rank = face.slice(0, -1) === "T" ? "10" : face.slice(0, -1);
    const suit = cardText(face).slice(rank.length);
    el.append(
      h("span", { class: "face" }, h("span", { class: "corner tl" }, rank, h("br"), suit), h("span", { class: "pip" }, suit), h("span", { class: "corner br" }, rank, h("br"), suit)),
    );
  } else {
    el.append(h("span", { class: "face blank" }, "?"));
  }
  if (!c.up) {
    const back = h("span", { class: "back", dataset: { style: style || "peek" } });
    el.append(back);
    if (progress != null) {
      back.append(h("span", { class: "bend" }));
      bend(el, progress);
    }
  }
  if (croupier) {
    el.dataset.croupier = "1";
    el.append(h("span", { class: "croupier-mark", title: t("page.card.by_croupier", { who: croupier }) }, t("page.card.croupier")));
  }
  return el;
}

/** How far a squeezed card is bent (its back lifts; see chemmy.css). */
function bend(el, progress) {
  el.style.setProperty("--p", `${progress}%`);
  el.dataset.progress = String(progress);
  const label = el.querySelector(".bend");
  if (label) label.textContent = `${progress}%`;
}

/** A pile of a few chip discs for an amount (display only). */
function chipStack(amount, unit) {
  const discs = Math.max(1, Math.min(6, Math.round(Math.log2(amount / (unit || 100) + 1))));
  return [...Array.from({ length: discs }, (_, i) => h("span", { class: "disc", vars: { "--i": i } })), h("span", { class: "pile-value" }, formatMoney(amount))];
}

/** A chip's value, its size fitted to the chip by its length (chemmy.css). */
function chipLabel(text) {
  return h("span", { class: "chip-label", vars: { "--chars": text.length } }, text);
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

// ---------------------------------------------------------------------------- go

const app = new App();
if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", () => app.start());
else app.start();
