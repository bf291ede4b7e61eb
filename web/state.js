/**
 * state.js — the page's model of one table: a join snapshot, then events in seq order.
 *
 * Pure: no DOM, no clock, no network. `load(snapshot)` replaces everything;
 * `apply(kind, data)` moves the table on by one event (chemmy.js has already put them
 * in order and dropped duplicates). Both return the notes the page shows on its message
 * display: `{text, tone, say}` (tone: "info", "you", "win", "lose", "turn", "croupier";
 * `say` is what the voice announces, if anything; `hold: true` on a note the player must
 * read, which the display keeps a while).
 *
 * It decides nothing: the buttons a player may press are the server's `actions`
 * (docs/protocol.md §9), taken from the snapshot's `you.actions` and replaced by the
 * private `actions` an event carries when they change; a spectator's free seats follow
 * the public `free_seats` of `sat` and `stood`. Bettors without a seat (GAME_RULES §5,
 * docs/protocol.md §7): the felt's `totals` per area and how many `bettors` are in are
 * the server's (the snapshot's `felt`, and every event that changes the felt); your own
 * bets and wager as a bettor come in your private copies (`bets`, `own`), and nobody
 * else's bettor is ever named. Money is integer minor units
 * throughout; `formatMoney` is the only place it becomes text. The words are the
 * catalogs' (i18n.js `t`), in the current language.
 */

import { formatMoney, parseMoney, t } from "./i18n.js";

/** {id: its name in the current language}, read at each look-up (i18n.js). */
function localNames(prefix, ids) {
  return Object.defineProperties({}, Object.fromEntries(ids.map((id) => [id, { get: () => t(prefix + id), enumerable: true }])));
}

export const AREA_NAMES = localNames("area.", ["player", "banker", "tie", "player_pair", "banker_pair", "super6", "dragon_player", "dragon_banker"]);
export const HAND_NAMES = localNames("hand.", ["player", "banker"]);
export const SUITS = { s: "♠", h: "♥", d: "♦", c: "♣" };
// The reasons a debit refusal is told in (docs/protocol.md `debit_refused`); any other
// is told as wallet_unavailable.
const DEBIT_REFUSALS = ["insufficient_funds", "limit_reached", "player_blocked", "account_locked", "session_expired", "unknown_player", "currency_mismatch"];
export const PHASE_NAMES = localNames("phase.", ["shuffle", "waiting", "shoe_offer", "cut", "reveal", "betting", "debiting", "turn", "paused", "settled", "closed"]);

/** Minor units as money with two decimals in the current language: 123456 -> "1,234.56"
 * (English), "1 234,56" (French); integers only. Money text back to minor units, exactly
 * ("12.5" -> 1250), or null. Both are i18n.js's. */
export { formatMoney, parseMoney };

/** "Td" -> "10♦"; null -> "?". */
export function cardText(card) {
  if (!card) return "?";
  const rank = card.slice(0, -1) === "T" ? "10" : card.slice(0, -1);
  return `${rank}${SUITS[card.slice(-1)] ?? card.slice(-1)}`;
}

export function isRed(card) {
  return Boolean(card) && (card.endsWith("h") || card.endsWith("d"));
}

/** The words of a result: "Banker wins 7 to 5 (natural)". */
export function resultText(r) {
  if (r.void) return t("result.void", { reason: r.reason ?? "" }); // a voided round's record
  const pt = r.player_total ?? 0;
  const bt = r.banker_total ?? 0;
  let text;
  if (r.outcome === "tie") text = t("result.tie", { player: pt, banker: bt });
  else if (r.outcome === "player") text = t("result.player", { player: pt, banker: bt });
  else text = t("result.banker", { player: pt, banker: bt });
  const notes = [];
  if (r.natural) notes.push(t("result.natural"));
  if (r.player_pair) notes.push(t("area.player_pair"));
  if (r.banker_pair) notes.push(t("area.banker_pair"));
  return notes.length ? t("result.with_notes", { text, notes: notes.join(", ") }) : text;
}

function cardView(c = {}) {
  return { card: c.up ? (c.card ?? null) : null, up: Boolean(c.up), by: c.by ?? null, onBehalf: null };
}

export class TableState {
  constructor(me = null) {
    this.me = me;
    this.table = null;
    this.phase = "unknown";
    this.deadline = null;
    this.options = {};
    this.shoe = null;
    this.coupNo = 0;
    this.holder = null;
    this.houseHolds = false;
    this.offer = null;
    this.cutter = null;
    this.seats = new Map(); // player id -> {seat, player, name, connected, bets, done}
    this.names = new Map();
    this.spectators = 0;
    this.felt = null; // the server's totals per area (everyone's chips together), null before it said
    this.bettors = 0; // how many bettors without a seat are in (§5)
    this.coup = null;
    this.lastCoup = null; // the settled coup, shown until the next coup's first chips
    this.lastShown = false; // whether the settled coup is still on show
    this.nextChips = false; // whether someone placed chips for the next coup since
    this.lastResult = null;
    this.resultLine = "";
    this.roads = {};
    this.odds = null;
    this.balance = null;
    this.available = null;
    this.myBets = {};
    this.lastBets = {};
    this.lastNet = null;
    this.actions = {}; // the server's: present key = allowed now
    this.closed = false;
  }

  // ------------------------------------------------------------------ queries
  get mySeat() {
    return this.seats.get(this.me)?.seat ?? null;
  }

  get areas() {
    return this.options.areas ?? ["player", "banker", "tie"];
  }

  /** The table takes bettors without a seat (its `bettors` option; 0: seated only). */
  get takesBettors() {
    return (this.options.bettors ?? 0) > 0;
  }

  /** You have chips on the felt, or a wager in the coup, without a seat (§5). */
  get bettingWithoutSeat() {
    return !this.seats.has(this.me) && this.myStake > 0;
  }

  /** The chips on an area, everyone's together: the felt's totals as the server says
   * them (bettors without a seat included), else the seats' own. */
  areaTotal(area, stacks = this.stacks()) {
    if (this.felt) return this.felt[area] ?? 0;
    return (stacks[area] ?? []).reduce((a, b) => a + b.amount, 0);
  }

  get limits() {
    return this.options.limits ?? {};
  }

  /** The table's maximum for an area (for display). */
  maxFor(area) {
    const lim = this.limits;
    if (area === "player" || area === "banker") return lim.max;
    if (area === "tie") return lim.tie_max;
    return lim.side_max;
  }

  name(pid) {
    if (pid == null || pid === "croupier") return t("who.croupier");
    if (pid === this.me) return t("who.you");
    return this.names.get(pid) ?? pid;
  }

  Name(pid) {
    const n = this.name(pid);
    return n.charAt(0).toUpperCase() + n.slice(1);
  }

  seatsInOrder() {
    return [...this.seats.values()].sort((a, b) => a.seat - b.seat);
  }

  /** Who has what on each area: {area: [{player, amount}]}, in seat order (the seated
   * players', the turners' and yours: a bettor without a seat is named to nobody else). */
  stacks() {
    const bets =
      this.coup && Object.keys(this.coup.bets).length
        ? this.coup.bets
        : Object.fromEntries([...this.seats.values()].map((s) => [s.player, s.bets]));
    if (!this.coup && !this.seats.has(this.me) && this.me) bets[this.me] = this.myBets; // yours, without a seat
    const order = (pid) => this.seats.get(pid)?.seat ?? 99;
    const out = {};
    for (const [pid, b] of Object.entries(bets)) {
      for (const [area, amount] of Object.entries(b ?? {})) {
        if (!amount) continue;
        (out[area] ??= []).push({ player: pid, amount });
      }
    }
    for (const list of Object.values(out)) list.sort((x, y) => order(x.player) - order(y.player));
    return out;
  }

  /** Your stake on the table now: placed chips, or the wagers held in the coup. */
  get myStake() {
    const held = this.coup?.bets?.[this.me];
    const bets = held ?? this.myBets;
    return Object.values(bets).reduce((a, b) => a + b, 0);
  }

  /** The coup on the table: the one being dealt, or the settled one until chips are
   * placed for the next (its cards, result and winning areas then leave the felt). */
  get shownCoup() {
    return this.coup ?? (this.lastShown ? this.lastCoup : null);
  }

  // ------------------------------------------------------------------ the snapshot
  load(snap) {
    this.table = snap.table;
    this.phase = snap.phase ?? "unknown";
    this.deadline = snap.deadline ?? null;
    this.options = { ...(snap.options ?? {}) };
    this.shoe = snap.shoe ? { ...snap.shoe } : null;
    this.coupNo = snap.coup_no ?? 0;
    this.holder = snap.holder ?? null;
    this.houseHolds = Boolean(snap.house_holds);
    this.offer = snap.offer ?? null;
    this.cutter = snap.cutter ?? null;
    this.seats = new Map();
    for (const s of snap.seats ?? []) {
      this.seats.set(s.player, {
        seat: s.seat,
        player: s.player,
        name: s.name ?? s.player,
        connected: s.connected !== false,
        bets: { ...(s.bets ?? {}) },
        done: Boolean(s.done),
      });
      this.names.set(s.player, s.name ?? s.player);
    }
    this.spectators = snap.spectators ?? 0;
    this._felt(snap.felt ?? {});
    for (const [pid, name] of Object.entries(snap.coup?.names ?? {})) this.names.set(pid, name);
    this.coup = coupFromView(snap.coup, snap.felt?.totals);
    this.lastCoup = null;
    this.lastShown = false;
    this.lastResult = snap.last_result ?? null;
    if (!this.coup && this.lastResult) this.resultLine = resultText(this.lastResult);
    this.roads = snap.roads ?? {};
    this.closed = this.phase === "closed";
    const you = snap.you;
    if (you) {
      this.me = you.player ?? this.me;
      this.balance = you.balance ?? this.balance;
      this.available = you.available ?? this.available;
      this.myBets = { ...(you.bets ?? {}) };
      this.lastBets = { ...(you.last_bets ?? {}) };
      this.actions = { ...(you.actions ?? {}) };
    } else {
      this.actions = {};
    }
    return [note(this.phaseText())];
  }

  phaseText() {
    return ["betting", "debiting", "turn", "shoe_offer", "cut", "reveal", "waiting", "shuffle", "paused", "closed"].includes(this.phase) ? t(`phase_sentence.${this.phase}`) : "";
  }

  setRoads(roads, odds) {
    if (roads) this.roads = roads;
    this.odds = odds ?? null;
  }

  // ------------------------------------------------------------------ events
  /** Apply one event; returns the notes for the message display. */
  apply(kind, data = {}) {
    const handler = this[`on_${kind}`];
    const notes = handler ? handler.call(this, data) ?? [] : [];
    if (!this.seats.has(this.me) && Array.isArray(data.free_seats)) {
      // A spectator's seats to choose from follow the public free seats.
      if (data.free_seats.length) this.actions = { ...this.actions, sit: { seats: [...data.free_seats] } };
      else {
        const { sit, ...rest } = this.actions;
        this.actions = rest;
      }
    }
    if (data.actions && typeof data.actions === "object") this.actions = { ...data.actions };
    this._felt(data);
    return notes;
  }

  /** The felt as an event or the snapshot says it (`totals`, `bettors`), if it does. */
  _felt(d) {
    if (d.totals && typeof d.totals === "object" && Number.isInteger(d.bettors)) {
      this.felt = { ...d.totals };
      this.bettors = d.bettors;
    }
  }

  _money(d) {
    if (Number.isInteger(d.balance)) this.balance = d.balance;
    if (Number.isInteger(d.available)) this.available = d.available;
  }

  // players
  on_sat(d) {
    const name = d.name ?? this.names.get(d.player) ?? d.player;
    this.names.set(d.player, name);
    // A bettor without a seat who sits brings their chips (docs/protocol.md `sat`).
    this.seats.set(d.player, { seat: d.seat, player: d.player, name, connected: true, bets: { ...(d.bets ?? {}) }, done: false });
    this.spectators = Math.max(0, this.spectators - 1);
    if (d.player === this.me) {
      this._money(d);
      return [note(t("ev.sat_you", { seat: d.seat }), "you")];
    }
    return [note(t("ev.sat", { name, seat: d.seat }))];
  }

  on_stood(d) {
    this.seats.delete(d.player);
    if (d.player === this.me) this.myBets = {};
    const who = this.Name(d.player);
    const you = d.player === this.me ? "_you" : "";
    if (d.reason === "left") return [note(t(`ev.left${you}`, { who }))];
    if (d.reason === "timeout") return [note(t(`ev.timed_out${you}`, { who }))];
    this.spectators += 1;
    return [note(t(`ev.stood${you}`, { who }))];
  }

  // a player stops play (a break) while their wager is in the coup: they stand once it is settled
  on_stand_after_coup(d) {
    if (d.player === this.me) return [note(t("ev.stand_after_coup_you"), "you")];
    return [note(t("ev.stand_after_coup", { who: this.Name(d.player) }))];
  }

  on_disconnected(d) {
    const s = this.seats.get(d.player);
    if (s) s.connected = false;
    return d.player === this.me ? [] : [note(t("ev.disconnected", { who: this.Name(d.player) }))];
  }

  on_reconnected(d) {
    const s = this.seats.get(d.player);
    if (s) s.connected = true;
    return d.player === this.me ? [] : [note(t("ev.reconnected", { who: this.Name(d.player) }))];
  }

  on_waiting() {
    this.phase = "waiting";
    this.deadline = null;
    this.offer = null;
    return [note(t("phase_sentence.waiting"))];
  }

  // the shoe
  on_shoe_started(d) {
    this.shoe = {
      no: d.shoe_no,
      commitment: d.commitment,
      cards_left: d.cards,
      cut: null,
      burn: null,
      stop_card_out: false,
      last_coup: false,
      contributions: [],
    };
    this.roads = {};
    this.odds = null;
    this.phase = "shuffle";
    return [note(t("page.ev.shoe_started", { shoe: d.shoe_no, commitment: String(d.commitment ?? "").slice(0, 12) }))];
  }

  on_shoe_offered(d) {
    this.offer = { player: d.player, deadline: d.deadline };
    this.phase = "shoe_offer";
    this.deadline = d.deadline ?? null;
    if (d.player === this.me) return [note(t("page.ev.shoe_offered_you"), "turn", t("page.say.shoe_yours"))];
    return [note(t("ev.shoe_offered", { who: this.name(d.player) }))];
  }

  on_shoe_accepted(d) {
    this.offer = null;
    this.holder = d.player;
    this.houseHolds = false;
    this.deadline = null;
    return [note(d.player === this.me ? t("ev.shoe_accepted_you") : t("ev.shoe_accepted", { who: this.Name(d.player) }), d.player === this.me ? "you" : "info")];
  }

  on_shoe_declined(d) {
    this.offer = null;
    const why = d.timeout ? "_timeout" : "";
    return [note(t(`ev.shoe_declined${why}${d.player === this.me ? "_you" : ""}`, { who: this.Name(d.player) }), d.timeout ? "croupier" : "info")];
  }

  on_shoe_held_by_house() {
    this.offer = null;
    this.holder = null;
    this.houseHolds = true;
    return [note(t("ev.house_holds"))];
  }

  on_shoe_passed(d) {
    if (this.holder === d.player) this.holder = null;
    const why = ["player_won", "passed", "stood", "left", "timeout", "no_banker_bet"].includes(d.reason) ? t(`pass_reason.${d.reason}`) : d.reason;
    return [note(t(d.player === this.me ? "ev.shoe_passed_you" : "ev.shoe_passed", { who: this.name(d.player), why }))];
  }

  on_cut_offered(d) {
    this.cutter = d.player ?? null;
    this.phase = "cut";
    this.deadline = d.deadline ?? null;
    if (d.player === this.me) return [note(t("page.ev.cut_offered_you"), "turn")];
    return [note(t("ev.cut_offered", { who: this.Name(this.cutter) }))];
  }

  // the players' contributions (docs/fairness.md §9): this page sends its own (contribute.js)
  on_contribution_committed(d) {
    if (this.shoe) this.shoe.contributions = [...(this.shoe.contributions ?? []), { player: d.player, commitment: d.commitment, value: null }];
    if (d.player === this.me) return [note(t("ev.contribution_committed_you"), "you")];
    return [note(t("ev.contribution_committed", { who: this.Name(d.player) }))];
  }

  on_reveal_opened(d) {
    this.phase = "reveal";
    this.cutter = d.cutter ?? null; // whose cut it is; where (null: a timeout cut), applied after the reveal
    if (this.shoe) this.shoe.cut = d.cut ?? null;
    this.deadline = d.deadline ?? null;
    return [note(t("ev.reveal_opened"))];
  }

  on_contribution_revealed(d) {
    if (this.shoe) this.shoe.contributions = (this.shoe.contributions ?? []).map((c) => (c.player === d.player ? { ...c, value: d.value } : c));
    if (d.player === this.me) return [note(t("ev.contribution_revealed_you"), "you")];
    return [note(t("ev.contribution_revealed", { who: this.Name(d.player) }))];
  }

  on_contributions_closed(d) {
    const values = d.contributions ?? [];
    const mine = values.some((c) => c.player === this.me);
    let text = t(mine ? "ev.contributions_closed_you" : "ev.contributions_closed", { count: values.length });
    const withheld = d.withheld ?? [];
    if (withheld.length) text += " " + t("ev.contributions_withheld", { who: withheld.map((p) => this.name(p)).join(", ") });
    return [note(text, mine ? "you" : "info")];
  }

  on_shoe_cut(d) {
    if (this.shoe) this.shoe.cut = d.position;
    this.cutter = null;
    this.deadline = null;
    if (d.on_behalf) {
      return [note(t("page.ev.shoe_cut_behalf", { position: d.position, who: this.name(d.on_behalf) }), "croupier")];
    }
    return [note(t("ev.shoe_cut", { position: d.position, who: this.name(d.by) }))];
  }

  on_burned(d) {
    if (this.shoe) {
      this.shoe.burn = { card: d.card, count: d.count };
      if (Number.isInteger(this.shoe.cards_left)) this.shoe.cards_left -= 1 + (d.count ?? 0);
    }
    return [note(t("page.ev.burned", { card: cardText(d.card), count: d.count ?? 0 }))];
  }

  on_stop_card() {
    if (this.shoe) {
      this.shoe.stop_card_out = true;
      this.shoe.last_coup = true;
    }
    return [note(t("ev.stop_card"))];
  }

  on_shoe_ended(d) {
    this.shoe = null;
    this.phase = "shuffle";
    this.deadline = null;
    return [note(t("ev.shoe_ended", { shoe: d.shoe_no, count: (d.coups ?? []).length }))];
  }

  on_closed(d) {
    this.phase = "closed";
    this.closed = true;
    this.coup = null;
    this.deadline = null;
    return [note(d.refunded ? t("ev.closed_refunded") : t("phase_sentence.closed"))];
  }

  // an operator's controls (docs/operations.md §8)
  on_paused(d) {
    if (!d.coup_finishes) {
      this.phase = "paused";
      this.deadline = null;
    }
    return [note(d.coup_finishes ? t("ev.paused_after_coup") : t("ev.paused"))];
  }

  on_resumed() {
    return [note(t("ev.resumed"))];
  }

  on_voided(d) {
    this.coup = null;
    this.deadline = null;
    this.myBets = {};
    for (const s of this.seats.values()) {
      s.bets = {};
      s.done = false;
    }
    this._money(d);
    const text = t("ev.voided", { reason: d.reason ?? "" });
    return [note(text, "info", text, true)];
  }

  // betting
  on_betting_opened(d) {
    this.phase = "betting";
    this.deadline = d.deadline ?? null;
    this.coupNo = d.coup_no ?? this.coupNo;
    this.coup = null;
    for (const s of this.seats.values()) s.done = false;
    // The last result on the display (the next coup's betting replaces it at once), not
    // in the log again: it is there once already (result, or settled with your part).
    const short = t("ev.betting_opened", { coup: this.coupNo });
    const text = this.resultLine ? t("ev.betting_opened_last", { coup: this.coupNo, last: this.resultLine }) : short;
    return [{ ...note(text, "info", this.seats.has(this.me) ? t("phase_sentence.betting") : null), log: short }];
  }

  on_betting_timer(d) {
    this.deadline = d.deadline ?? null;
  }

  on_betting_waiting() {
    this.deadline = null;
    return [note(t("ev.betting_waiting"))];
  }

  on_bets(d) {
    const bets = { ...(d.bets ?? {}) };
    if (d.player == null) {
      // A bettor without a seat's chips, as everyone sees them: the felt only (§5).
      if (Object.keys(d.totals ?? {}).length) this.nextChips = true;
      return [];
    }
    if (Object.keys(bets).length) {
      // The next coup's chips: yours take the settled coup off the felt; the others'
      // do too, once the page has shown it a while (app.js).
      if (d.player === this.me) this.lastShown = false;
      else this.nextChips = true;
    }
    const s = this.seats.get(d.player);
    if (s) {
      s.bets = bets;
      s.done = false;
    }
    if (d.player === this.me) {
      this.myBets = bets;
      this._money(d);
    }
    return [];
  }

  on_bets_void(d) {
    const s = this.seats.get(d.player);
    if (s) s.bets = {};
    if (d.player === this.me) {
      this.myBets = {};
      return [note(t("page.ev.bets_void"), "lose")];
    }
    return [];
  }

  on_done(d) {
    const s = this.seats.get(d.player);
    if (s) s.done = true;
  }

  // An operator's wallet takes the bets before the cards (docs/wallet.md §3).
  on_debiting() {
    this.phase = "debiting";
    this.deadline = null;
    return [note(t("ev.debiting"), "info", t("ev.no_more_bets"))];
  }

  on_debit_refused(d) {
    if (d.player == null) return []; // bettors without a seat, refused: not yours to know
    const s = this.seats.get(d.player);
    if (s) s.bets = {};
    if (d.player === this.me) {
      this.myBets = {};
      const reason = DEBIT_REFUSALS.includes(d.reason) ? d.reason : "wallet_unavailable";
      return [note(t(`ev.debit_refused.${reason}`), "lose", t(`ev.debit_refused.${reason}`), true)];
    }
    return [note(t("ev.debit_refused_other", { name: this.Name(d.player) }))];
  }

  on_betting_closed(d) {
    this.phase = "turn";
    this.deadline = null;
    this._money(d);
    this.coup = newCoup(d.round_id, this.coupNo, d.bets ?? {});
    // Your wager (private: a bettor without a seat's is in no public list).
    if (d.own && typeof d.own === "object" && this.me && Object.keys(d.own).length) this.coup.bets[this.me] = { ...d.own };
    this.coup.felt = d.totals && typeof d.totals === "object" ? { ...d.totals } : null; // everyone's wagers per area
    return [note(t("ev.no_more_bets"), "info", t("ev.no_more_bets"))];
  }

  on_dealt(d) {
    this.resultLine = "";
    this.coup ??= newCoup(d.round_id, this.coupNo, {});
    this.coup.player = Array.from({ length: d.player ?? 2 }, () => cardView());
    this.coup.banker = Array.from({ length: d.banker ?? 2 }, () => cardView());
    this.coup.turners = { ...(d.turners ?? {}) };
    for (const [pid, name] of Object.entries(d.names ?? {})) this.names.set(pid, name); // (a bettor who turns)
    this.phase = "turn";
    if (this.shoe && Number.isInteger(this.shoe.cards_left)) this.shoe.cards_left -= 4;
    return [];
  }

  // turning
  on_turn(d) {
    const coup = this.coup;
    if (!coup) return [];
    coup.stage = d.third ? `${d.hand}_third` : d.hand;
    coup.style = null;
    coup.squeezer = null;
    coup.deadline = d.deadline ?? null;
    this.deadline = coup.deadline;
    coup.turners[d.hand] = d.turner;
    const what = d.third ? t(`ev.what_third.${d.hand === "banker" ? "banker" : "player"}`) : t(`ev.what_cards.${d.hand === "banker" ? "banker" : "player"}`);
    if (d.turner === this.me) {
      return [note(t("ev.turn_you", { what }), "turn", t("page.say.your_turn"))];
    }
    return [note(t("ev.turn", { who: this.Name(d.turner), what }))];
  }

  on_squeeze(d) {
    const coup = this.coup;
    if (!coup) return [];
    coup.style = d.style;
    coup.squeezer = d.turner;
    for (const [k, card] of Object.entries(d.cards ?? {})) coup.private[`${d.hand}:${k}`] = card;
    const what = t(`ev.what_cards.${d.hand === "banker" ? "banker" : "player"}`);
    const style = String(d.style).toUpperCase();
    // Yours: what to do next (the CARD buttons, or TOSS), a prompt as the turn's was.
    if (d.turner === this.me) return [note(t("page.ev.squeeze_you", { what, style }), "turn")];
    return [note(t("ev.squeeze", { who: this.Name(d.turner), what, style }))];
  }

  on_progress(d) {
    if (this.coup) this.coup.progress[`${d.hand}:${d.card}`] = d.percent;
  }

  on_card(d) {
    const coup = this.coup;
    if (!coup) return [];
    const cards = d.hand === "player" ? coup.player : coup.banker;
    while (cards.length < d.index) cards.push(cardView());
    cards[d.index - 1] = { card: d.card, up: true, by: d.by ?? null, onBehalf: d.on_behalf ?? null };
    delete coup.progress[`${d.hand}:${d.index}`];
    delete coup.private[`${d.hand}:${d.index}`];
    if (Number.isInteger(d.total)) coup.totals[d.hand] = d.total;
    if (!coup.stage.startsWith(d.hand)) coup.stage = d.index <= 2 ? d.hand : `${d.hand}_third`;
    const hand = HAND_NAMES[d.hand];
    if (d.on_behalf) {
      return [
        note(
          t("page.ev.card_behalf", { hand, index: d.index, card: cardText(d.card), who: this.name(d.on_behalf) }),
          "croupier",
        ),
      ];
    }
    return [note(Number.isInteger(coup.totals[d.hand]) ? t("ev.card_total", { hand, index: d.index, card: cardText(d.card), total: coup.totals[d.hand] }) : t("ev.card", { hand, index: d.index, card: cardText(d.card) }))];
  }

  on_third_card(d) {
    const coup = this.coup;
    if (!coup) return [];
    (d.hand === "player" ? coup.player : coup.banker).push(cardView());
    coup.stage = `${d.hand}_third`;
    coup.style = null;
    if (this.shoe && Number.isInteger(this.shoe.cards_left)) this.shoe.cards_left -= 1;
    return [note(t("ev.third_card", { hand: HAND_NAMES[d.hand] }))];
  }

  on_result(d) {
    this.lastResult = { ...d };
    if (this.coup) {
      this.coup.result = { ...d };
      // The hands' final totals, as the server gives them (a coup joined mid-way had none).
      for (const hand of ["player", "banker"]) {
        if (Number.isInteger(d[`${hand}_total`])) this.coup.totals[hand] = d[`${hand}_total`];
      }
    }
    const say = d.outcome === "tie" ? t("area.tie") : t("page.say.wins", { hand: HAND_NAMES[d.outcome] });
    // With a wager of yours in the coup, `settled` says the result with your part of it:
    // here only the voice (the display and the log say it once, then).
    const mine = this.coup?.bets?.[this.me];
    if (mine && Object.keys(mine).length) return [note("", "info", say)];
    return [note(resultText(d), "info", say)];
  }

  on_settled(d) {
    const r = this.lastResult;
    let text = r ? resultText(r) : t("ev.settled");
    const coup = this.coup;
    const mine = coup?.bets?.[this.me];
    if (mine && Object.keys(mine).length) this.lastBets = { ...mine };
    this._money(d);
    let tone = "info";
    let say = null;
    if (Number.isInteger(d.net)) {
      this.lastNet = d.net;
      if (d.net > 0) {
        text = t("ev.won", { text, amount: formatMoney(d.net) });
        tone = "win";
        say = t("page.say.you_win");
      } else if (d.net < 0) {
        text = t("ev.lost", { text, amount: formatMoney(-d.net) });
        tone = "lose";
      } else {
        // Bets won and lost that cancel out break even; a push is every bet pushed.
        const mine = [...(d.payouts ?? []), ...(Array.isArray(d.own) ? d.own : [])].filter((p) => p.player === this.me);
        text = t(mine.some((p) => p.outcome !== "push") ? "ev.even" : "ev.push", { text });
      }
    }
    const behalf = coup ? [...new Set([...coup.player, ...coup.banker].map((c) => c.onBehalf).filter(Boolean))] : [];
    if (behalf.length) {
      text = t("page.ev.finished_by_croupier", { text, who: behalf.map((p) => this.name(p)).join(", ") });
      if (tone === "info") tone = "croupier";
    }
    for (const s of this.seats.values()) {
      s.bets = {};
      s.done = false;
    }
    this.myBets = {};
    if (coup) {
      // Everyone's public payouts, and yours (`own`: a bettor without a seat's are private).
      const own = Array.isArray(d.own) ? d.own : [];
      const seen = new Set((d.payouts ?? []).map((p) => `${p.player}|${p.area}`));
      coup.payouts = [...(d.payouts ?? []), ...own.filter((p) => !seen.has(`${p.player}|${p.area}`))];
      coup.net = Number.isInteger(d.net) ? d.net : null; // yours, for the result's banner
    }
    this.lastCoup = coup;
    this.lastShown = Boolean(coup);
    this.nextChips = false;
    this.coup = null;
    this.phase = "settled";
    this.deadline = null;
    this.resultLine = text;
    // Without a bet of yours or the croupier's help, this is the result line again.
    if (r && text === resultText(r) && !(mine && Object.keys(mine).length)) return [];
    return [note(text, tone, say)];
  }
}

/** A note; `hold`: one the player must read, kept on the display a while (app.js). */
function note(text, tone = "info", say = null, hold = false) {
  return hold ? { text, tone, say, hold } : { text, tone, say };
}

function newCoup(roundId, coupNo, bets) {
  return {
    roundId,
    coupNo,
    player: [],
    banker: [],
    turners: {},
    bets: Object.fromEntries(Object.entries(bets).map(([p, b]) => [p, { ...b }])),
    stage: "player",
    style: null,
    squeezer: null,
    deadline: null,
    private: {}, // "hand:index" -> a card you are squeezing
    progress: {}, // "hand:index" -> percent others have bent it
    totals: {},
    felt: null, // everyone's wagers per area (the felt's totals at betting_closed, §5)
    result: null,
    payouts: null,
  };
}

function coupFromView(view, felt = null) {
  if (!view) return null;
  const coup = newCoup(view.round_id, view.coup_no ?? 0, view.bets ?? {});
  coup.felt = felt ? { ...felt } : null; // while a coup is dealt, the felt is its wagers
  coup.turners = { ...(view.turners ?? {}) };
  coup.stage = view.stage ?? "player";
  coup.style = view.style ?? null;
  coup.deadline = view.deadline ?? null;
  for (const hand of ["player", "banker"]) {
    // The server's total of the face-up cards (the snapshot's coup.totals): no rule here.
    if (Number.isInteger(view.totals?.[hand])) coup.totals[hand] = view.totals[hand];
    (view[hand] ?? []).forEach((c, i) => {
      coup[hand].push(cardView(c));
      if (c.card && !c.up) coup.private[`${hand}:${i + 1}`] = c.card;
    });
  }
  if (coup.style) coup.squeezer = coup.turners[coup.stage.startsWith("player") ? "player" : "banker"] ?? null;
  return coup;
}
