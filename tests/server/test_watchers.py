"""Who watches each table at a gateway (server/gateway/watchers.py): a table has watchers
while a connection joined it or has a join on its way, and the gateway hears the table
exactly as long (issue 22)."""

from __future__ import annotations

from server.gateway.watchers import Watchers


def test_a_join_on_its_way_counts_until_answered() -> None:
    w = Watchers()
    w.joining(1, "t1")
    assert w.tables() == {"t1"} and w.watching("t1") == 1
    assert w.answered(1, "t1", joined=False) is True  # refused: nobody left
    assert w.tables() == set()


def test_the_last_to_leave_ends_the_table() -> None:
    w = Watchers()
    for sid in (1, 2):
        w.joining(sid, "t1")
        assert w.answered(sid, "t1", joined=True) is False
    assert w.left(1, "t1") is False
    assert w.left(2, "t1") is True
    assert w.left(2, "t1") is False  # twice: nothing more


def test_a_refused_second_join_keeps_a_joined_connection() -> None:
    w = Watchers()
    w.joining(1, "t1")
    w.answered(1, "t1", joined=True)
    w.joining(1, "t1")
    assert w.answered(1, "t1", joined=False) is False
    assert w.watching("t1") == 1


def test_a_join_waiting_behind_a_leave_is_not_ended_by_it() -> None:
    w = Watchers()
    w.joining(1, "t1")
    w.answered(1, "t1", joined=True)
    w.joining(1, "t1")  # sent while the player's leave is still on its way
    assert w.left(1, "t1") is False  # the leave is answered: the join still counts
    assert w.answered(1, "t1", joined=True) is False
    assert w.watching("t1") == 1


def test_a_closed_connection_leaves_everything_even_joins_on_their_way() -> None:
    w = Watchers()
    w.joining(1, "t1")
    w.answered(1, "t1", joined=True)
    w.joining(1, "t2")
    w.joining(2, "t2")
    assert sorted(w.gone(1)) == ["t1"]  # t2 still has session 2's join
    assert w.answered(1, "t2", joined=True) is False  # a late answer changes nothing
    assert w.tables() == {"t2"}
    assert w.gone(2) == ["t2"]
    assert w.tables() == set()


def test_a_closed_table_has_nobody() -> None:
    w = Watchers()
    w.joining(1, "t1")
    w.joining(1, "t2")
    w.drop("t1")
    assert w.tables() == {"t2"}
    assert w.gone(1) == ["t2"]
