"""The client's words: what the message line says about the table, cards and results.

Every sentence the model (:mod:`client_cli.model`) puts on the message line is made
here, from plain values it already resolved (a player's name is ``"you"`` for you,
``"the croupier"`` for the croupier), so the wording lives in one place and can be
tested on its own. Pure functions: no I/O, no state, no rule of the game (a hand's
total is the server's ``total``, never computed here). Money becomes text only through
:func:`~client_cli.money.format_money`.

The words are the catalogs' (:mod:`client_cli.i18n`), in the current language; those
the web table says alike have the same message ids (``ev.sat``, ``result.tie``, ...).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from client_cli.i18n import LocalNames, t
from client_cli.money import format_money

__all__ = [
    "AREA_NAMES",
    "HAND_NAMES",
    "PHASES",
    "PHASE_SENTENCES",
    "SUITS",
    "betting_closed",
    "betting_opened",
    "betting_waiting",
    "burned",
    "capital",
    "card_text",
    "card_turned",
    "chat",
    "closed",
    "cut_offered",
    "debit_refused",
    "debit_refused_other",
    "debiting",
    "disconnected",
    "draining",
    "limit_amount",
    "limit_change_text",
    "limit_line",
    "limit_refusal",
    "limits_text",
    "paused",
    "reality_text",
    "reconnected",
    "refusal",
    "restriction_text",
    "result_text",
    "resumed",
    "sat",
    "settled",
    "shoe_accepted",
    "shoe_cut",
    "shoe_declined",
    "shoe_ended",
    "shoe_held_by_house",
    "shoe_offered",
    "shoe_passed",
    "shoe_started",
    "squeezing",
    "stood",
    "stop_card",
    "third_card",
    "turn",
    "voided",
    "waiting",
]

AREA_NAMES: Mapping[str, str] = LocalNames(
    "area.",
    (
        "player",
        "banker",
        "tie",
        "player_pair",
        "banker_pair",
        "super6",
        "dragon_player",
        "dragon_banker",
    ),
)
SUITS = {"s": "♠", "h": "♥", "d": "♦", "c": "♣"}
HAND_NAMES: Mapping[str, str] = LocalNames("hand.", ("player", "banker"))

#: What the message line says right after a snapshot, by phase.
#: A table's phases, as the server names them (docs/protocol.md).
PHASES: tuple[str, ...] = (
    "betting",
    "debiting",
    "turn",
    "shoe_offer",
    "cut",
    "reveal",
    "waiting",
    "shuffle",
    "paused",
    "closed",
)
PHASE_SENTENCES: Mapping[str, str] = LocalNames("phase_sentence.", PHASES)

_PASS_REASONS = ("player_won", "passed", "stood", "left", "timeout", "no_banker_bet")


def capital(text: str) -> str:
    """``"you"`` -> ``"You"``; a name keeps its own case after the first letter."""
    return text[:1].upper() + text[1:]


def _hand(hand: object) -> str:
    return HAND_NAMES.get(str(hand), str(hand))


def _me(who: str) -> bool:
    return who == t("who.you")


# ---------------------------------------------------------------------------- cards


def card_text(card: str | None) -> str:
    """``"Td"`` -> ``"10♦"``; ``None`` (face down) -> ``"??"``."""
    if not card:
        return "??"
    rank, suit = card[:-1], card[-1:]
    rank = "10" if rank == "T" else rank
    return f"{rank}{SUITS.get(suit, suit)}"


def result_text(result: Mapping[str, Any]) -> str:
    """``{"outcome": "banker", "banker_total": 7, "player_total": 5, ...}`` ->
    ``"Banker wins 7 to 5"`` (with naturals and pairs noted); a voided round's record
    (``"void": true``, no outcome) -> ``"Voided (reason): every bet returned"``."""
    if result.get("void"):
        return t("result.void", reason=str(result.get("reason") or ""))
    pt = int(result.get("player_total", 0))
    bt = int(result.get("banker_total", 0))
    outcome = result.get("outcome")
    key = (
        "result.tie"
        if outcome == "tie"
        else "result.player"
        if outcome == "player"
        else "result.banker"
    )
    text = t(key, player=pt, banker=bt)
    notes = []
    if result.get("natural"):
        notes.append(t("result.natural"))
    if result.get("player_pair"):
        notes.append(AREA_NAMES["player_pair"])
    if result.get("banker_pair"):
        notes.append(AREA_NAMES["banker_pair"])
    return t("result.with_notes", text=text, notes=", ".join(notes)) if notes else text


# ---------------------------------------------------------------------------- players


def sat(who: str, seat: object, *, me: bool) -> str:
    return t("ev.sat_you", seat=seat) if me else t("ev.sat", name=who, seat=seat)


def stood(who: str, reason: object) -> str:
    you = "_you" if _me(who) else ""
    if reason == "left":
        return capital(t("ev.left" + you, who=who))
    if reason == "timeout":
        return capital(t("ev.timed_out" + you, who=who))
    return capital(t("ev.stood" + you, who=who))


def stand_after_coup(who: str, *, me: bool) -> str:
    return t("ev.stand_after_coup_you") if me else capital(t("ev.stand_after_coup", who=who))


def disconnected(who: str) -> str:
    return capital(t("ev.disconnected", who=who))


def reconnected(who: str) -> str:
    return capital(t("ev.reconnected", who=who))


def chat(name: object, text: object) -> str:
    return f"{name}: {text}"


# ---------------------------------------------------------------------------- the shoe


def shoe_started(shoe_no: object, commitment: object) -> str:
    return t("cli.ev.shoe_started", shoe=shoe_no, commitment=str(commitment or "")[:12])


def shoe_offered(who: str, *, me: bool) -> str:
    return t("cli.ev.shoe_offered_you") if me else t("ev.shoe_offered", who=who)


def shoe_accepted(who: str, *, me: bool) -> str:
    return t("ev.shoe_accepted_you") if me else capital(t("ev.shoe_accepted", who=who))


def shoe_declined(who: str, *, timeout: bool) -> str:
    key = "ev.shoe_declined" + ("_timeout" if timeout else "") + ("_you" if _me(who) else "")
    return capital(t(key, who=who))


def shoe_held_by_house() -> str:
    return t("ev.house_holds")


def shoe_passed(who: str, reason: object) -> str:
    why = t(f"pass_reason.{reason}") if reason in _PASS_REASONS else str(reason)
    return t("ev.shoe_passed_you" if _me(who) else "ev.shoe_passed", who=who, why=why)


def cut_offered(who: str, *, me: bool) -> str:
    return t("cli.ev.cut_offered_you") if me else capital(t("ev.cut_offered", who=who))


def shoe_cut(position: object, by: str, on_behalf: str | None) -> str:
    who = t("cli.croupier_for", who=on_behalf) if on_behalf else by
    return t("ev.shoe_cut", position=position, who=who)


def contribution_committed(who: str, *, me: bool) -> str:
    """docs/fairness.md §9: randomness committed to the shoe (the client sends it)."""
    return t("ev.contribution_committed_you") if me else t("ev.contribution_committed", who=who)


def reveal_opened() -> str:
    return t("ev.reveal_opened")


def contribution_revealed(who: str, *, mine: bool = False) -> str:
    """``Ann revealed their randomness``; yours: ``You revealed your randomness``."""
    return t("ev.contribution_revealed_you") if mine else t("ev.contribution_revealed", who=who)


def contributions_closed(count: int, withheld: list[str], *, mine: bool) -> str:
    """``Your randomness is in this shoe (3 players' in all)``, and who withheld theirs."""
    text = (
        t("ev.contributions_closed_you", count=count)
        if mine
        else t("ev.contributions_closed", count=count)
    )
    if withheld:
        text += " " + t("ev.contributions_withheld", who=", ".join(withheld))
    return text


def burned(card: str | None, count: int) -> str:
    return t("cli.ev.burned", card=card_text(card), count=count)


def waiting() -> str:
    return t("phase_sentence.waiting")


def stop_card() -> str:
    return t("ev.stop_card")


def shoe_ended(shoe_no: object, coups: int) -> str:
    return t("ev.shoe_ended", shoe=shoe_no, count=coups)


def closed(*, refunded: bool) -> str:
    return t("ev.closed_refunded") if refunded else t("phase_sentence.closed")


# ---------------------------------------------------------------------------- betting


def betting_opened(coup_no: int, last_result: str) -> str:
    if last_result:
        return t("ev.betting_opened_last", coup=coup_no, last=last_result)
    return t("ev.betting_opened", coup=coup_no)


def betting_waiting() -> str:
    return t("ev.betting_waiting")


def draining() -> str:
    return t("cli.ev.draining")


def paused(*, coup_finishes: bool) -> str:
    """An operator paused the table: at once, or once this coup is over."""
    return t("ev.paused_after_coup") if coup_finishes else t("ev.paused")


def resumed() -> str:
    return t("ev.resumed")


def voided(reason: object) -> str:
    """An operator voided the coup: every bet went back (docs/operations.md §8)."""
    return t("ev.voided", reason=str(reason or ""))


def betting_closed() -> str:
    return t("ev.no_more_bets")


def debiting() -> str:
    return t("ev.debiting")


#: The reasons a debit refusal is told in (docs/protocol.md ``debit_refused``).
_DEBIT_REFUSALS = (
    "insufficient_funds",
    "limit_reached",
    "player_blocked",
    "account_locked",
    "session_expired",
    "unknown_player",
    "currency_mismatch",
)


def debit_refused(reason: object) -> str:
    """Your bets were not placed, and why, in plain words (docs/wallet.md §3)."""
    code = reason if reason in _DEBIT_REFUSALS else "wallet_unavailable"
    return t(f"ev.debit_refused.{code}")


def debit_refused_other(name: str) -> str:
    return t("ev.debit_refused_other", name=capital(name))


# ---------------------------------------------------------------------------- turning


def turn(who: str, hand: object, *, third: bool, me: bool) -> str:
    what = _what(hand, third=third)
    if me:
        return t("ev.turn_you", what=what)
    return capital(t("ev.turn", who=who, what=what))


def _what(hand: object, *, third: bool) -> str:
    """``the Player cards``, ``the Banker third card``: one message id a hand."""
    h = hand if hand in HAND_NAMES else "player"
    return t(f"ev.what_third.{h}" if third else f"ev.what_cards.{h}")


def squeezing(who: str, hand: object, style: object) -> str:
    return capital(t("ev.squeeze", who=who, what=_what(hand, third=False), style=style))


def card_turned(hand: object, index: int, card: str | None, total: int | None) -> str:
    """``"Player card 1: A♣ — Player 1"``: the hand's total is the server's, when given."""
    if total is None:
        return t("ev.card", hand=_hand(hand), index=index, card=card_text(card))
    return t("ev.card_total", hand=_hand(hand), index=index, card=card_text(card), total=total)


def third_card(hand: object) -> str:
    return t("ev.third_card", hand=_hand(hand))


def settled(result: Mapping[str, Any] | None, net: int | None, outcomes: Sequence[str] = ()) -> str:
    """The result and your part of it: ``"Banker wins 7 to 5 — You won 9.50"``. A net
    of zero is a push only when every bet of yours pushed (``outcomes``, your payouts'
    ``outcome``s); bets won and lost that cancel out break even."""
    text = result_text(result) if result else t("ev.settled")
    if net is None:
        return text
    if net > 0:
        return t("ev.won", text=text, amount=format_money(net))
    if net < 0:
        return t("ev.lost", text=text, amount=format_money(-net))
    if outcomes and any(o != "push" for o in outcomes):
        return t("ev.even", text=text)
    return t("ev.push", text=text)


def restriction_text(restriction: Mapping[str, Any] | None) -> str:
    """A break or self-exclusion in force, in plain words (``None``: none), its end in
    UTC: ``"You are taking a break until 2026-12-02 16:40 UTC: you cannot sit or bet
    until then."``"""
    if not restriction:
        return t("cli.responsible.none")
    end = datetime.datetime.fromtimestamp(float(restriction["until"]), datetime.UTC)
    until = end.strftime("%Y-%m-%d %H:%M UTC")  # a given time, in words: no clock read
    if restriction.get("kind") == "exclusion":
        return t("cli.responsible.excluded", until=until)
    return t("cli.responsible.on_break", until=until)


# ---------------------------------------------------------------------------- limits

#: The limits a player may set (docs/protocol.md §6 ``set_limit``), in the order shown.
LIMIT_KINDS: tuple[str, ...] = (
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
)


def _utc(seconds: float) -> str:
    """A given time (Unix seconds) in words, in UTC: no clock read."""
    return datetime.datetime.fromtimestamp(float(seconds), datetime.UTC).strftime(
        "%Y-%m-%d %H:%M UTC"
    )


def limit_amount(kind: str, amount: int) -> str:
    """A limit's amount as people read it: money, or minutes for the session."""
    if kind == "session":
        return t("page.limits.minutes", count=amount)
    return format_money(int(amount))


def _pending(kind: str, pending: Mapping[str, Any] | None) -> str:
    if not pending:
        return ""
    date = _utc(pending["from"])
    if pending.get("amount") is None:
        return t("page.limits.removed_on", date=date)
    return t("page.limits.rises", amount=limit_amount(kind, int(pending["amount"])), date=date)


def limit_line(kind: str, limit: Mapping[str, Any]) -> str:
    """One limit in force: ``"Daily loss limit: 50.00 — 12.00 left"``, and a raise or a
    removal that waits: ``"… (rises to 100.00 on 2026-12-02 18:40 UTC)"``."""
    line = t(
        "page.limits.line",
        limit=t(f"page.limits.kind.{kind}"),
        amount=limit_amount(kind, int(limit["amount"])),
        left=limit_amount(kind, int(limit.get("remaining", limit["amount"]))),
    )
    pending = _pending(kind, limit.get("pending"))
    return t("page.limits.with_pending", line=line, pending=pending) if pending else line


def limits_text(reply: Mapping[str, Any]) -> str:
    """A ``limits`` reply in plain words, one limit a line (the session's length and its
    reality check after them)."""
    limits: Mapping[str, Any] = reply.get("limits") or {}
    order = {k: i for i, k in enumerate(LIMIT_KINDS)}
    lines = [limit_line(k, limits[k]) for k in sorted(limits, key=lambda k: order.get(k, 99))]
    if not lines:
        lines.append(t("page.limits.none"))
    session = reply.get("session") or {}
    if isinstance(session.get("seconds"), int):
        lines.append(t("cli.limits.session", count=session["seconds"] // 60))
    if session.get("reality_check"):
        lines.append(t("page.limits.reality_every", count=session["reality_check"]))
    return "\n".join(lines)


def limit_change_text(kind: str, reply: Mapping[str, Any]) -> str:
    """What a ``set_limit`` or ``remove_limit`` did to ``kind``: in force now, waiting
    its 24 hours, or none."""
    limit = (reply.get("limits") or {}).get(kind)
    name = t(f"page.limits.kind.{kind}")
    if not limit:
        return t("page.limits.gone", limit=name)
    if limit.get("pending"):
        return t("page.limits.waits", limit=name, pending=_pending(kind, limit["pending"]))
    return t("page.limits.now", limit=name, amount=limit_amount(kind, int(limit["amount"])))


def limit_refusal(message: object, limit: Mapping[str, Any] | None) -> str:
    """``limit_reached`` in words: the server's own message in English, else the
    catalog's with the limit (the error's ``limit``: kind, amount, what remains)."""
    from client_cli.i18n import current_language, refusal_text

    if current_language() == "en" and message:
        return str(message)
    if not limit or not limit.get("kind"):
        return refusal_text("limit_reached", message)
    kind = str(limit["kind"])
    words = {
        "limit": t(f"page.limits.kind.{kind}").lower(),
        "amount": limit_amount(kind, int(limit.get("amount", 0))),
        "left": limit_amount(kind, int(limit.get("remaining", 0))),
    }
    key = "page.refused.session_limit" if kind == "session" else "page.refused.limit_reached"
    return t(key, **words)


def refusal(code: object, message: object, reply: Mapping[str, Any] | None = None) -> str:
    """Any refusal in words (:func:`~client_cli.i18n.refusal_text`), ``limit_reached``
    with its limit (``reply``: the error message as the server sent it)."""
    from client_cli.i18n import refusal_text

    if code == "limit_reached":
        limit = (reply or {}).get("limit")
        return limit_refusal(message, limit if isinstance(limit, Mapping) else None)
    return refusal_text(code, message)


def reality_text(check: Mapping[str, Any]) -> str:
    """A ``reality_check`` in words: ``"You have played for 30 minutes. Net result:
    -12.50."`` (and what was staked, when the server could say)."""
    seconds = max(0, int(check.get("session_seconds") or 0))
    if seconds < 60:
        parts = [t("page.reality.seconds", count=seconds)]
    else:
        parts = [t("page.reality.minutes", count=seconds // 60)]
    net, staked = check.get("net"), check.get("staked")
    if isinstance(net, int):
        parts.append(t("page.reality.net", net=format_money(net, sign=True)))
    if isinstance(staked, int):
        parts.append(t("page.reality.staked", amount=format_money(staked)))
    return " ".join(parts)
