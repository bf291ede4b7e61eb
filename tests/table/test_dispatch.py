"""The table's handlers are one explicit map, complete, and the flow one module.

:data:`server.table.dispatch.HANDLERS` names each command's check and do: every
command the table takes has exactly one entry, every ``check_``/``do_`` of a
sub-machine is in it (none left to be found by name, or never called), and no handler
hides on the :class:`~server.table.Table` class. The transitions the state triggers and
each phase's entry are :mod:`server.table.flow`'s, and the flags they read are frozen
records changed whole.
"""

from __future__ import annotations

import dataclasses
import inspect
from types import ModuleType

import pytest

from server.ledger.accounts import MemoryWallet
from server.table import (
    betting,
    contributing,
    dispatch,
    flow,
    rules,
    seating,
    shoe_offer,
    turning,
    voiding,
)
from server.table.dispatch import HANDLERS, no_check
from server.table.state import Holding, Modes, Phase
from server.table.table import Table
from server.vocabulary import commands as c
from server.vocabulary.events import Outcome
from server.vocabulary.options import TableOptions

#: The modules that hold commands' handlers.
MACHINES: tuple[ModuleType, ...] = (
    seating,
    shoe_offer,
    contributing,
    betting,
    turning,
    voiding,
    flow,
    dispatch,
)


def _subclasses(cls: type) -> set[type]:
    out: set[type] = set()
    for sub in cls.__subclasses__():
        out |= {sub, *_subclasses(sub)}
    return out


def _snake(name: str) -> str:
    return "".join(f"_{ch.lower()}" if ch.isupper() else ch for ch in name).lstrip("_")


def test_every_command_has_exactly_one_entry() -> None:
    assert set(HANDLERS) == set(c.COMMANDS)
    # Every subclass of Command anywhere (a slots dataclass is made anew: the first
    # class of each name is a subclass too, hence by name), and each as commands names it.
    subclasses = {k.__name__ for k in _subclasses(c.Command)}
    assert subclasses == {k.__name__ for k in HANDLERS}
    assert all(getattr(c, k.__name__) is k for k in HANDLERS)
    assert len(HANDLERS) == len(c.COMMANDS)
    assert list(HANDLERS) == list(c.COMMANDS)  # (in the order of commands.py)
    dos = [h.do for h in HANDLERS.values()]
    assert len(dos) == len(set(dos)), "one do serves one command"


def test_each_entry_is_named_after_its_command() -> None:
    """grep from ``PlaceBet`` finds ``check_place_bet`` and ``do_place_bet``."""
    for cls, handler in HANDLERS.items():
        name = _snake(cls.__name__)
        assert handler.do.__name__ == f"do_{name}", cls
        assert handler.check is no_check or handler.check.__name__ == f"check_{name}", cls


def test_no_check_or_do_is_left_out_of_the_map() -> None:
    mapped = {f for h in HANDLERS.values() for f in (h.check, h.do)}
    for module in MACHINES:
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if fn.__module__ != module.__name__:
                continue  # (imported from elsewhere)
            if name.startswith(("check_", "do_")):
                assert fn in mapped, f"{module.__name__}.{name} is not in HANDLERS"
    on_table = [n for n in vars(Table) if n.startswith(("_check_", "_do_", "check_", "do_"))]
    assert not on_table, on_table


def test_a_do_says_whether_it_changed_the_table() -> None:
    for cls, handler in HANDLERS.items():
        assert inspect.signature(handler.do).return_annotation in ("Outcome", Outcome), cls


def test_the_flow_is_one_module() -> None:
    assert not hasattr(rules, "NEXT")
    assert not any(n.startswith("_enter_") for n in vars(Table))
    assert set(flow.ENTER) == {phase for _, phase in flow.NEXT}


@pytest.mark.parametrize("record", [Holding(), Modes()])
def test_the_flags_next_reads_are_frozen_records(record: Holding | Modes) -> None:
    field = dataclasses.fields(record)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(record, field, None)


def test_the_holding_steps() -> None:
    """Each named step changes only what it names (§5)."""
    start = Holding()
    assert start.needs_offer and start.holder is None
    ann = start.offering().taken_by("ann").dealt().dealt()
    assert ann == Holding("ann", False, 2, False) and not ann.needs_offer
    assert ann.lost() == Holding(None, False, 2, True)
    assert ann.lost().offering().needs_offer  # (nobody holds it: still to find a holder)
    house = ann.house_takes()
    assert house == Holding(None, True, 0, False) and not house.needs_offer
    assert house.offer_again().needs_offer


def test_a_table_reads_its_flags_from_the_records() -> None:
    t = Table("t1", TableOptions(), MemoryWallet())
    assert (t.holder, t.house_holds, t.holder_coups, t.offer_needed) == (None, False, 0, True)
    assert (t.paused, t.draining) == (False, False)
    t.holding = Holding("ann", False, 3, False)
    t.modes = Modes(paused=True, draining=True)
    assert (t.holder, t.house_holds, t.holder_coups, t.offer_needed) == ("ann", False, 3, False)
    assert (t.paused, t.draining) == (True, True)
    assert flow.next_phase(t) is Phase.SHUFFLE  # (no shoe yet, whatever the flags)
