"""Bettors' chips queued together, stepped as one burst (issue 37 §3): each command
decided in turn as the actor decides one (a refused one answered at once: it moved
nothing), the ``bets`` of them all told in one event a kind of change
(:meth:`~server.table.Table.flush_bettors`: not one event each to everyone watching),
the whole burst stored in one commit, then delivered (store before send).

A part of :class:`~server.croupier.actor.TableActor`'s step loop, working on the actor's
own state through its decide, commit and deliver parts: it never writes or sends anything
those parts do not, never steps a burst while the store is failing or a step is in doubt,
and never lets a command of a burst be answered before the burst is stored.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from server.ledger.accounts import Entry
from server.ledger.flows import LimitGuard
from server.protocol.errors import (
    ChemmyError,
    LimitPassed,
    Overdrawn,
    Refused,
    StaleEpoch,
    StoreError,
    store_refusal,
)
from server.vocabulary import commands as c
from server.vocabulary.events import Step

from . import balances
from .items import Happened, Item
from .kinds import answer, command_of, guards_of

if TYPE_CHECKING:
    from .actor import TableActor

__all__ = ["BURST_KINDS", "BURST_MAX", "burst", "step_burst"]

log = logging.getLogger("chemmy.croupier")

#: A bettor without a seat's chips, and a spectator's chat line (shown, never stored):
#: queued together, they are stepped as one burst.
BURST_KINDS = frozenset({"bet", "same_bet", "remove_bet", "clear_bets", "chat"})
#: The most commands of one burst (one commit, one ``bets`` event a kind of change).
BURST_MAX = 200

Decided = list[tuple[Item, c.Command, Step]]


def _bursts(actor: TableActor, item: Item) -> bool:
    """Whether ``item`` is a bettor without a seat's chips, which may be stepped in a
    burst (never while the store is failing or a step is in doubt)."""
    record = item.record
    if record is None or record.kind not in BURST_KINDS or record.reply_to is None:
        return False
    p = actor.table.players.get(record.player)
    return p is not None and p.seat is None and not actor.in_doubt and actor.retry_at is None


def burst(actor: TableActor, item: Item) -> list[Item] | None:
    """``item`` and the bettors' commands queued right behind it (their turns come next:
    a thousand bettors betting at once), or None: ``item`` goes alone."""
    if not _bursts(actor, item):
        return None
    items = [item]
    while len(items) < BURST_MAX:
        following = actor.queue.peek()
        if following is None or not _bursts(actor, following):
            break
        items.append(actor.queue.get_nowait())
    return items if len(items) > 1 else None


async def step_burst(actor: TableActor, items: list[Item]) -> None:
    """Decide each of ``items``, flush the bettors' ``bets``, then commit and deliver the
    burst. A commit the store refuses for one of them (a balance or a limit passed
    meanwhile, at another table) is undone and the burst stepped again one command at a
    time."""
    table, now = actor.table, actor.clock()
    decided: Decided = []
    entries: list[Entry] = []
    guards: list[LimitGuard] = []
    table.defer_bettors()
    try:
        for item in items:
            actor._current = item
            record = item.record
            assert record is not None
            try:
                cmd = command_of(actor, record)
                assert cmd is not None  # (the kinds of BURST_KINDS are table commands)
                await balances.prepare(actor, cmd, record)
                step = await balances.decide_funded(actor, cmd, now)
            except ChemmyError as err:
                actor.wallet.drain()  # a refused command moved no money
                actor._refuse(item, err)
                continue
            except StoreError as exc:
                actor.wallet.drain()
                actor._store_failed(exc)
                actor._refuse(item, store_refusal(exc))
                continue
            entries.extend(actor.wallet.drain())
            guards.extend(guards_of(cmd, record))
            decided.append((item, cmd, step))
            actor._bursting.append(item)
        actor._current = None
        if not decided:
            table.deferred = None
            return
        flushed = table.flush_bettors(decided[-1][1])
    except Exception:
        log.exception(
            "table %s failed in a burst; restored from its last step",
            actor.table_id,
            extra={"table": actor.table_id},
        )
        actor._backoff()
        await actor._restore(entries)
        _refuse_burst(actor, Refused("internal", "the table could not do that"))
        return
    await _commit_burst(actor, decided, flushed, entries, guards)


def _refuse_burst(actor: TableActor, err: ChemmyError) -> None:
    """Answer ``err`` to the burst's item being decided and to every decided one."""
    items = [] if actor._current is None else [actor._current]
    items += actor._bursting
    actor._current, actor._bursting = None, []
    for item in items:
        actor._refuse(item, err)


async def _commit_burst(
    actor: TableActor,
    decided: Decided,
    flushed: Step,
    entries: list[Entry],
    guards: list[LimitGuard],
) -> None:
    """Store a burst's steps in one commit (as the actor's ``_commit`` does one), then
    deliver them: every event, then each command's reply at the burst's last ``seq``."""
    entries = [*entries, *actor.wallet.drain()]
    records = actor.table.drain_records()
    stored = [e for _i, _c, step in decided for e in step.stored] + flushed.stored
    if not (stored or entries or records):  # (chat lines alone: shown, never stored)
        _deliver_burst(actor, decided, flushed)
        return
    w = actor._to_write(entries, records, stored, guards)
    try:
        result = await actor._write(w)
    except StaleEpoch:
        actor._current, actor._bursting = actor._bursting[0], actor._bursting[1:]
        actor._lose(actor._current)
        return
    except (Overdrawn, LimitPassed):
        # One of them passed a balance or a limit the store holds: back to the last
        # stored step, and each command of the burst stepped alone (each told why).
        await actor._restore(entries)
        items, actor._bursting = actor._bursting, []
        for item in items:
            await actor._step(item)
        return
    except Exception as exc:
        _refuse_burst(actor, await actor._not_written(w, exc))
        return
    actor._written(w, result)
    _deliver_burst(actor, decided, flushed)


def _deliver_burst(actor: TableActor, decided: Decided, flushed: Step) -> None:
    """Every event of a stored burst goes out with its last command, then the others'
    replies (each at the burst's last seq: its events have all come first)."""
    actor._bursting = []
    events = [e for _i, _c, step in decided for e in step.events] + list(flushed.events)
    last, cmd, step = decided[-1]
    seq, in_coup = flushed.seq, flushed.coup_in_progress
    actor._deliver(last, Happened(cmd, Step(tuple(events), step.duplicate, seq, in_coup), events))
    for item, _cmd, step in decided[:-1]:
        _answer_burst(actor, item, Step((), step.duplicate, seq, in_coup))


def _answer_burst(actor: TableActor, item: Item, step: Step) -> None:
    """A burst's command answered (its events go out with the burst's last one)."""
    record = item.record
    if record is not None:
        reply = answer(actor, record, step)
        if reply is not None:
            actor.bus.reply(reply.answering(actor.table_id, step.seq))
