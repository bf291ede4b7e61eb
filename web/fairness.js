/**
 * fairness.js — "verify this shoe" in the browser: docs/fairness.md re-implemented, so a
 * player needs nothing but this page (and no trust in the server's own check) to prove a
 * revealed shoe: the seed against its commitment, each player's contribution against
 * theirs, the key they make together (§9), the shuffle, the cut (a timeout cut: the
 * key's), the burn, the stop card and every coup under the tableau.
 *
 * Pure but for `crypto.subtle` (SHA-256, HMAC-SHA256), so it needs a secure context.
 * `verifyShoe(record)` mirrors `server.engine.shoe.verify` (tests/web check the two
 * agree on the same records).
 */

const ENC = new TextEncoder();
const SHOE_LABEL = ENC.encode("chemmy-shoe-v1");
const CUT_LABEL = ENC.encode("chemmy-cut-v1");
const CONTRIBUTIONS_LABEL = ENC.encode("chemmy-contributions-v1");
const RANKS = "A23456789TJQK";
const SUITS = "shdc";
const MIN_CUT = 10;
const MIN_STOP_OFFSET = 12;

export function fromHex(text) {
  const s = String(text ?? "");
  if (s.length % 2 || /[^0-9a-fA-F]/.test(s)) throw new Error(`not hex: ${s.slice(0, 20)}`);
  return Uint8Array.from(s.match(/../g) ?? [], (b) => parseInt(b, 16));
}

export function toHex(bytes) {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

export async function sha256(bytes) {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
}

async function hmacKey(key) {
  return crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
}

/** §9: HMAC-SHA256(seed, "chemmy-contributions-v1" || sorted values); no value: the seed. */
export async function contributionKey(seed, values) {
  if (!values.length) return seed;
  const sorted = [...values].sort((a, b) => (toHex(a) < toHex(b) ? -1 : toHex(a) > toHex(b) ? 1 : 0));
  const signed = await crypto.subtle.sign("HMAC", await hmacKey(seed), concat(CONTRIBUTIONS_LABEL, ...sorted));
  return new Uint8Array(signed);
}

/** §2: the 32-bit big-endian words of HMAC-SHA256(key, label || BE8(i)), i = 0, 1, ... */
class Words {
  constructor(key, label) {
    this.key = hmacKey(key);
    this.label = label;
    this.block = 0;
    this.words = [];
  }

  async next() {
    if (!this.words.length) {
      const counter = new Uint8Array(8);
      new DataView(counter.buffer).setBigUint64(0, BigInt(this.block));
      this.block += 1;
      const digest = new DataView(await crypto.subtle.sign("HMAC", await this.key, concat(this.label, counter)));
      for (let k = 0; k < 32; k += 4) this.words.push(digest.getUint32(k));
    }
    return this.words.shift();
  }

  /** §3: an unbiased integer in [0, n) by rejection sampling. */
  async uniform(n) {
    const limit = 2 ** 32 - (2 ** 32 % n);
    for (;;) {
      const r = await this.next();
      if (r < limit) return r % n;
    }
  }
}

/** §4: Fisher–Yates from the canonical order, driven by the key's shoe stream. */
export async function shuffleOrder(key, decks) {
  const deck = [...SUITS].flatMap((s) => [...RANKS].map((r) => r + s));
  const cards = Array.from({ length: decks }, () => deck).flat();
  const words = new Words(key, SHOE_LABEL);
  for (let i = cards.length - 1; i > 0; i -= 1) {
    const j = await words.uniform(i + 1);
    [cards[i], cards[j]] = [cards[j], cards[i]];
  }
  return cards;
}

/** §5: the timeout cut, from the key's cut stream. */
export async function timeoutCut(key, size) {
  return MIN_CUT + (await new Words(key, CUT_LABEL).uniform(size - 2 * MIN_CUT + 1));
}

const rank = (card) => RANKS.indexOf(String(card)[0]);
const value = (card) => (rank(card) < 9 ? rank(card) + 1 : 0); // §1: A = 1, 2-9, T J Q K = 0
const total = (cards) => cards.reduce((n, c) => n + value(c), 0) % 10;
const burnCount = (card) => (rank(card) < 9 ? rank(card) + 1 : 10); // §6: T J Q K burn 10
// §2: Banker total -> the values of Player's third card on which Banker draws.
const BANKER_DRAWS_ON = [null, null, null, [0, 1, 2, 3, 4, 5, 6, 7, 9], [2, 3, 4, 5, 6, 7], [4, 5, 6, 7], [6, 7], []];

/** §2/§8: one coup from the cards in shoe order: {player, banker, used}. */
export function resolveCoup(cards) {
  const player = [cards[0], cards[2]];
  const banker = [cards[1], cards[3]];
  let at = 4;
  const pt = total(player);
  const bt = total(banker);
  if (pt < 8 && bt < 8) {
    let third = null;
    if (pt <= 5) {
      player.push(cards[at]);
      third = value(cards[at]);
      at += 1;
    }
    const draws = third === null ? bt <= 5 : BANKER_DRAWS_ON[bt] === null || BANKER_DRAWS_ON[bt].includes(third);
    if (draws) {
      banker.push(cards[at]);
      at += 1;
    }
  }
  return { player, banker, used: at };
}

function readContributions(record, problems) {
  const values = [];
  const missing = [];
  (record.contributions ?? []).forEach((entry, n) => {
    const who = String(entry.player ?? `#${n + 1}`);
    if (entry.value === null || entry.value === undefined) {
      missing.push(who);
      return;
    }
    values.push({ who, value: fromHex(entry.value), commitment: String(entry.commitment).toLowerCase() });
  });
  const withheld = record.withheld;
  if (Array.isArray(withheld) && [...withheld].map(String).sort().join() !== [...missing].sort().join()) {
    problems.push(`withheld: the record says ${JSON.stringify(withheld)}, its contributions ${JSON.stringify(missing)}`);
  }
  return values;
}

/** Check a revealed shoe record (docs/fairness.md): {ok, coups, contributions, problems}. */
export async function verifyShoe(record) {
  const problems = [];
  let seed;
  let decks;
  let cut;
  let stopOffset;
  let entries;
  try {
    seed = fromHex(record.seed);
    decks = Number(record.decks ?? 8);
    cut = Number(record.cut);
    stopOffset = Number(record.stop_offset ?? 16);
    entries = readContributions(record, problems);
    if (seed.length !== 32 || ![1, 2, 4, 6, 8].includes(decks) || !Number.isInteger(cut)) throw new Error("not a shoe record");
  } catch (err) {
    return { ok: false, coups: 0, contributions: 0, problems: [`not a shoe record: ${err.message}`] };
  }
  if (toHex(await sha256(seed)) !== String(record.commitment).toLowerCase()) problems.push("the seed does not match the commitment");
  const values = [];
  for (const e of entries) {
    if (e.value.length !== 32) problems.push(`${e.who}'s contribution is not 32 bytes`);
    else if (toHex(await sha256(e.value)) !== e.commitment) problems.push(`${e.who}'s contribution does not match their commitment`);
    else values.push(e.value);
  }
  const key = await contributionKey(seed, values);
  const size = 52 * decks;
  if (cut < MIN_CUT || cut > size - MIN_CUT) return { ok: false, coups: 0, contributions: values.length, problems: [...problems, `the cut must be between ${MIN_CUT} and ${size - MIN_CUT}, not ${cut}`] };
  if (stopOffset < MIN_STOP_OFFSET || stopOffset >= size) return { ok: false, coups: 0, contributions: values.length, problems: [...problems, `the stop card cannot be ${stopOffset} cards from the end`] };
  if (record.cut_by === "croupier") {
    const honest = await timeoutCut(key, size);
    if (cut !== honest) problems.push(`the timeout cut was ${cut}, the shoe's key says ${honest}`);
  }
  const order = await shuffleOrder(key, decks);
  const cards = [...order.slice(cut), ...order.slice(0, cut)];
  const burned = Math.min(burnCount(cards[0]), cards.length - 1);
  if (record.burn_card != null && record.burn_card !== cards[0]) problems.push(`the burn card was ${record.burn_card}, the shoe says ${cards[0]}`);
  if (record.burned != null && record.burned !== burned) problems.push(`${record.burned} cards were burned, the shoe says ${burned}`);
  const stopIndex = size - stopOffset;
  let position = 1 + burned;
  let checked = 0;
  let stopSeenAt = null;
  const coups = record.coups ?? [];
  for (let n = 1; n <= coups.length; n += 1) {
    if (stopSeenAt !== null && n > stopSeenAt + 1) {
      problems.push(`coup ${n} was dealt after the last coup of the shoe`);
      break;
    }
    const expected = resolveCoup(cards.slice(position, position + 6));
    const got = coups[n - 1];
    if (JSON.stringify(got?.player) !== JSON.stringify(expected.player) || JSON.stringify(got?.banker) !== JSON.stringify(expected.banker)) {
      problems.push(`coup ${n}: recorded P ${(got?.player ?? []).join(" ")} / B ${(got?.banker ?? []).join(" ")}, the shoe deals P ${expected.player.join(" ")} / B ${expected.banker.join(" ")}`);
      break;
    }
    position += expected.used;
    checked += 1;
    if (stopSeenAt === null && position - 1 >= stopIndex) stopSeenAt = n; // §7: it came out
  }
  if (!problems.length && (record.complete ?? true)) {
    if (!(stopSeenAt !== null && checked === stopSeenAt + 1)) problems.push(`the record stops after coup ${checked}, before the shoe's last coup`);
  }
  return { ok: !problems.length, coups: checked, contributions: values.length, problems };
}
