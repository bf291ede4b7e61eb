/**
 * chemmy.js — a Chemmy client for the browser: one ES module, no dependencies, no build.
 *
 * It speaks the JSON subprotocol of docs/protocol.md (`chemmy.v1.json`): says `hello`
 * (with the operator's token, or as a guest), joins tables and keeps each table's last
 * `seq`, matches every reply to its request by `id`, and reconnects by itself with
 * backoff, resuming each table from its last `seq` (or taking the fresh snapshot the
 * server sends instead). Everything else reaches the page as callbacks.
 *
 * It holds no rule of the game and never sends a command by itself except `hello`,
 * `join` (to resume) and `ping` (for the server's clock): what a player may do comes
 * from the server (`snapshot.you.actions`, then the `actions` of events).
 *
 *     import { connect } from "./chemmy.js";
 *     const chemmy = connect("wss://casino.example/chemmy/", { token });
 *     chemmy.on("snapshot", ({ table, snapshot }) => draw(snapshot));
 *     chemmy.on("event", ({ table, seq, kind, data }) => apply(kind, data));
 *     chemmy.on("status", ({ state }) => showConnection(state));
 *     const me = await chemmy.ready;               // the hello reply
 *     const reply = await chemmy.join("t1");       // {snapshot, seq, ...}
 *     await chemmy.send("bet", { table: "t1", area: "player", amount: 500 });
 *
 * Callbacks (`on(name, fn)` returns a function that removes it):
 *   status    {state, ...}: "connecting", "open" ({identity, resumed, sameIdentity, moved}),
 *             "reconnecting" ({attempt, delay, code, reason, moving}), "closed" ({code, reason}:
 *             a refused hello, 4000; this page's origin not allowed, 4003)
 *   hello     the hello reply (player, name, guest, roles, balance)
 *   snapshot  {table, seq, snapshot}: replace what you know of the table
 *   resumed   {table, seq}: the missed events follow as "event"s
 *   event     {table, seq, kind, data}: in seq order, each exactly once
 *   progress  {table, seq, hand, card, percent, turner}: a squeezed card's bend, shown
 *             and never stored (no seq of its own: it follows the event `seq`; one
 *             that does not follow the last event seen is dropped; none is replayed)
 *   chat      {table, seq, player, name, text, time}: a chat line, shown and never
 *             stored (its `seq` is the last event's before it, as a `progress`'s)
 *   error     an error reply nobody waits for ({code, message})
 *
 * A request that fails rejects with a ChemmyError: `code` is the server's stable code
 * (docs/protocol.md §13), or "disconnected" (the command was not sent, or its reply was
 * lost with the connection), "timeout", "closed".
 */

export const SUBPROTOCOL = "chemmy.v1.json";
/** The close code of a page whose origin the server does not take (docs/protocol.md §14):
 * the client stops ("closed", reason `origin_not_allowed: …`) instead of reconnecting. */
export const CLOSE_ORIGIN = 4003;

/** An error reply, or a request that could not be answered. */
export class ChemmyError extends Error {
  constructor(code, message, reply = null) {
    super(message || code);
    this.name = "ChemmyError";
    this.code = code;
    this.reply = reply;
  }
}

const DEFAULTS = {
  backoffMin: 0.25, // seconds before the first reconnection attempt
  backoffMax: 8, // ... doubling up to this
  requestTimeout: 20, // seconds a request waits for its reply
  pingInterval: 30, // seconds between clock samples
  reconnect: true,
  WebSocket: globalThis.WebSocket,
};

/** Connect and return the client (see ChemmyClient). The connection opens right after
 * the current script step, so callbacks added at once see every status. */
export function connect(url, auth = {}, options = {}) {
  const client = new ChemmyClient(url, auth, options);
  queueMicrotask(() => client.open());
  return client;
}

function nonce() {
  const bytes = new Uint8Array(6);
  globalThis.crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

export class ChemmyClient {
  /**
   * @param {string} url  ws:// or wss:// address of the server (or of the proxy before it)
   * @param {{token?: string, guest?: boolean, name?: string, resume?: string}} auth
   * @param {object} options  backoffMin, backoffMax, requestTimeout, pingInterval (seconds),
   *   reconnect (default true), WebSocket (a constructor, for tests)
   */
  constructor(url, auth = {}, options = {}) {
    this.url = url;
    this.auth = { ...auth };
    this.options = { ...DEFAULTS, ...options };
    this.state = "idle";
    this.identity = null;
    this.closeReason = null;
    /** table id -> {seq: number|null, joining: boolean} */
    this.tables = new Map();
    this._handlers = new Map();
    this._pending = new Map();
    this._prefix = nonce(); // ids never repeat across page loads (they are idempotency keys)
    this._next = 1;
    this._ws = null;
    this._attempt = 0;
    this._timer = null;
    this._pinger = null;
    this._offset = 0; // server clock minus ours, seconds
    this._bestRtt = Infinity;
    this._stopped = false;
    this._moving = null; // (moveTo's: where from, and its promise's failure)
    this._quiet = false; // (a move, or its way back: its statuses say `moving`)
    this.ready = new Promise((resolve, reject) => {
      this._ready = { resolve, reject };
    });
    this.ready.catch(() => {}); // a fatal hello is reported through "status" too
  }

  // ------------------------------------------------------------------ callbacks
  on(name, fn) {
    if (!this._handlers.has(name)) this._handlers.set(name, new Set());
    this._handlers.get(name).add(fn);
    return () => this._handlers.get(name)?.delete(fn);
  }

  _emit(name, detail) {
    for (const fn of this._handlers.get(name) ?? []) {
      try {
        fn(detail);
      } catch (err) {
        console.error(`chemmy: a "${name}" callback failed`, err);
      }
    }
  }

  _status(state, detail = {}) {
    this.state = state;
    this._emit("status", { state, ...detail });
  }

  // ------------------------------------------------------------------ the connection
  /** Open the connection (connect() does this); after close(), open again. */
  open() {
    this._stopped = false;
    clearTimeout(this._timer);
    this._status(this._attempt === 0 && !this.identity ? "connecting" : "reconnecting", {
      attempt: this._attempt,
      ...(this._quiet ? { moving: true } : {}),
    });
    let ws;
    try {
      ws = new this.options.WebSocket(this.url, SUBPROTOCOL);
    } catch (err) {
      this._fatal(1006, `cannot connect to ${this.url}: ${err.message}`);
      return;
    }
    this._ws = ws;
    ws.onopen = () => this._onOpen(ws);
    ws.onmessage = (ev) => this._onFrame(ws, ev.data);
    ws.onclose = (ev) => this._onClose(ws, ev.code, ev.reason);
    ws.onerror = () => {}; // onclose follows with the code
  }

  /** Close for good (no reconnection). */
  close() {
    this._stopped = true;
    this._endMove("the client was closed");
    clearTimeout(this._timer);
    clearInterval(this._pinger);
    const ws = this._ws;
    this._ws = null;
    if (ws && ws.readyState <= 1) ws.close(1000, "bye");
    this._failPending("closed", "the connection was closed");
    this._status("closed", { code: 1000, reason: "closed by the page" });
  }

  /** Go on at `url` (a cluster's load balancer sends every connection naming a table,
   * `?table=ID`, to one process: deploy/nginx): once the requests in flight are answered
   * (2 s at most; one still unanswered then fails `disconnected`: retry it with its `id`),
   * the current connection is closed and
   * one opened there; the tables joined are joined again from their last seq, as after a
   * reconnection, and the "open" status says `moved`. Resolves with its hello. If the new
   * address cannot be reached or refuses the hello, the client goes back to the old one
   * and the promise rejects with why; with `superseded` if another move follows, with
   * `closed` if the client closes first. */
  async moveTo(url) {
    for (let waited = 0; this._pending.size > 0 && waited < 2000; waited += 20) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    if (this._stopped) throw new ChemmyError("closed", "the client was closed");
    if (url === this.url && this.state === "open") return this.identity;
    // A move on its way is given up for this one; back means where the client was let in.
    const from = this._moving?.from ?? this.url;
    this._moving?.fail(new ChemmyError("superseded", "moved elsewhere meanwhile"));
    const moved = new Promise((resolve, reject) => {
      const off = this.on("status", (s) => {
        if (s.state === "open") resolve(s.identity);
        else if (s.state === "closed") reject(new ChemmyError("closed", s.reason ?? "closed"));
        else return;
        off();
      });
      this._moving = { from, fail: (err) => (off(), reject(err)) };
    });
    this._quiet = true;
    this._reopen(url, "moved");
    return moved;
  }

  /** The current connection closed (`why`), one opened at `url` at once. */
  _reopen(url, why) {
    this.url = url;
    const ws = this._ws;
    this._ws = null;
    clearTimeout(this._timer);
    clearInterval(this._pinger);
    this._failPending("disconnected", "the connection moved");
    for (const t of this.tables.values()) t.joining = false;
    if (ws && ws.readyState <= 1) ws.close(1000, why);
    this._attempt = 0;
    this.open();
  }

  /** The `moveTo`'s address could not be reached, or refused the hello (`err`): back
   * to the address it came from, where the client was let in; the move fails. */
  _moveBack(err) {
    const { from, fail } = this._moving;
    this._moving = null;
    this._quiet = true; // (the way back is part of the move)
    fail(err);
    this._reopen(from, "back");
  }

  /** The client stops: a move on its way fails. */
  _endMove(reason) {
    this._moving?.fail(new ChemmyError("closed", reason));
    this._moving = null;
    this._quiet = false;
  }

  /** A fresh token (the old one expires): used from the next hello on. If the last
   * hello failed for want of a valid token, connect again at once. */
  setToken(token) {
    this.auth = { ...this.auth, token, guest: false };
    if (this.state === "closed" && !this._ws) {
      this._attempt = 0;
      this.open();
    }
  }

  async _onOpen(ws) {
    if (ws !== this._ws) return;
    const before = this.identity;
    let hello;
    try {
      hello = await this._hello();
    } catch (err) {
      if (this._moving && err.code !== "disconnected") return this._moveBack(err);
      if (err.code === "timeout" && ws.readyState <= 1) ws.close(1000, "no hello");
      if (err.code === "disconnected" || err.code === "timeout") return; // onclose retries
      // A refused hello will be refused again: stop and say why.
      this._fatal(4000, `${err.code}: ${err.message}`);
      this._ready.reject(err);
      return;
    }
    this._attempt = 0;
    this.identity = hello;
    const sameIdentity = !before || before.player === hello.player;
    this._ping();
    clearInterval(this._pinger);
    this._pinger = setInterval(() => this._ping(), this.options.pingInterval * 1000);
    // Rejoin every table: from its last seq if we had one (a resume), else afresh.
    const rejoins = [];
    for (const [table, t] of this.tables) {
      if (!sameIdentity) t.seq = null;
      rejoins.push(this._join(table).catch(() => {}));
    }
    const moved = this._quiet;
    this._moving = null;
    this._quiet = false;
    this._status("open", { identity: hello, resumed: Boolean(before), sameIdentity, moved });
    this._emit("hello", hello);
    this._ready.resolve(hello);
    await Promise.all(rejoins);
  }

  async _hello() {
    const { token, guest, name } = this.auth;
    if (token) return this._request("hello", { token });
    if (!guest && !name) throw new ChemmyError("auth_required", "no token, and no guest play asked for");
    const resume = this.auth.resume;
    if (resume) {
      try {
        return await this._request("hello", { guest: true, resume });
      } catch (err) {
        if (err.code !== "bad_token" && err.code !== "token_expired") throw err;
        this.auth.resume = undefined; // the server restarted or a day passed: a new guest
      }
    }
    const reply = await this._request("hello", { guest: true, ...(name ? { name } : {}) });
    if (reply.resume) this.auth.resume = reply.resume;
    return reply;
  }

  _onClose(ws, code, reason) {
    if (ws !== this._ws) return;
    this._ws = null;
    clearInterval(this._pinger);
    this._failPending("disconnected", "the connection was lost");
    for (const t of this.tables.values()) t.joining = false;
    if (this._stopped) return;
    if (this._moving) {
      this._moveBack(new ChemmyError("disconnected", `cannot connect to ${this.url}: ${code}`));
      return;
    }
    this._quiet = false; // (lost, even on the way back: a reconnection like any)
    if (code === CLOSE_ORIGIN) {
      // The server takes no connection from this page's origin (its --origins): trying
      // again would be refused again. Closed, saying why (docs/protocol.md §2).
      this._stopped = true;
      this.closeReason = reason || "origin_not_allowed";
      this._status("closed", { code, reason: this.closeReason });
      this._ready.reject(new ChemmyError("origin_not_allowed", this.closeReason));
      return;
    }
    if (!this.options.reconnect) {
      this._status("closed", { code, reason });
      return;
    }
    const delay = Math.min(this.options.backoffMax, this.options.backoffMin * 2 ** this._attempt);
    const jittered = delay * (0.5 + Math.random() / 2);
    this._attempt += 1;
    this._status("reconnecting", { attempt: this._attempt, delay: jittered, code, reason });
    this._timer = setTimeout(() => this.open(), jittered * 1000);
  }

  _fatal(code, reason) {
    this._stopped = true;
    this._endMove(reason);
    this.closeReason = reason;
    const ws = this._ws;
    this._ws = null;
    clearInterval(this._pinger);
    if (ws && ws.readyState <= 1) ws.close(1000, "bye");
    this._failPending("closed", reason);
    for (const t of this.tables.values()) {
      for (const w of t.waiters.splice(0)) w.reject(new ChemmyError("closed", reason));
    }
    this._status("closed", { code, reason });
  }

  // ------------------------------------------------------------------ requests
  /** Send a command; resolves with the `ok` reply, rejects with a ChemmyError.
   * `id` may be given to retry a command with the same idempotency key. */
  send(type, fields = {}, { id } = {}) {
    if (type === "join") return this.join(fields.table, fields);
    if (type === "leave") return this.leave(fields.table);
    if (this.state !== "open") {
      return Promise.reject(new ChemmyError("disconnected", "not connected: not sent"));
    }
    return this._request(type, fields, id);
  }

  _request(type, fields = {}, id, onReply) {
    const ws = this._ws;
    if (!ws || ws.readyState !== 1) {
      return Promise.reject(new ChemmyError("disconnected", "not connected: not sent"));
    }
    const mid = id ?? `${this._prefix}-${this._next++}`;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this._pending.delete(mid);
        reject(new ChemmyError("timeout", `no reply to ${type}`));
      }, this.options.requestTimeout * 1000);
      this._pending.set(mid, { resolve, reject, timer, onReply, type });
      ws.send(JSON.stringify({ type, id: mid, ...fields }));
    });
  }

  _failPending(code, message) {
    const pending = [...this._pending.values()];
    this._pending.clear();
    for (const p of pending) {
      clearTimeout(p.timer);
      p.reject(new ChemmyError(code, message));
    }
  }

  /** Watch a table: resolves with the join reply (a snapshot, or a resume). The table
   * is joined again, from its last seq, after every reconnection. */
  join(table) {
    if (!this.tables.has(table)) this.tables.set(table, { seq: null, joining: false, waiters: [] });
    const t = this.tables.get(table);
    if (this.state !== "open") {
      // Joined with the others once (re)connected.
      return new Promise((resolve, reject) => t.waiters.push({ resolve, reject }));
    }
    return this._join(table);
  }

  _join(table) {
    const t = this.tables.get(table);
    if (!t) return Promise.reject(new ChemmyError("not_joined", "not watching that table"));
    t.joining = true;
    const fields = { table };
    if (t.seq !== null) fields.since = t.seq;
    // The reply is handled as it arrives, before the frames after it (a resume's
    // missed events follow its reply).
    return this._request("join", fields, undefined, (reply) => {
      t.joining = false;
      const waiters = t.waiters.splice(0);
      for (const w of waiters) {
        if (reply.type === "ok") w.resolve(reply);
        else w.reject(new ChemmyError(reply.code, reply.message, reply));
      }
      if (reply.type !== "ok") return;
      if (reply.resumed) {
        this._emit("resumed", { table, seq: reply.seq });
      } else if (reply.snapshot) {
        t.seq = reply.seq;
        this._emit("snapshot", { table, seq: reply.seq, snapshot: reply.snapshot });
      }
    });
  }

  /** Ask for a fresh snapshot of a joined table (when what you hold of it went wrong). */
  resync(table) {
    const t = this.tables.get(table);
    if (!t) return Promise.reject(new ChemmyError("not_joined", "not watching that table"));
    t.seq = null;
    return this._join(table);
  }

  /** Stop watching a table (a seated player stands first). */
  async leave(table) {
    const reply = await this._request("leave", { table });
    this.tables.delete(table);
    return reply;
  }

  // ------------------------------------------------------------------ incoming
  _onFrame(ws, raw) {
    if (ws !== this._ws) return;
    let m;
    try {
      m = JSON.parse(raw);
    } catch {
      console.error("chemmy: a frame that is not JSON", raw);
      return;
    }
    this._emit("message", m);
    if (m.type === "ok" || m.type === "error") {
      const p = m.id == null ? undefined : this._pending.get(m.id);
      if (!p) {
        if (m.type === "error") this._emit("error", m);
        return;
      }
      this._pending.delete(m.id);
      clearTimeout(p.timer);
      if (p.onReply) p.onReply(m);
      if (m.type === "ok") p.resolve(m);
      else p.reject(new ChemmyError(m.code, m.message, m));
    } else if (m.type === "event") {
      this._onEvent(m);
    } else if (m.type === "progress") {
      const t = this.tables.get(m.table);
      // It belongs to the table as of its event `seq`: not before the snapshot, nor
      // past a gap (the snapshot that mends it shows the card as it is then).
      if (t && t.seq !== null && m.seq === t.seq) this._emit("progress", m);
    } else if (m.type === "chat") {
      this._emit("chat", m);
    }
  }

  _onEvent(m) {
    const t = this.tables.get(m.table);
    if (!t || t.seq === null) return; // not joined, or its snapshot is on its way
    if (m.seq <= t.seq) return; // seen already
    if (m.seq !== t.seq + 1) {
      // A gap (it should not happen): ask for a fresh snapshot, drop what comes before it.
      if (!t.joining) {
        t.seq = null;
        this._join(m.table).catch(() => {});
      }
      return;
    }
    t.seq = m.seq;
    this._emit("event", { table: m.table, seq: m.seq, kind: m.kind, data: m.data ?? {} });
  }

  // ------------------------------------------------------------------ the clock
  /** The server's time now (Unix seconds), from ping round trips. */
  serverNow() {
    return Date.now() / 1000 + this._offset;
  }

  /** Seconds left until a server deadline (null for none). */
  remaining(deadline) {
    return deadline == null ? null : Math.max(0, deadline - this.serverNow());
  }

  async _ping() {
    const t0 = Date.now() / 1000;
    try {
      const reply = await this._request("ping");
      const t1 = Date.now() / 1000;
      const rtt = t1 - t0;
      if (rtt <= this._bestRtt * 1.5 || !Number.isFinite(this._bestRtt)) {
        this._bestRtt = Math.min(this._bestRtt, rtt);
        this._offset = reply.time - (t0 + t1) / 2;
      }
    } catch {
      // no clock sample this time
    }
  }
}
