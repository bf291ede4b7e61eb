"""Each table command's check and do, named: the one map from a command to its handlers.

What it is for: :data:`HANDLERS` maps every command of :data:`server.vocabulary.commands.
COMMANDS` to a :class:`Handler`, its *check* and its *do*, written out, so that a
reader (or grep) goes from ``PlaceBet`` straight to ``betting.check_place_bet`` and
``betting.do_place_bet``. :meth:`server.table.Table.handle` checks the phase once
(:data:`server.table.rules.ALLOWED`), then looks the command up here:

- the *check* raises :class:`~server.vocabulary.errors.TableError` (what the rules' refusals
  return) and changes nothing; it returns what the do needs (a player, the bets they
  will have, the shoe). The croupier's Tick, CloseTable, SetDraining, Restored, Pause
  and Resume have none (:func:`no_check`).
- the *do* changes the table and returns an :class:`~server.vocabulary.events.Outcome`:
  ``CHANGED``, or ``ALREADY`` when it found the table so already (a duplicate step).

The handlers live with their sub-machine: :mod:`.seating`, :mod:`.shoe_offer`,
:mod:`.contributing`, :mod:`.betting`, :mod:`.turning`, :mod:`.voiding` (the operator's
controls) and :mod:`.flow` (the timers' Tick). tests/table/test_dispatch.py holds the
map complete: one entry for every command, and no ``check_``/``do_`` of a sub-machine
left out of it.

What it must never do: decide anything itself; it only names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from server.vocabulary import commands as c
from server.vocabulary.events import Outcome

from . import betting, contributing, flow, seating, shoe_offer, turning, voiding

if TYPE_CHECKING:
    from .table import Table

__all__ = ["HANDLERS", "Handler", "no_check"]

C = TypeVar("C", bound=c.Command)
X = TypeVar("X")


@dataclass(frozen=True, slots=True)
class Handler(Generic[C, X]):
    """A command's ``check`` (raises or returns what ``do`` needs) and ``do``."""

    check: Callable[[Table, C], X]
    do: Callable[[Table, C, X], Outcome]


def no_check(t: Table, cmd: c.Command) -> None:
    """The croupier's commands the phase check alone admits (nothing more to refuse)."""
    return None


def _entry(
    kind: type[C], check: Callable[[Table, C], X], do: Callable[[Table, C, X], Outcome]
) -> tuple[type[c.Command], Handler[Any, Any]]:
    """One entry, typed: ``check`` and ``do`` take ``kind``, and ``do`` what ``check``
    returns."""
    return kind, Handler(check, do)


#: Every command's check and do, in the order of :mod:`server.vocabulary.commands`.
HANDLERS: Mapping[type[c.Command], Handler[Any, Any]] = dict(
    (
        # people come and go (§5): seating
        _entry(c.Join, seating.check_join, seating.do_join),
        _entry(c.Chat, seating.check_chat, seating.do_chat),
        _entry(c.Leave, seating.check_leave, seating.do_leave),
        _entry(c.Sit, seating.check_sit, seating.do_sit),
        _entry(c.Stand, seating.check_stand, seating.do_stand),
        # chips on the felt and DONE (§3, §5, §7): betting
        _entry(c.PlaceBet, betting.check_place_bet, betting.do_place_bet),
        _entry(c.RemoveBet, betting.check_remove_bet, betting.do_remove_bet),
        _entry(c.ClearBets, betting.check_clear_bets, betting.do_clear_bets),
        _entry(c.SameBet, betting.check_same_bet, betting.do_same_bet),
        _entry(c.Done, betting.check_done, betting.do_done),
        # the shoe offered, passed and cut (§4, §5): shoe_offer
        _entry(c.AcceptShoe, shoe_offer.check_accept_shoe, shoe_offer.do_accept_shoe),
        _entry(c.DeclineShoe, shoe_offer.check_decline_shoe, shoe_offer.do_decline_shoe),
        _entry(c.PassShoe, shoe_offer.check_pass_shoe, shoe_offer.do_pass_shoe),
        _entry(c.Cut, shoe_offer.check_cut, shoe_offer.do_cut),
        # the players' contributions to a seeded shoe (fairness.md §9): contributing
        _entry(c.Contribute, contributing.check_contribute, contributing.do_contribute),
        # the turners (§6): turning
        _entry(c.Squeeze, turning.check_squeeze, turning.do_squeeze),
        _entry(c.TurnCard, turning.check_turn_card, turning.do_turn_card),
        _entry(c.Toss, turning.check_toss, turning.do_toss),
        _entry(c.Progress, turning.check_progress, turning.do_progress),
        # connections (§5): seating
        _entry(c.Disconnect, seating.check_disconnect, seating.do_disconnect),
        _entry(c.Reconnect, seating.check_reconnect, seating.do_reconnect),
        # the croupier's
        _entry(c.StartShoe, shoe_offer.check_start_shoe, shoe_offer.do_start_shoe),
        _entry(c.Tick, no_check, flow.do_tick),
        _entry(c.CloseTable, no_check, voiding.do_close_table),
        _entry(c.SetDraining, no_check, voiding.do_set_draining),
        _entry(c.VoidRound, voiding.check_void_round, voiding.do_void_round),
        _entry(c.Pause, no_check, voiding.do_pause),
        _entry(c.Resume, no_check, voiding.do_resume),
        _entry(c.Debited, betting.check_debited, betting.do_debited),
        _entry(c.Restored, no_check, seating.do_restored),
    )
)
