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
 * app.js is the wiring: the connection, the host page, the table's stream of events into
 * the state (state.js), the messages, and the commands (`cmd`, the chips placed). Its
 * screens draw from that state, as the terminal client's (client_cli/tui/): lobby.js
 * (the tables), table.js (the felt, seats, shoe, hands and buttons), squeeze.js (the
 * squeeze bar and a card opening), roads.js (roads and odds), dialogs.js (cashier,
 * history, help, options), grid.js (my tables: up to four, each this page in a frame of
 * its own, `?grid=1`); cards.js draws and names the cards, dom.js builds elements.
 *
 * What it must never do: decide a rule. Every button is enabled from the server's
 * `actions` (state.actions); a click sends the command and the server's refusal, if
 * any, goes to the message display. It changes nothing on its own: the table moves
 * only with the server's events. No innerHTML anywhere (the CSP enforces Trusted Types).
 */

import { ChemmyError, connect } from "./chemmy.js";
import { Contributor } from "./contribute.js";
import { verifyShoe } from "./fairness.js";
import { chooseLanguage, language, refusalText, setCurrency, setLanguage, t, translatePage } from "./i18n.js";
import { AREA_NAMES, PHASE_NAMES, TableState, formatMoney, resultText } from "./state.js";
import { $, h, show, store } from "./dom.js";
import { Dialogs, loadOptions, refusalOf, restrictionText } from "./dialogs.js";
import { GridView } from "./grid.js";
import { LobbyView } from "./lobby.js";
import { RoadsView } from "./roads.js";
import { SQUEEZE_SECONDS, Squeeze } from "./squeeze.js";
import { TableView } from "./table.js";

// ---------------------------------------------------------------------------- constants

const RESULT_MIN_MS = 5000; // the settled coup stays at least this long under others' chips
const HOLD_MS = 5000; // a note to read (a refused debit) stays at least this long on the display
const READY_MS = 2000; // an embedded page says chemmy:ready this often until its host answers
/** What a prompt on the display asks of the player (its actions): while the server still
 * offers one, a minor note goes to the log only, and the prompt stays (issue 34 §7). */
const PROMPT_ACTIONS = ["accept_shoe", "cut", "squeeze", "turn", "toss"];
/** The operations a break or a self-exclusion in force rules out (the hello's
 * `restriction`, docs/protocol.md §6 take_break): their buttons are not offered. */
const RESTRICTED_ACTIONS = ["sit", "bet", "same_bet", "accept_shoe"];
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

// ---------------------------------------------------------------------------- the app

class App {
  constructor() {
    this.opts = loadOptions();
    this.sounds = new Sounds(this);
    this.client = null;
    this.identity = null;
    this.restriction = null; // the break or self-exclusion in force (the hello reply's)
    this.tableId = null;
    this.state = null;
    this.tables = [];
    this.chip = 0;
    this.placed = []; // [area, amount] placed this round, for REGRET
    this.log = [];
    this.chat = [];
    this.parentOrigin = null;
    this.connState = "idle";
    this.inflight = 0;
    this.contributor = new Contributor(); // this page's own randomness in every shoe
    this.messages = 0; // how many times the message display changed
    this.settledAt = 0; // performance.now() at the last settled coup
    this.heldUntil = 0; // performance.now() until which the message display keeps its note
    // The screens, drawn from this state (client_cli/tui/ has the same ones).
    this.lobby = new LobbyView(this);
    this.table = new TableView(this);
    this.squeeze = new Squeeze(this);
    this.roads = new RoadsView(this);
    this.dialogs = new Dialogs(this);
    this.grid = new GridView(this);
  }

  // -- start --------------------------------------------------------------------------
  async start() {
    this.params = new URLSearchParams(location.search);
    // A table of "my tables" (grid.js): this page in its frame, telling the page around
    // it its status; that page shows the money and the reality check for every table.
    this.inGrid = this.params.get("grid") === "1" && window.parent !== window;
    if (this.inGrid) {
      document.body.classList.add("in-grid");
      this.parentOrigin = location.origin;
    }
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
      this.announceReady();
    }
  }

  /** `chemmy:ready` to the host page (to `*`: it carries nothing), said again every
   * READY_MS until the host answers (its script may start after the first one). */
  announceReady() {
    if (this.client) return;
    this.toParent({ type: "chemmy:ready" }, "*");
    setTimeout(() => this.announceReady(), READY_MS);
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
    this.grid.renderMenu();
    if (this.grid.shown) this.grid.renderTabs();
    this.table.renderMoney(); // the bottom bar's amounts as the language writes them
    if (!this.client && $("#conn").dataset.state === "waiting") {
      this.waitForHost(this.hostIgnored ?? null); // still waiting for the host page
      return;
    }
    const conn = { open: "connected", reconnecting: "reconnecting", closed: "disconnected" }[this.connState] ?? "connecting";
    $("#conn").textContent = t(`page.conn.${conn}`);
    if (!this.identity && this.connState === "closed") $("#plaque").textContent = t("page.plaque.not_connected");
    if (this.identity) {
      $("#who").textContent = this.identity.guest ? t("page.guest", { name: this.identity.name }) : this.identity.name;
      this.showRestriction(this.restriction, false);
      if (document.body.dataset.view === "lobby") $("#plaque").textContent = t("page.choose_table");
    }
    if (this.state) {
      if (document.body.dataset.view === "table") {
        this.table.buildLayout();
        this.fitAreaNames();
      }
      this.render();
      this.roads.render();
    } else if (this.identity && document.body.dataset.view === "lobby") {
      this.refreshLobby();
    }
    this.sayAgain();
  }

  /** The message display in the language now spoken: what it says now (the table's
   * phase, the lobby's invitation, the connection), not the last note in the old one. */
  sayAgain() {
    const tone = $("#message").dataset.tone ?? "info";
    if (this.connState === "closed") return; // the closed banner and message were redrawn
    if (this.messages === this.connectingMessage) return; // the hello replaces it, in this language
    if (this.state && document.body.dataset.view === "table") {
      const s = this.state;
      this.setMessage(s.phaseText() || (s.lastResult ? resultText(s.lastResult) : ""), tone === "turn" ? "turn" : "info");
    }
    else if (this.identity && document.body.dataset.view === "lobby") this.setMessage(t("page.choose_table"));
    else if (this.client && this.connState !== "open") this.setMessage(t("page.connecting"));
  }

  /** The page's own address as `ws://`/`wss://`; opened for one table, with
   * `?table=ID`, so that a load balancer can send every connection of a table to one
   * process of a cluster (deploy/nginx). */
  defaultUrl(table = null) {
    const u = new URL(".", location.href);
    u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
    u.search = table ? `?table=${encodeURIComponent(table)}` : "";
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

  toParent(message, origin = this.parentOrigin ?? this.params.get("parent")) {
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
    // The host's url as given; the page's own names the table it opens first (a
    // reload's too: the table this tab was at), and follows the player's table (openTable).
    this.ownUrl = !url;
    const first = table || (this.inGrid ? null : store.get("session", "chemmy.table"));
    this.client = connect(url || this.defaultUrl(first), auth);
    this.setMessage(t("page.connecting"));
    this.connectingMessage = this.messages; // replaced at the hello, if still shown
    show($("#banner"), false);
    window.chemmyPage = this; // for operators debugging an embedding (and the tests)
    const c = this.client;
    c.on("status", (s) => this.onStatus(s));
    c.on("hello", (hello) => this.onHello(hello, table).catch((err) => console.error(err)));
    c.on("snapshot", ({ table: t, snapshot }) => this.onSnapshot(t, snapshot));
    c.on("resumed", ({ table: tb }) => tb === this.tableId && this.note(t("page.resumed")));
    c.on("event", (ev) => this.onEvent(ev));
    c.on("progress", ({ table, hand, card, percent, turner }) =>
      this.onEvent({ table, kind: "progress", data: { hand, card, percent, turner } }),
    );
    c.on("chat", (m) => this.onChat(m));
    c.on("error", (m) => this.note(refusalOf(m), "refused"));
    // The reality check: a modal until it is answered (bets wait for it, the server's).
    c.on("message", (m) => {
      if (m.type === "reality_check" && !this.inGrid) this.dialogs.showReality(m); // (a grid's: its page's)
      // Answered on another screen of the player's: this one stops asking.
      else if (m.type === "reality_answered") this.dialogs.realityAnswered(m);
    });
  }

  // -- connection ----------------------------------------------------------------------
  onStatus(s) {
    // A move to the table's address (openTable) is not a lost connection: the pill says
    // "connecting", and the host hears nothing (it stays open for the player).
    const moving = s.moving || s.moved;
    this.connState = s.state;
    const pill = $("#conn");
    pill.dataset.state = s.state;
    const banner = $("#banner");
    if (s.state === "open") {
      pill.textContent = t("page.conn.connected");
      show(banner, false);
      if (s.resumed && !moving) {
        this.note(s.sameIdentity ? t("page.reconnected") : t("page.reconnected_new_guest"), "you");
      }
    } else if (s.state === "reconnecting" && moving) {
      pill.textContent = t("page.conn.connecting");
    } else if (s.state === "reconnecting") {
      pill.textContent = t("page.conn.reconnecting");
      banner.textContent =
        s.attempt > 0
          ? t("page.banner.reconnecting", { attempt: s.attempt })
          : t("page.connecting");
      banner.dataset.tone = "warn";
      show(banner, s.attempt > 0);
      if (s.attempt === 1 && s.code !== undefined) this.note(t("page.connection_lost"), "refused");
    } else if (s.state === "closed" && /^origin_not_allowed\b/.test(s.reason ?? "")) {
      // This site may not show the table (the server's --origins, docs/protocol.md §2):
      // said plainly, and to the host page (below), instead of reconnecting for ever.
      pill.textContent = t("page.conn.disconnected");
      banner.textContent = t("page.banner.origin", { origin: location.origin });
      banner.dataset.tone = "error";
      show(banner, true);
      $("#plaque").textContent = t("page.plaque.not_connected");
      this.setMessage(t("page.origin_refused"), "refused", "origin_not_allowed");
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
      // The message display too: not "Connecting…" under a refused sign-in.
      this.setMessage(auth ? t("page.signed_out") : t("page.disconnected"), "refused", auth ?? null);
    } else {
      pill.textContent = t("page.conn.connecting");
    }
    const why = s.state === "closed" ? { code: s.code ?? null, reason: s.reason ?? null } : {};
    if (!moving) this.toParent({ type: "chemmy:status", state: s.state, player: this.identity?.player ?? null, ...why });
    this.render(); // every button follows the connection too
  }

  async onHello(hello, table) {
    const first = !this.identity;
    this.identity = hello;
    setCurrency(hello.currency ?? null, hello.decimals); // every amount in the player's money
    // The operator's money (docs/wallet.md): no play-money deposits; their site takes them.
    document.body.classList.toggle("no-deposits", hello.deposits === false);
    // The token's language before anything is drawn: every word and amount from the
    // first frame in it (issue 34 §3), not redrawn after a moment in the browser's.
    if (hello.language) await this.applyLanguage();
    if (hello.resume) store.set("session", "chemmy.resume", hello.resume);
    $("#who").textContent = hello.guest ? t("page.guest", { name: hello.name }) : hello.name;
    if (this.messages === this.connectingMessage) this.setMessage(t("page.connected_as", { name: hello.name }), "you");
    if (!this.state) this.table.renderMoney(undefined, 0);
    this.showRestriction(hello.restriction);
    if (!first) return;
    const target = table || (this.inGrid ? null : store.get("session", "chemmy.table"));
    if (target) this.openTable(target);
    else this.showLobby();
  }

  /** A break or a self-exclusion in force (the hello reply's `restriction`, or
   * take_break's): said at once, in a banner under the top bar (null: none). */
  showRestriction(restriction, say = true) {
    this.restriction = restriction ?? null;
    const banner = $("#restriction-banner");
    banner.textContent = restriction ? restrictionText(restriction) : "";
    banner.dataset.tone = restriction ? "warn" : "";
    show(banner, Boolean(restriction));
    if (restriction && say) this.note(banner.textContent, "refused");
    if (this.maskRestricted()) this.render();
  }

  /** A break or a self-exclusion in force (the server's `restriction`, until its end):
   * the operations it rules out are not offered, as the server refuses them (issue 34
   * §7: every Sit button was enabled, each tap refused). True when it took any away. */
  maskRestricted() {
    const r = this.restriction;
    const s = this.state;
    const now = this.client?.serverNow() ?? Date.now() / 1000;
    if (!s || !r || !(Number(r.until) > now)) return false;
    const masked = RESTRICTED_ACTIONS.filter((name) => name in s.actions);
    for (const name of masked) delete s.actions[name];
    return masked.length > 0;
  }

  // -- lobby ---------------------------------------------------------------------------
  showLobby() {
    return this.lobby.show();
  }

  refreshLobby() {
    return this.lobby.refresh();
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
    if (!this.state || this.state === state) this.table.renderMoney();
    if ($("#dlg-cashier").open) this.dialogs.renderCashier();
  }

  async openTable(table) {
    this.lobby.stop();
    this.tableId = table;
    this.lastTable = table; // "verify the last shoe" from the lobby too
    this.state = new TableState(this.identity?.player ?? null);
    this.placed = [];
    this.squeeze.reset();
    try {
      // Opened from the lobby: the connection moves to the table's address, where a
      // cluster's load balancer sends every connection of the table (deploy/nginx).
      // (Refused there: it stays where it is, and the table is joined on that connection.)
      const routed = this.defaultUrl(table);
      if (this.ownUrl && this.client.url !== routed) {
        await this.client.moveTo(routed).catch((err) => {
          if (err.code === "closed") throw err;
        });
      }
      if (this.tableId !== table) return; // (another table was opened meanwhile)
      await this.client.join(table);
    } catch (err) {
      if (this.tableId !== table) return; // (another table was opened meanwhile)
      this.tableId = null;
      this.state = null;
      if (!this.inGrid) store.remove("session", "chemmy.table");
      this.note(t("page.cannot_join", { table, error: err.message }), "refused");
      this.showLobby();
      return;
    }
    if (!this.inGrid) store.set("session", "chemmy.table", table);
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
    if (!this.inGrid) store.remove("session", "chemmy.table");
    this.showLobby();
  }

  /** The operator closed `table` (its `closed` event): the player is sent to the lobby
   * at once, with the closing's words (and any refund) on the display, the table
   * forgotten by the client (it is not joined again after a reconnection). */
  tableClosed(table, notes) {
    const name = this.state?.options?.name ?? table;
    this.client.tables.delete(table);
    this.tableId = null;
    this.state = null;
    this.placed = [];
    this.squeeze.reset();
    if (!this.inGrid) store.remove("session", "chemmy.table");
    this.showLobby();
    const said = (notes ?? []).map((n) => n.text).filter(Boolean).join(" · ");
    this.note(t("page.table_closed", { name, what: said || t("phase_sentence.closed") }), "refused");
    this.refreshMoney(); // wagers refunded, chips back: the server's figures
  }

  // -- the table's stream --------------------------------------------------------------
  onSnapshot(table, snapshot) {
    if (table !== this.tableId) return;
    const first = document.body.dataset.view !== "table";
    this.state.me = this.identity?.player ?? this.state.me;
    const notes = this.state.load(snapshot);
    this.maskRestricted();
    this.squeeze.reset();
    const fromLobby = first && $("#lobby").contains(document.activeElement);
    if (first) {
      show($("#lobby"), false);
      show($("#table"), true);
      document.body.dataset.view = "table";
      this.table.buildLayout();
      this.fitAreaNames();
    }
    this.showNotes(notes);
    this.render();
    this.contribute();
    // A table chosen in the lobby: the focus goes to its Sit buttons, not the body (or
    // waits on "You are watching" for them: they come with the actions, maybe later).
    if (fromLobby) {
      const sit = $("#seats .sit-here[tabindex='0']");
      (sit ?? $("#you-seat")).focus();
      this.table.focusParked = !sit;
    }
    this.roads.fetch();
  }

  onEvent({ table, kind, data }) {
    if (table !== this.tableId || !this.state) return;
    let notes;
    try {
      notes = this.state.apply(kind, data);
      this.maskRestricted();
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
      this.squeeze.reset();
      this.roads.fetch();
      if (Number.isInteger(data.net) && data.net > 0) this.sounds.play("win");
      if ($("#dlg-history").open) this.dialogs.loadHistory();
    } else if (kind === "betting_opened") {
      this.placed = [];
    } else if (kind === "card") {
      delete this.squeeze.local[`${data.hand}:${data.index}`];
      this.sounds.play("card");
    } else if (kind === "bets" && data.player === me) {
      this.sounds.play("chip");
      const bets = Object.entries(data.bets ?? {}).filter(([, v]) => v);
      const what = bets.map(([a, v]) => t("page.your_bets.item", { area: AREA_NAMES[a] ?? a, amount: formatMoney(v) })).join(" · ");
      this.setMessage(what ? t("page.your_bets", { bets: what }) : t("page.your_bets_none"), "you"); // the display only, not the log
    } else if (kind === "shoe_started" || kind === "burned") {
      this.roads.fetch(); // the burn card is seen: the odds change
    } else if ((kind === "stood" || kind === "bets_void") && data.player === me) {
      this.refreshMoney(); // the chips placed came back (the event does not say how much)
    } else if (kind === "debit_refused" && data.player === me) {
      // The wallet refused: what it holds now is the server's word (issue 34 §3), not
      // the Available before the bets (a seamless wallet's balance moves on its own).
      this.refreshMoney();
    } else if (kind === "closed") {
      // The operator closed the table: back to the lobby at once, saying so.
      this.tableClosed(table, notes);
      return;
    }
    if ((kind === "turn" && data.turner === me) || (kind === "shoe_offered" && data.player === me) || (kind === "cut_offered" && data.player === me)) {
      this.sounds.play("turn");
    }
    this.retireLast();
    this.showNotes(notes);
    this.render();
    this.contribute();
  }

  /** "Verify this shoe" (docs/fairness.md, fairness.js): the table's last revealed shoe
   * (or shoe number `shoe`) checked in this browser, seed, contributions and every coup,
   * without trusting the server's own check. Says the result; returns the report. */
  async verifyShoe(table = this.tableId ?? this.lastTable, shoe = null) {
    const status = $("#verify-status");
    if (!table) {
      status.textContent = t("page.verify.no_table");
      return null;
    }
    status.textContent = t("page.verify.checking");
    let record;
    try {
      record = (await this.client.send("shoe_record", shoe ? { table, shoe } : { table })).record;
    } catch (err) {
      status.textContent = refusalText(err.code, err.message) || err.code;
      return null;
    }
    const report = await verifyShoe(record);
    const fields = {
      shoe: record.shoe_no,
      coups: t("page.verify.coups", { count: report.coups }),
      randomness: t("page.verify.randomness", { count: report.contributions }),
    };
    status.textContent = report.ok
      ? t(report.contributions ? "page.verify.ok_contributions" : "page.verify.ok", fields)
      : t("page.verify.failed", { ...fields, problems: report.problems.join("; ") });
    status.dataset.tone = report.ok ? "ok" : "refused";
    return { ...report, shoe: record.shoe_no };
  }

  /** The page's own randomness in the shoe (docs/fairness.md §9, contribute.js): committed
   * and revealed by itself whenever the server's actions ask for it. */
  async contribute() {
    const table = this.tableId;
    const fields = await this.contributor.next(table, this.state);
    if (fields && table === this.tableId) await this.cmd("contribute", fields);
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

  // -- messages ------------------------------------------------------------------------
  showNotes(notes) {
    for (const n of notes ?? []) {
      this.note(n.text, n.tone, null, n.hold, n.log);
      if (n.say) this.sounds.say(n.say);
    }
  }

  /** Whether the display shows a prompt the server still asks the player to answer
   * (the shoe offered, the cut, the cards to turn: PROMPT_ACTIONS). */
  promptPending() {
    const a = this.state?.actions ?? {};
    return $("#message").dataset.tone === "turn" && PROMPT_ACTIONS.some((name) => a[name]);
  }

  /** A note on the message display and in the table log. A `hold` note (a refused
   * debit: the player must read it) stays on the display HOLD_MS: the notes that follow
   * at once (the coup dealt without them, the next round) go to the log only, unless the
   * player has something to do or was refused something. */
  note(text, tone = "info", code = null, hold = false, logText = text) {
    if (!text) return;
    const now = performance.now();
    // A prompt outranks a note: while the server still asks for its answer, only a new
    // prompt, a refusal or a note to read replaces it ("Your randomness is committed"
    // goes to the log under "The shoe is offered to you: ACCEPT or DECLINE").
    const prompted = this.promptPending() && !["turn", "refused"].includes(tone) && !hold;
    if (!prompted && (hold || now >= this.heldUntil || ["turn", "refused", "you"].includes(tone))) {
      this.setMessage(text, tone, code);
      if (hold) this.heldUntil = now + HOLD_MS;
    } else if (this.isResult(text)) {
      this.announce(text, tone); // the coup's result is said, though the display keeps the prompt
    }
    this.log.push({ text: logText, tone });
    this.log.splice(0, this.log.length - 200);
    const list = $("#log");
    list.append(h("li", { dataset: { tone } }, logText));
    while (list.children.length > 200) list.firstChild.remove();
    list.scrollTop = list.scrollHeight;
  }

  setMessage(text, tone = "info", code = null) {
    this.messages += 1;
    this.heldUntil = 0; // a new message (the player's own bets): whatever was held is read
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
    // The coup's result and what follows in the same task (the shoe offered, the next
    // round) are said together: the second would replace the first before it is read.
    const before = this.justSaid;
    const lead = before?.result && before.text !== text ? `${before.text}. ` : "";
    $("#announce").textContent = lead + text;
    this.justSaid = { text: lead + text, tone, result: Boolean(lead) || this.isResult(text) };
    queueMicrotask(() => (this.justSaid = null));
  }

  /** Whether ``text`` is the settled coup's result line (the player's part of it too). */
  isResult(text) {
    return Boolean(text) && text === this.state?.resultLine;
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
    else if (err.code === "limit_reached") text = refusalOf(err);
    else if (STALE.has(err.code)) {
      // The table moved on before the click arrived: said as that, not as a refusal
      // of the server's words ("Refused: Too late: the table is in betting").
      const phase = s ? PHASE_NAMES[s.phase] ?? s.phase : "";
      this.note(t("page.refused.too_late", { phase }), "refused", err.code);
      this.sounds.play("refused");
      return;
    } else text = refusalText(err.code, err.message) || err.code;
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

  /** The rack: the table's standard chips (table.js `chipSet`). */
  chips() {
    return this.table.rack();
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

  // -- static bindings -------------------------------------------------------------------
  bindStatic() {
    $("#btn-lobby").addEventListener("click", () => (this.tableId ? this.leaveTable() : this.showLobby()));
    this.grid.bind();
    $("#btn-history").addEventListener("click", () => this.dialogs.openHistory());
    $("#btn-verify").addEventListener("click", () => this.verifyShoe());
    $("#btn-help").addEventListener("click", () => this.dialogs.openHelp());
    $("#btn-options").addEventListener("click", () => this.dialogs.openOptions());
    $("#btn-cashier").addEventListener("click", () => this.dialogs.openCashier());
    this.dialogs.bind();
    this.table.bind();
    this.squeeze.bind();
    $("#chat-form").addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const input = $("#chat-input");
      const text = input.value.trim();
      if (!text) return;
      if (await this.cmd("chat", { text })) input.value = "";
    });
    setInterval(() => this.table.renderClock(), 250);
  }

  applyOptions() {
    document.body.dataset.balloons = this.opts.balloons ? "on" : "off";
    document.body.style.setProperty("--deal-ms", `${Math.round(SQUEEZE_SECONDS[this.opts.speed] * 300)}ms`);
  }

  // -- drawing -----------------------------------------------------------------------------
  /** The bet areas' names fitted to their areas: a name whose longest word is wider
   * than its area (German UNENTSCHIEDEN on a phone) is drawn smaller, never broken
   * inside the word (issue 34 §7). The areas are table.js's; this only sizes the text. */
  fitAreaNames() {
    this.areaWatch ??= new ResizeObserver(() => requestAnimationFrame(() => this.fitAreaNames()));
    const layout = $("#layout");
    if (!this.areaWatched) {
      this.areaWatch.observe(layout);
      this.areaWatched = true;
    }
    const canvas = (this.measure ??= document.createElement("canvas").getContext("2d"));
    for (const el of layout.querySelectorAll(".area-name")) {
      el.style.removeProperty("font-size");
      const cs = getComputedStyle(el);
      // The room is the area's (its content box), not the name's own box, which a short
      // name shrinks to.
      const area = el.parentElement;
      const as = getComputedStyle(area);
      const room = area.clientWidth - parseFloat(as.paddingLeft) - parseFloat(as.paddingRight);
      if (!(room > 0)) continue;
      canvas.font = `${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
      const size = parseFloat(cs.fontSize);
      const spacing = parseFloat(cs.letterSpacing) || 0;
      const upper = cs.textTransform === "uppercase";
      const widest = Math.max(
        ...el.textContent.split(/\s+/).map((word) => {
          const w = upper ? word.toLocaleUpperCase(language()) : word;
          return canvas.measureText(w).width + spacing * w.length;
        }),
      );
      if (widest > room) el.style.setProperty("font-size", `${Math.max(7, Math.floor(size * (room / widest) * 0.97 * 10) / 10)}px`);
    }
  }

  /** The table screen drawn again (table.js), and the host page told. */
  render() {
    if (!this.state || document.body.dataset.view !== "table") return;
    this.table.render();
    const a = this.state.actions;
    this.toParent({
      type: "chemmy:status",
      state: this.connState,
      player: this.identity?.player ?? null,
      table: this.tableId,
      seat: this.state.mySeat,
      balance: this.state.balance,
      // for a grid's tabs (grid.js): the phase, whether the table waits for you, your chips
      phase: this.state.phase,
      turn: PROMPT_ACTIONS.some((name) => a[name]),
      stake: this.state.myStake,
    });
  }

}

// ---------------------------------------------------------------------------- go

const app = new App();
if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", () => app.start());
else app.start();
