/**
 * backoffice.js — the operator's back-office page (`/operator/`): the tables live, the
 * players online, a round search with a round's replay card by card, the totals with a
 * chart of the house result, and the void and table controls (a settled round's void
 * from its replay; the round in play's from its table's line).
 *
 * Everything it shows comes from the operator API (`/operator/v1/`, docs/operator-api.md)
 * with the operator's token on every call (`authorization: bearer <token>`). The token
 * is pasted in the page or given in the URL's fragment (`/operator/#token=...`: a
 * fragment is never sent to a server nor in a Referer), and kept in sessionStorage (this
 * tab, until it closes, or "Forget"). A refusal (no token, a player's token, an expired
 * one, a route this server does not have) is shown as the server worded it, and no data.
 * The page decides nothing: a control only asks the server and shows its answer.
 */

import { chooseLanguage, formatMoney, language, refusalText, setCurrency, setLanguage, t, translatePage } from "/i18n.js";
import { $, fill, h, show, store } from "/dom.js";
import { cardName, cardsLine } from "/cards.js";
import { AREA_NAMES, HAND_NAMES, PHASE_NAMES, resultText } from "/state.js";
import { chartSvg, houseSeries } from "./chart.js";
import { replaySteps } from "./replay.js";

const TOKEN_KEY = "chemmy.operator.token";
const POLL_MS = 5000;

/** A refusal from the server (or the network): its HTTP status, code and sentence. */
class Refusal extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** An answer to a call made before the last `load()` (a token used, forgotten, or a
 * refresh): dropped unseen, so that a slow answer under a forgotten token never fills
 * the page after its refusal. */
class Stale extends Error {}

const page = {
  token: null,
  tables: new Map(), // table id -> {currency, decimals}
  lines: new Map(), // table id -> its last line (GET /operator/v1/tables): what it allows now
  cursor: null,
  query: null,
  replay: null, // {round, steps, shown}
  liveVoid: null, // {table, round}: the round in play the void form is about
  timer: null,
  epoch: 0, // bumped by each load(): answers to calls made before it are Stale
  dropped: [], // the paths of the answers so dropped (for tests and the curious)
};
globalThis.chemmyBackOffice = page; // for tests and the curious: what the page holds

// ---------------------------------------------------------------------------- the API

// A new Idempotency-Key for each call that changes something (docs/operator-api.md
// "Idempotency"): 128 random bits in hex (crypto.getRandomValues works on a page served
// over plain HTTP too, where crypto.randomUUID does not).
function idempotencyKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Throws Stale if a load() began since the read was made in `epoch`. A control's
 * answer (any other method) is always shown: what it did on the server is done. */
function stale(method, epoch, path) {
  if (method !== "GET" || epoch === page.epoch) return;
  page.dropped.push(path);
  throw new Stale(path);
}

async function api(method, path, body) {
  const epoch = page.epoch;
  const headers = {};
  if (page.token) headers.authorization = `bearer ${page.token}`;
  if (method !== "GET" && method !== "HEAD") headers["idempotency-key"] = idempotencyKey();
  const init = { method, headers, cache: "no-store" };
  if (body !== undefined) {
    headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch {
    stale(method, epoch, path);
    throw new Refusal(0, "network", t("bo.network"));
  }
  let data = null;
  try {
    data = await res.json();
  } catch {
    data = null;
  }
  stale(method, epoch, path);
  if (!res.ok) throw new Refusal(res.status, data?.status ?? String(res.status), data?.message ?? res.statusText);
  return data;
}

function refusalWords(err) {
  if (!(err instanceof Refusal)) return t("bo.failed", { message: String(err?.message ?? err) });
  if (err.status === 0) return err.message;
  return t("bo.refused", { status: err.status, code: err.code, message: refusalText(err.code, err.message) });
}

// ---------------------------------------------------------------------------- words

function money(minor, currency = null, decimals = 2, opts = {}) {
  setCurrency(currency, decimals);
  const text = formatMoney(minor, opts);
  setCurrency(null, 2);
  return text;
}

function tableMoney(table, minor, opts = {}) {
  const info = page.tables.get(table) ?? { currency: null, decimals: 2 };
  return money(minor, info.currency, info.decimals, opts);
}

function when(seconds) {
  if (typeof seconds !== "number") return "–";
  return new Intl.DateTimeFormat(language(), { year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23", timeZone: "UTC", timeZoneName: "short" }).format(new Date(seconds * 1000));
}

const who = (id) => (id == null ? t("who.croupier") : id === "croupier" ? t("who.croupier") : id);
const outcomeWords = (outcome) => (outcome === "tie" ? AREA_NAMES.tie : (HAND_NAMES[outcome] ?? outcome ?? "–"));

function grid(tableEl, heads, rows, empty) {
  const thead = h("thead", {}, h("tr", {}, heads.map((head) => h("th", { scope: "col" }, head))));
  const body = rows.length ? rows : [h("tr", {}, h("td", { colspan: heads.length, class: "muted" }, empty))];
  fill(tableEl, thead, h("tbody", {}, body));
}

// ---------------------------------------------------------------------------- token

function takeToken() {
  const fragment = new URLSearchParams(location.hash.slice(1));
  const given = fragment.get("token");
  if (given) {
    store.set("session", TOKEN_KEY, given);
    fragment.delete("token");
    const rest = fragment.toString();
    history.replaceState(null, "", location.pathname + location.search + (rest ? `#${rest}` : ""));
  }
  return store.get("session", TOKEN_KEY);
}

function refuse(err) {
  if (err instanceof Stale) return;
  const box = $("#refusal");
  box.textContent = refusalWords(err);
  show(box, true);
}

function clearRefusal() {
  show($("#refusal"), false);
  $("#refusal").textContent = "";
}

/** Load everything; a refused first call hides every piece of data. */
async function load() {
  clearTimeout(page.timer); // one poll at a time, and none under a refused token
  const epoch = ++page.epoch;
  clearRefusal();
  $("#status").textContent = t("bo.loading");
  try {
    await loadTables();
  } catch (err) {
    if (err instanceof Stale) return; // a later load() owns the page now
    show($("#data"), false);
    for (const id of ["#tables-list", "#players-list", "#rounds-list", "#totals-list", "#totals-currency", "#totals-chart"]) fill($(id));
    show($("#replay"), false);
    $("#status").textContent = page.token ? t("bo.status.refused") : t("bo.status.no_token");
    refuse(err);
    return;
  }
  show($("#data"), true);
  $("#status").textContent = t("bo.status.ok");
  await Promise.all([loadPlayers(), searchRounds(), loadTotals()].map((p) => p.catch(refuse)));
  if (epoch === page.epoch) poll(); // (a later load() polls if its token opens the data)
}

function poll() {
  clearTimeout(page.timer);
  page.timer = setTimeout(async () => {
    try {
      await Promise.all([loadTables(), loadPlayers()]);
    } catch (err) {
      if (err instanceof Stale) return; // the load() that made it stale polls on its own
      refuse(err);
    }
    poll();
  }, POLL_MS);
}

// ---------------------------------------------------------------------------- tables

async function loadTables() {
  const data = await api("GET", "/operator/v1/tables");
  $("#tables-process").textContent = t("bo.tables.process", { process: data.process });
  for (const line of data.tables) page.tables.set(line.table, { currency: line.currency, decimals: line.decimals });
  page.lines = new Map(data.tables.map((line) => [line.table, line]));
  const rows = data.tables.map((line) => {
    const last = line.last_coup;
    return h(
      "tr",
      { dataset: { table: line.table } },
      h("td", {}, h("strong", {}, line.table), " ", line.name ?? ""),
      h("td", { class: "phase" }, PHASE_NAMES[line.phase] ?? line.phase),
      h("td", { class: "seated" }, t("bo.tables.seated_of", { seated: line.seated, seats: line.seats })),
      h("td", {}, String(line.spectators)),
      h("td", {}, t("bo.tables.shoe_coup", { shoe: line.shoe_no, coup: line.coup_no })),
      h("td", {}, line.currency ?? t("bo.play_money")),
      h("td", {}, line.owner ?? t("bo.tables.no_owner")),
      h("td", {}, String(line.watchers_here)),
      h("td", { class: "last" }, last ? [h("button", { type: "button", class: "link", onclick: () => openRound(last.round_id) }, last.round_id), " ", ...(last.void ? [resultText(last)] : [outcomeWords(last.outcome), " ", tableMoney(line.table, last.house_result, { sign: true })])] : "–"),
      h(
        "td",
        { class: "controls" },
        ["pause", "resume", "close"].map((what) => controlButton(line, what)),
        voidButton(line),
      ),
    );
  });
  grid(
    $("#tables-list"),
    [t("bo.col.table"), t("bo.col.phase"), t("bo.col.seated"), t("bo.col.spectators"), t("bo.col.shoe"), t("bo.col.currency"), t("bo.col.owner"), t("bo.col.watchers"), t("bo.col.last_coup"), t("bo.col.controls")],
    rows,
    t("bo.tables.none"),
  );
}

/** Pause, Resume or Close on a table's line, offered only as the line's state allows:
 * Pause while not paused, Resume while paused (the line's `paused`); the page decides
 * nothing more (the server answers each call, and the line is read again after it). */
function controlButton(line, what) {
  const allowed = what === "pause" ? !line.paused : what === "resume" ? Boolean(line.paused) : true;
  return h(
    "button",
    {
      type: "button",
      class: what === "close" ? "danger" : "",
      dataset: { action: what, table: line.table },
      disabled: !allowed,
      title: allowed ? null : t(`bo.tables.${what}_not_now`),
      onclick: () => tableControl(line.table, what),
    },
    t(`bo.tables.${what}`),
  );
}

async function tableControl(table, what) {
  const out = $("#table-answer");
  if (what === "close" && !confirm(t("bo.tables.confirm_close", { table }))) return;
  out.dataset.state = "asking";
  out.textContent = t("bo.asking");
  try {
    const answer = await api("POST", `/operator/v1/tables/${encodeURIComponent(table)}/${what}`, {});
    out.dataset.state = "ok";
    out.textContent = t(`bo.tables.done_${what}`, { table, status: answer?.status ?? "ok" });
    await loadTables().catch(refuse);
  } catch (err) {
    out.dataset.state = "refused";
    out.textContent = refusalWords(err);
  }
}

// ---------------------------------------------------------------------------- void the round in play

/** "Void current round" on a table's line: enabled while the line names a round in
 * play (`round_id`: bet on, debited or dealt, not settled). */
function voidButton(line) {
  const round = line.round_id ?? null;
  return h(
    "button",
    {
      type: "button",
      class: "danger",
      dataset: { action: "void", table: line.table, round: round ?? "" },
      disabled: !round,
      title: round ? t("bo.tables.void_title", { round }) : t("bo.tables.void_none"),
      onclick: () => askVoid(line.table, round),
    },
    t("bo.tables.void"),
  );
}

/** The small form under the tables: which round, and a reason. The round is the one the
 * line named when the button was pressed (the lines refresh under it). */
function askVoid(table, round) {
  if (!round) return;
  page.liveVoid = { table, round };
  $("#live-void-title").textContent = t("bo.live_void.title", { round, table });
  $("#live-void-reason").value = "";
  const out = $("#live-void-answer");
  delete out.dataset.state;
  out.textContent = "";
  show($("#live-void"), true);
  $("#live-void-reason").focus();
}

function cancelVoid() {
  page.liveVoid = null;
  show($("#live-void"), false);
}

async function voidLive(ev) {
  ev.preventDefault();
  const target = page.liveVoid;
  if (!target) return;
  const out = $("#live-void-answer");
  $("#live-void-send").disabled = true;
  try {
    const answer = await postVoid(target.round, $("#live-void-reason"), out);
    if (answer) {
      out.textContent = t("bo.live_void.done", { round: answer.round_id ?? target.round, table: target.table });
      cancelVoid();
      await loadTables().catch(refuse);
    } else {
      await loadTables().catch(() => {}); // the line may be stale: a round settled meanwhile
    }
  } finally {
    $("#live-void-send").disabled = false;
  }
}

/** Void round `id` with the reason typed in `reasonBox`, saying so in `out`: the
 * server's answer, or null when there is no reason or the server refused (`out` then
 * says why, in its words). */
async function postVoid(id, reasonBox, out) {
  const reason = reasonBox.value.trim();
  if (!reason) {
    out.dataset.state = "refused";
    out.textContent = t("bo.void.need_reason");
    return null;
  }
  out.dataset.state = "asking";
  out.textContent = t("bo.asking");
  try {
    const answer = await api("POST", `/operator/v1/rounds/${encodeURIComponent(id)}/void`, { reason });
    out.dataset.state = "ok";
    return answer ?? {};
  } catch (err) {
    out.dataset.state = "refused";
    out.textContent = refusalWords(err);
    return null;
  }
}

// ---------------------------------------------------------------------------- players

async function loadPlayers() {
  const data = await api("GET", "/operator/v1/players");
  const rows = data.players.map((p) =>
    h(
      "tr",
      { dataset: { player: p.player } },
      h("td", {}, h("button", { type: "button", class: "link", onclick: () => searchPlayer(p.player) }, p.player)),
      h("td", {}, p.name ?? ""),
      h("td", {}, p.guest ? t("bo.yes") : t("bo.no")),
      h("td", {}, p.tables.join(", ") || "–"),
      h("td", {}, p.sessions.map((s) => t("bo.players.session", { session: s.session, address: s.address, format: s.format })).join("; ")),
    ),
  );
  grid($("#players-list"), [t("bo.col.player"), t("bo.col.name"), t("bo.col.guest"), t("bo.col.tables"), t("bo.col.sessions")], rows, t("bo.players.none"));
}

function searchPlayer(player) {
  const form = $("#rounds-form");
  form.elements.player.value = player;
  form.requestSubmit();
}

// ---------------------------------------------------------------------------- rounds

function dayStart(value) {
  return value ? Date.parse(`${value}T00:00:00Z`) / 1000 : null;
}

function rangeQuery(form) {
  const q = new URLSearchParams();
  const since = dayStart(form.elements.since.value);
  const until = dayStart(form.elements.until.value);
  if (since != null) q.set("since", String(since));
  if (until != null) q.set("until", String(until + 86400)); // the "to" day included
  if (form.elements.table.value.trim()) q.set("table", form.elements.table.value.trim());
  return q;
}

async function searchRounds() {
  const form = $("#rounds-form");
  const q = rangeQuery(form);
  for (const name of ["player", "round_id"]) if (form.elements[name].value.trim()) q.set(name, form.elements[name].value.trim());
  if (form.elements.limit.value) q.set("limit", form.elements.limit.value);
  page.query = q;
  page.cursor = null;
  fill($("#rounds-list"));
  await moreRounds(true);
}

async function moreRounds(first = false) {
  const q = new URLSearchParams(page.query);
  if (!first && page.cursor) q.set("cursor", page.cursor);
  const data = await api("GET", `/operator/v1/rounds?${q}`);
  page.cursor = data.next_cursor;
  show($("#rounds-more"), Boolean(data.next_cursor));
  const rows = data.rounds.map((r) => {
    const staked = r.bets.reduce((sum, b) => sum + b.stake, 0);
    const returned = r.bets.reduce((sum, b) => sum + b.returned, 0);
    return h(
      "tr",
      { dataset: { round: r.round_id } },
      h("td", {}, when(r.time)),
      h("td", {}, h("button", { type: "button", class: "link replay-open", onclick: () => openRound(r.round_id) }, r.round_id)),
      h("td", {}, r.table),
      h("td", {}, resultText(r)),
      h("td", {}, cardsLine(r.player)),
      h("td", {}, cardsLine(r.banker)),
      h("td", {}, r.players.join(", ") || "–"),
      h("td", { class: "num" }, tableMoney(r.table, staked)),
      h("td", { class: "num" }, tableMoney(r.table, staked - returned, { sign: true })),
    );
  });
  const list = $("#rounds-list");
  if (first || !list.tBodies.length) {
    grid(list, [t("bo.col.time"), t("bo.col.round"), t("bo.col.table"), t("bo.col.outcome"), HAND_NAMES.player, HAND_NAMES.banker, t("bo.col.players"), t("bo.col.staked"), t("bo.col.house_result")], rows, t("bo.rounds.none"));
  } else {
    list.tBodies[0].append(...rows);
  }
}

// ---------------------------------------------------------------------------- replay

async function openRound(roundId) {
  let report;
  try {
    report = await api("GET", `/operator/v1/rounds/${encodeURIComponent(roundId)}`);
  } catch (err) {
    refuse(err);
    return;
  }
  const round = report.round;
  page.replay = { round, report, steps: replaySteps(round), shown: 0 };
  $("#replay-title").textContent = t("bo.replay.title", { round: round.round_id });
  $("#replay-meta").textContent = t("bo.replay.meta", {
    time: when(round.time),
    table: round.table,
    holder: round.holder ?? t("bo.replay.house"),
    player_turner: who(round.turners?.player),
    banker_turner: who(round.turners?.banker),
  });
  grid(
    $("#replay-bets"),
    [t("bo.col.player"), t("bo.col.area"), t("bo.col.stake"), t("bo.col.returned"), t("bo.col.commission"), t("bo.col.outcome")],
    round.bets.map((b) =>
      h("tr", {}, h("td", {}, b.player), h("td", {}, AREA_NAMES[b.area] ?? b.area), h("td", { class: "num" }, tableMoney(round.table, b.stake)), h("td", { class: "num" }, tableMoney(round.table, b.returned)), h("td", { class: "num" }, tableMoney(round.table, b.commission)), h("td", {}, t(`bo.bet.${b.outcome}`))),
    ),
    t("bo.replay.no_bets"),
  );
  const m = report.money;
  $("#replay-money").textContent = t("bo.replay.money", {
    staked: tableMoney(round.table, m.staked),
    returned: tableMoney(round.table, m.returned),
    commission: tableMoney(round.table, m.commission),
    house: tableMoney(round.table, m.house_result, { sign: true }),
  });
  $("#replay-shoe").textContent = !report.shoe_revealed
    ? t("bo.replay.shoe_hidden")
    : report.verified?.ok
      ? t("bo.replay.shoe_verified", { count: report.verified.coups_checked })
      : t("bo.replay.shoe_problems", { problems: (report.verified?.problems ?? []).join("; ") });
  $("#void-answer").textContent = "";
  // A round's record is written when it ends (settled or voided): only a round in play
  // may be voided, so a replay offers the void only for its table's round in play.
  const inPlay = page.lines.get(round.table)?.round_id === round.round_id;
  show($("#void-form"), inPlay);
  $("#void-settled").textContent = inPlay ? "" : t("bo.replay.void_settled");
  show($("#void-settled"), !inPlay);
  show($("#replay"), true);
  drawReplay();
  $("#replay-title").scrollIntoView?.({ block: "nearest" });
}

function drawReplay() {
  const r = page.replay;
  if (!r) return;
  const shown = r.steps.slice(0, r.shown);
  for (const hand of ["player", "banker"]) {
    fill($(`#replay-${hand}`), cardsLine(shown.filter((s) => s.hand === hand).map((s) => s.card)));
  }
  const done = r.shown === r.steps.length;
  $("#replay-player-total").textContent = done ? t("bo.replay.total", { total: r.round.player_total }) : "";
  $("#replay-banker-total").textContent = done ? t("bo.replay.total", { total: r.round.banker_total }) : "";
  const step = r.steps[r.shown - 1];
  $("#replay-step").textContent = !step
    ? t("bo.replay.step_none", { count: r.steps.length })
    : t(step.on_behalf ? "bo.replay.step_behalf" : "bo.replay.step", {
        n: r.shown,
        count: r.steps.length,
        who: who(step.by),
        card: cardName({ card: step.card, up: true }),
        hand: HAND_NAMES[step.hand],
        player: step.on_behalf ?? "",
      });
  $("#replay-result").textContent = done ? t("bo.replay.result", { outcome: outcomeWords(r.round.outcome), player: r.round.player_total, banker: r.round.banker_total }) : "";
  $("#replay-prev").disabled = r.shown === 0;
  $("#replay-first").disabled = r.shown === 0;
  $("#replay-next").disabled = done;
  $("#replay-all").disabled = done;
}

function stepTo(n) {
  if (!page.replay) return;
  page.replay.shown = Math.max(0, Math.min(page.replay.steps.length, n));
  drawReplay();
}

async function voidRound(ev) {
  ev.preventDefault();
  const round = page.replay?.round;
  if (!round) return;
  const out = $("#void-answer");
  const answer = await postVoid(round.round_id, $("#void-reason"), out);
  if (answer) out.textContent = t("bo.void.done", { round: round.round_id, status: answer.status ?? "ok" });
}

// ---------------------------------------------------------------------------- totals

async function loadTotals() {
  const q = rangeQuery($("#totals-form"));
  q.set("per", "day");
  const data = await api("GET", `/operator/v1/totals?${q}`);
  const decimalsOf = (line) => [...page.tables.values()].find((x) => x.currency === line.currency)?.decimals ?? 2;
  const cur = (line, minor, opts) => money(minor, line.currency, decimalsOf(line), opts);
  grid(
    $("#totals-list"),
    [t("bo.col.day"), t("bo.col.table"), t("bo.col.currency"), t("bo.col.coups"), t("bo.col.staked"), t("bo.col.returned"), t("bo.col.commission"), t("bo.col.house_result")],
    data.totals.map((line) =>
      h("tr", { dataset: { day: line.day ?? "", table: line.table } }, h("td", {}, line.day ?? "–"), h("td", {}, line.table), h("td", {}, line.currency ?? t("bo.play_money")), h("td", { class: "num" }, String(line.coups)), h("td", { class: "num" }, cur(line, line.staked)), h("td", { class: "num" }, cur(line, line.returned)), h("td", { class: "num" }, cur(line, line.commission)), h("td", { class: "num" }, cur(line, line.house_result, { sign: true }))),
    ),
    t("bo.totals.none"),
  );
  grid(
    $("#totals-currency"),
    [t("bo.col.currency"), t("bo.col.coups"), t("bo.col.staked"), t("bo.col.returned"), t("bo.col.commission"), t("bo.col.house_result")],
    data.by_currency.map((line) =>
      h("tr", { dataset: { currency: line.currency ?? "" } }, h("td", {}, line.currency ?? t("bo.play_money")), h("td", { class: "num" }, String(line.coups)), h("td", { class: "num" }, cur(line, line.staked)), h("td", { class: "num" }, cur(line, line.returned)), h("td", { class: "num" }, cur(line, line.commission)), h("td", { class: "num house" }, cur(line, line.house_result, { sign: true }))),
    ),
    t("bo.totals.none"),
  );
  const series = houseSeries(data.totals);
  const unit = (currency) => currency ?? t("bo.play_money");
  fill($("#totals-chart"), chartSvg(series, (minor, currency) => money(minor, currency, decimalsOf({ currency }), { sign: true }), unit));
}

// ---------------------------------------------------------------------------- start

function wire() {
  $("#token-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const value = $("#token-input").value.trim();
    $("#token-input").value = "";
    if (value) store.set("session", TOKEN_KEY, value);
    page.token = value || store.get("session", TOKEN_KEY);
    load();
  });
  $("#token-forget").addEventListener("click", () => {
    store.remove("session", TOKEN_KEY);
    page.token = null;
    clearTimeout(page.timer);
    load();
  });
  $("#refresh").addEventListener("click", () => load());
  $("#rounds-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    searchRounds().catch(refuse);
  });
  $("#rounds-more").addEventListener("click", () => moreRounds().catch(refuse));
  $("#totals-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    loadTotals().catch(refuse);
  });
  $("#replay-first").addEventListener("click", () => stepTo(0));
  $("#replay-prev").addEventListener("click", () => stepTo(page.replay.shown - 1));
  $("#replay-next").addEventListener("click", () => stepTo(page.replay.shown + 1));
  $("#replay-all").addEventListener("click", () => stepTo(page.replay.steps.length));
  $("#void-form").addEventListener("submit", voidRound);
  $("#live-void").addEventListener("submit", voidLive);
  $("#live-void-cancel").addEventListener("click", cancelVoid);
}

async function start() {
  const params = new URLSearchParams(location.search);
  await setLanguage(chooseLanguage({ param: params.get("lang"), browser: navigator.languages }));
  translatePage();
  wire();
  // A token given to this tab later (`/operator/#token=...` in its address bar, or a
  // link opened in it) is taken at once, without a reload.
  addEventListener("hashchange", () => {
    if (!new URLSearchParams(location.hash.slice(1)).get("token")) return;
    page.token = takeToken();
    page.ready = load();
  });
  page.token = takeToken();
  page.ready = load();
  await page.ready;
  document.body.dataset.ready = "1";
}

start();
