"""The players' contributions to a shoe: commit, then reveal (docs/fairness.md §9).

What it is for: the ``contribute`` command and the REVEAL phase of
:class:`~server.table.Table`, as functions over the table and its
:class:`~server.table.state.Contributions`. From ``shoe_started`` until the cut every
seated player may commit to 32 secret bytes (``contribute`` with ``commitment``:
``contribution_committed``). The cut, the cutter's or the timeout's, closes the
commitments (:func:`cut`): with none, it is applied at once as always; with some, the
table opens the reveal (``reveal_opened``, the ``reveal`` timer) and each committed
player sends their value (``contribution_revealed``). When all are in, or the timer runs
out, :func:`close_reveal` publishes them and who withheld (``contributions_closed``),
mixes them into the shoe (:meth:`server.engine.shoe.Shoe.mix`) and applies the cut: the
player's, or the timeout cut from the key.

What it must never do: make randomness (the values are the players', the seed the
croupier's), or let a refused contribution change anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from server.engine.shoe import commitment, timeout_cut
from server.vocabulary import commands as c
from server.vocabulary.errors import TableError, refuse
from server.vocabulary.events import Outcome

from . import shoe_offer
from .rules import commit_refusal, reveal_refusal
from .state import Contributions, Phase

if TYPE_CHECKING:
    from .table import Table

__all__ = [
    "check_contribute",
    "close_reveal",
    "cut",
    "cutter_of",
    "do_contribute",
    "enter_reveal",
    "record",
    "start",
    "tick",
]


def check_contribute(t: Table, cmd: c.Contribute) -> None:
    k = t.contributions
    if cmd.commitment is not None:
        refuse(commit_refusal(t, cmd.player))
        assert k is not None
        if cmd.commitment in k.commitments.values():
            raise TableError("contribution_taken", "another player committed exactly that")
        return
    refuse(reveal_refusal(t, cmd.player))
    assert k is not None and cmd.value is not None
    if commitment(bytes.fromhex(cmd.value)) != k.commitments[cmd.player]:
        raise TableError("reveal_mismatch", "that value does not match your commitment")


def do_contribute(t: Table, cmd: c.Contribute, ctx: None) -> Outcome:
    k = t.contributions
    assert k is not None
    if cmd.commitment is not None:
        k.commitments[cmd.player] = cmd.commitment
        t.emit("contribution_committed", {"player": cmd.player, "commitment": cmd.commitment})
        return Outcome.CHANGED
    assert cmd.value is not None
    k.values[cmd.player] = cmd.value
    t.emit("contribution_revealed", {"player": cmd.player, "value": cmd.value})
    if not k.withheld():
        close_reveal(t)
    return Outcome.CHANGED


def cut(t: Table, position: int | None, by: str, on_behalf: str | None) -> None:
    """The cut at ``position`` (None: the timeout cut) closes the commitments: applied at
    once when nobody committed, or after the reveal (``reveal_opened``)."""
    assert t.shoe is not None
    k = t.contributions
    if k is not None:
        k.closed = True
    if k is None or not k.commitments:
        if position is None:
            assert t.shoe.seed is not None
            position = timeout_cut(t.shoe.seed, t.shoe.size)
        shoe_offer.apply_cut(t, position, by, on_behalf)
        return
    k.cut = {"position": position, "by": by, "on_behalf": on_behalf}
    t.deadline = t.now + t.options.timers.reveal
    t.emit(
        "reveal_opened",
        {
            "deadline": t.deadline,
            "players": list(k.commitments),
            "cut": position,  # the cutter's; None: the timeout's, from the key later
            "cutter": cutter_of(k),
        },
    )


def cutter_of(k: Contributions) -> str | None:
    """Whose cut waits for the reveal: the cutter, who cut or on whose behalf the
    croupier did (None when no cut waits)."""
    if k.cut is None:
        return None
    return str(k.cut["on_behalf"] or k.cut["by"])


def close_reveal(t: Table) -> None:
    """Every committed player revealed, or the reveal timer ran out: publish the values
    and who withheld, mix the values into the shoe, apply the cut."""
    k, shoe = t.contributions, t.shoe
    assert k is not None and k.cut is not None and shoe is not None
    pending, k.cut = k.cut, None
    revealed = [{"player": p, "value": v} for p, v in k.values.items()]
    t.emit("contributions_closed", {"contributions": revealed, "withheld": k.withheld()})
    shoe.mix(bytes.fromhex(v) for v in k.values.values())
    position = pending["position"]
    if position is None:
        key = shoe.shuffle_key
        assert key is not None
        position = timeout_cut(key, shoe.size)
    shoe_offer.apply_cut(t, position, pending["by"], pending["on_behalf"])


def tick(t: Table) -> None:
    """The reveal timer ran out: the values not in are withheld."""
    if t.phase is Phase.REVEAL and t.deadline is not None and t.now >= t.deadline:
        close_reveal(t)


def enter_reveal(t: Table) -> bool:
    """The table waits for the reveals (its ``deadline`` was set by :func:`cut`)."""
    t.phase = Phase.REVEAL
    return False


def start(t: Table, seeded: bool) -> None:
    """A new shoe: commitments open when it is seeded (a stacked shoe takes none)."""
    t.contributions = Contributions() if seeded else None


def record(k: Contributions | None) -> dict[str, Any]:
    """The shoe record's ``contributions`` and ``withheld`` (docs/fairness.md)."""
    if k is None:
        return {"contributions": [], "withheld": []}
    return {
        "contributions": [
            {"player": p, "commitment": cm, "value": k.values.get(p)}
            for p, cm in k.commitments.items()
        ],
        "withheld": k.withheld(),
    }
