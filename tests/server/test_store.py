"""The store contract: one suite, run against every implementation (httpcore's shape)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from server.store import (
    HISTORY_LIMIT,
    KeyConflict,
    MemoryStore,
    Overdrawn,
    SQLiteStore,
    Store,
    StoreError,
    TableRow,
    open_store,
    store_for,
)
from server.table.wallet import CASHIER, HOUSE, Entry, MemoryWallet

Factory = Callable[[Path], Store]

FACTORIES: dict[str, Factory] = {
    "memory": lambda _path: MemoryStore(),
    "sqlite": lambda path: SQLiteStore(path / "chemmy.sqlite3"),
}


@pytest.fixture(params=sorted(FACTORIES))
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    made = FACTORIES[request.param](tmp_path)
    await made.open()
    yield made
    await made.close()


def bet(key: str, player: str, amount: int, round_id: str = "r1") -> Entry:
    return Entry(key, f"player:{player}", "held:t1", amount, "bet", round_id)


def round_record(n: int, players: list[str], table: str = "t1") -> dict[str, Any]:
    return {
        "kind": "round",
        "round_id": f"{table}-r{n}",
        "table": table,
        "shoe_no": 1 + n // 80,
        "coup_no": n % 80,
        "players": players,
        "winner": "banker",
        "at": 1_700_000_000.5 + n,
    }


async def snapshot(store: Store) -> dict[str, Any]:
    """Everything observable, to show a refused commit changed nothing."""
    return {
        "balances": await store.load_balances(),
        "ledger": await store.ledger(),
        "tables": await store.load_tables(),
        "history": await store.history("ann"),
        "round": await store.round_record("t1-r99"),
        "shoes": await store.shoe_records("t1"),
    }


# -- players and the welcome funding ---------------------------------------------------


async def test_welcome_funding(store: Store) -> None:
    assert await store.ensure_player("ann", "Ann", 100_000) == 100_000
    assert await store.has_entry("welcome:ann")
    [entry] = await store.ledger("player:ann")
    assert entry == Entry("welcome:ann", CASHIER, "player:ann", 100_000, "welcome")
    # Known players are not funded again; the display name is updated.
    assert await store.ensure_player("ann", "Annie", 5) == 100_000
    assert await store.player_name("ann") == "Annie"
    assert await store.player_name("bob") is None
    balances = await store.load_balances()
    assert balances == {"player:ann": 100_000, CASHIER: -100_000}
    assert await store.balances(["player:ann", "player:nobody"]) == {
        "player:ann": 100_000,
        "player:nobody": 0,
    }


async def test_welcome_with_nothing(store: Store) -> None:
    assert await store.ensure_player("zed", "Zed", 0) == 0
    assert not await store.has_entry("welcome:zed")
    assert (await store.load_balances())["player:zed"] == 0
    with pytest.raises(StoreError):
        await store.ensure_player("neg", "Neg", -1)


# -- commit: idempotency, conflicts, overdraft, atomicity -------------------------------


async def test_idempotent_commit(store: Store) -> None:
    await store.ensure_player("ann", "Ann", 1000)
    entry = bet("r1:ann:banker", "ann", 300)
    assert await store.commit(entries=[entry]) == 1
    assert await store.commit(entries=[entry]) == 0
    assert await store.commit(entries=[entry, entry]) == 0
    assert await store.balances(["player:ann", "held:t1"]) == {
        "player:ann": 700,
        "held:t1": 300,
    }
    assert len(await store.ledger()) == 2
    # Duplicates inside one commit count once.
    other = bet("r2:ann:banker", "ann", 100, "r2")
    assert await store.commit(entries=[other, other]) == 1
    assert (await store.balances(["player:ann"]))["player:ann"] == 600


async def test_conflicting_key_changes_nothing(store: Store) -> None:
    await store.ensure_player("ann", "Ann", 1000)
    await store.commit(entries=[bet("k", "ann", 300)])
    before = await snapshot(store)
    fresh = bet("k2", "ann", 50)
    with pytest.raises(KeyConflict):
        await store.commit(
            entries=[fresh, bet("k", "ann", 301)],
            table=TableRow("t1", {"tier": "1-100"}, {"phase": "betting"}, 5),
            records=[round_record(99, ["ann"])],
        )
    assert await snapshot(store) == before
    assert not await store.has_entry("k2")
    with pytest.raises(StoreError):  # a conflict within one commit
        await store.commit(entries=[fresh, Entry("k2", HOUSE, "player:ann", 50, "bet", "r1")])
    assert await snapshot(store) == before


async def test_overdraft_is_refused_atomically(store: Store) -> None:
    await store.ensure_player("ann", "Ann", 1000)
    await store.ensure_player("bob", "Bob", 1000)
    await store.save_table(TableRow("t1", {"tier": "1-100"}, {"phase": "betting"}, 4))
    before = await snapshot(store)
    with pytest.raises(Overdrawn):
        await store.commit(
            entries=[bet("b1", "bob", 500), bet("a1", "ann", 600), bet("a2", "ann", 600)],
            table=TableRow("t1", {"tier": "1-100"}, {"phase": "dealing"}, 5),
            records=[
                round_record(99, ["ann", "bob"]),
                {"kind": "shoe", "table": "t1", "shoe_no": 9},
            ],
        )
    assert await snapshot(store) == before
    assert isinstance(Overdrawn("x"), StoreError)
    # Entries are checked in order: paying back first does not excuse an earlier overdraft.
    win = Entry("w1", "held:t1", "player:ann", 500, "win", "r1")
    with pytest.raises(Overdrawn):
        await store.commit(entries=[bet("a3", "ann", 1200), win])
    assert await snapshot(store) == before
    # Non-player accounts may go negative (the house, the cashier, held wagers).
    assert await store.commit(entries=[Entry("h1", HOUSE, "player:ann", 5, "win")]) == 1
    assert (await store.balances([HOUSE]))[HOUSE] == -5


async def test_invalid_input_is_refused(store: Store) -> None:
    await store.ensure_player("ann", "Ann", 1000)
    before = await snapshot(store)
    bad_entries = [
        Entry("z", "player:ann", "house", 0, "bet"),
        Entry("z", "player:ann", "house", -5, "bet"),
        Entry("z", "player:ann", "player:ann", 5, "bet"),
        Entry("", "player:ann", "house", 5, "bet"),
        Entry("z", "player:ann", "house", True, "bet"),
        Entry("z", HOUSE, CASHIER, 1 << 70, "x"),  # wider than 64 bits
    ]
    for entry in bad_entries:
        with pytest.raises(StoreError):
            await store.commit(entries=[entry])
    bad_records: list[dict[str, Any]] = [
        {"kind": "coup"},
        {"kind": "round", "table": "t1", "shoe_no": 1, "coup_no": 1, "players": []},
        {**round_record(1, ["ann"]), "players": "ann"},
        {**round_record(1, ["ann"]), "shoe_no": "1"},
        {"kind": "shoe", "table": "t1"},
        {**round_record(1, ["ann"]), "blob": object()},
        {**round_record(1, ["ann"]), "nan": float("nan")},
    ]
    for record in bad_records:
        with pytest.raises(StoreError):
            await store.commit(entries=[bet("ok", "ann", 1)], records=[record])
    with pytest.raises(StoreError):
        await store.commit(table=TableRow("t1", {"x": {1, 2}}))
    with pytest.raises(StoreError):  # a balance past 64 bits
        huge = (1 << 63) - 1
        await store.commit(
            entries=[
                Entry("big1", HOUSE, CASHIER, huge, "x"),
                Entry("big2", HOUSE, CASHIER, huge, "x"),
            ]
        )
    assert await snapshot(store) == before


async def test_closed_store_raises_store_error(tmp_path: Path) -> None:
    for make in FACTORIES.values():
        closed = make(tmp_path)
        with pytest.raises(StoreError):
            await closed.load_balances()
        await closed.close()  # closing what was never opened is harmless


# -- tables ------------------------------------------------------------------------------


async def test_table_round_trip(store: Store) -> None:
    assert await store.load_tables() == []
    t2 = TableRow("t2", {"tier": "10-1000", "decks": 8}, None, 0)
    t1 = TableRow("t1", {"tier": "1-100"}, {"phase": "betting", "seats": [None, "ann"]}, 7)
    await store.save_table(t2)
    await store.save_table(t1)
    assert await store.load_tables() == [t2, t1]
    t2b = TableRow("t2", t2.config, {"phase": "dealing", "cards": [["K", "s"]]}, 8)
    await store.commit(table=t2b)
    assert await store.load_tables() == [t2b, t1]  # upserted in place
    await store.save_table(TableRow("t1", t1.config, t1.state, 9, closed=True))
    assert await store.load_tables() == [t2b]


# -- records -----------------------------------------------------------------------------


async def test_history_newest_first_and_limited(store: Store) -> None:
    for n in range(120):
        players = ["ann"] if n % 2 else ["ann", "bob"]
        await store.commit(records=[round_record(n, players)])
    history = await store.history("ann")
    assert len(history) == HISTORY_LIMIT == 100
    assert [r["round_id"] for r in history] == [f"t1-r{n}" for n in range(119, 19, -1)]
    assert history[0] == round_record(119, ["ann"])
    assert [r["round_id"] for r in await store.history("ann", limit=3)] == [
        "t1-r119",
        "t1-r118",
        "t1-r117",
    ]
    assert len(await store.history("ann", limit=500)) == 100
    bob = await store.history("bob", limit=2)
    assert [r["round_id"] for r in bob] == ["t1-r118", "t1-r116"]
    assert await store.history("carol") == []
    assert await store.round_record("t1-r7") == round_record(7, ["ann"])
    assert await store.round_record("nope") is None


async def test_round_record_upsert_keeps_its_place(store: Store) -> None:
    await store.commit(records=[round_record(1, ["ann", "bob"]), round_record(2, ["ann"])])
    # A retried commit writes the same record again: nothing moves.
    await store.commit(records=[round_record(1, ["ann", "bob"])])
    assert [r["round_id"] for r in await store.history("ann")] == ["t1-r2", "t1-r1"]
    # A corrected record replaces the old one and its player index.
    await store.commit(records=[{**round_record(1, ["ann"]), "winner": "player"}])
    assert [r["round_id"] for r in await store.history("ann")] == ["t1-r2", "t1-r1"]
    assert await store.history("bob") == []
    assert (await store.round_record("t1-r1") or {})["winner"] == "player"


async def test_shoe_records(store: Store) -> None:
    assert await store.shoe_record("t1") is None
    for n in (1, 2, 3):
        shoe = {"kind": "shoe", "table": "t1", "shoe_no": n, "seed": f"s{n}", "cards": ["Ks"]}
        await store.commit(records=[shoe])
    await store.commit(records=[{"kind": "shoe", "table": "t2", "shoe_no": 9, "seed": "x"}])
    # A shoe still in play may be recorded unrevealed (its commitment only).
    await store.commit(
        records=[{"kind": "shoe", "table": "t1", "shoe_no": 4, "revealed": False, "hash": "h"}]
    )
    assert (await store.shoe_record("t1") or {})["shoe_no"] == 3
    assert (await store.shoe_record("t1", 2) or {})["seed"] == "s2"
    assert (await store.shoe_record("t1", 4) or {})["hash"] == "h"
    assert await store.shoe_record("t1", 5) is None
    assert await store.shoe_record("t3") is None
    assert [s["shoe_no"] for s in await store.shoe_records("t1")] == [4, 3, 2, 1]
    assert [s["shoe_no"] for s in await store.shoe_records("t1", limit=2)] == [4, 3]
    # Revealing it later replaces the record.
    await store.commit(records=[{"kind": "shoe", "table": "t1", "shoe_no": 4, "seed": "s4"}])
    assert (await store.shoe_record("t1") or {})["seed"] == "s4"


# -- the ledger and the audit -------------------------------------------------------------


async def test_ledger_and_audit(store: Store) -> None:
    assert await store.audit() == {"sum": 0, "ledger_matches": True, "entries": 0}
    await store.ensure_player("ann", "Ann", 1000)
    await store.ensure_player("bob", "Bob", 1000)
    await store.commit(
        entries=[
            bet("r1:ann", "ann", 100),
            bet("r1:bob", "bob", 200),
            Entry("r1:ann:win", "held:t1", "player:ann", 100, "return", "r1"),
            Entry("r1:ann:pay", HOUSE, "player:ann", 95, "win", "r1"),
            Entry("r1:bob:lose", "held:t1", HOUSE, 200, "lose", "r1"),
        ]
    )
    audit = await store.audit()
    assert audit == {"sum": 0, "ledger_matches": True, "entries": 7}
    ann = await store.ledger("player:ann")
    assert [e.key for e in ann] == ["r1:ann:pay", "r1:ann:win", "r1:ann", "welcome:ann"]
    assert [e.key for e in await store.ledger(limit=2)] == ["r1:bob:lose", "r1:ann:pay"]
    assert await store.ledger("player:nobody") == []
    assert await store.balances(["player:ann", "player:bob", HOUSE, "held:t1"]) == {
        "player:ann": 1095,
        "player:bob": 800,
        HOUSE: 105,
        "held:t1": 0,
    }


# -- SQLite only ---------------------------------------------------------------------------


async def test_sqlite_survives_reopen(tmp_path: Path) -> None:
    path = tmp_path / "chemmy.sqlite3"
    first = SQLiteStore(path)
    await first.open()
    await first.ensure_player("ann", "Ann", 1000)
    row = TableRow("t1", {"tier": "1-100"}, {"phase": "betting"}, 3)
    await first.commit(entries=[bet("k", "ann", 10)], table=row, records=[round_record(1, ["ann"])])
    await first.close()
    await first.close()

    second = SQLiteStore(str(path))
    await second.open()
    assert await second.load_balances() == {
        "player:ann": 990,
        CASHIER: -1000,
        "held:t1": 10,
    }
    assert await second.load_tables() == [row]
    assert await second.history("ann") == [round_record(1, ["ann"])]
    assert await second.has_entry("k")
    assert await second.commit(entries=[bet("k", "ann", 10)]) == 0
    assert await second.audit() == {"sum": 0, "ledger_matches": True, "entries": 2}
    await second.close()


async def test_sqlite_pragmas_and_guards(tmp_path: Path) -> None:
    path = tmp_path / "chemmy.sqlite3"
    store = SQLiteStore(path)
    await store.open()
    await store.ensure_player("ann", "Ann", 1000)
    raw = sqlite3.connect(path)
    try:
        assert raw.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert raw.execute("PRAGMA user_version").fetchone()[0] >= 1
        # The database itself keeps the ledger append-only and players solvent.
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            raw.execute("UPDATE ledger SET amount = 1")
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            raw.execute("DELETE FROM ledger")
        with pytest.raises(sqlite3.IntegrityError):
            raw.execute("UPDATE accounts SET balance = -1 WHERE account = 'player:ann'")
    finally:
        raw.close()
    await store.close()


async def test_sqlite_errors_are_translated(tmp_path: Path) -> None:
    with pytest.raises(StoreError):
        await SQLiteStore(tmp_path / "missing-dir" / "x.sqlite3").open()
    junk = tmp_path / "junk.sqlite3"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError):
        await SQLiteStore(junk).open()
    store = SQLiteStore(tmp_path / "ok.sqlite3")
    await store.open()
    with pytest.raises(StoreError):  # a table seq wider than SQLite's 64-bit integers
        await store.save_table(TableRow("t1", {}, None, 1 << 70))
    with pytest.raises(StoreError):  # balances that would overflow
        await store.commit(
            entries=[
                Entry("big1", HOUSE, CASHIER, (1 << 63) - 1, "x"),
                Entry("big2", HOUSE, CASHIER, (1 << 63) - 1, "x"),
            ]
        )
    assert await store.audit() == {"sum": 0, "ledger_matches": True, "entries": 0}
    assert await store.load_tables() == []
    await store.close()


async def test_open_store(tmp_path: Path) -> None:
    memory = await open_store("memory:")
    assert isinstance(memory, MemoryStore)
    await memory.close()
    path = tmp_path / "a.sqlite3"
    for spec in (str(path), path, f"sqlite:///{path}"):
        made = await open_store(spec)
        assert isinstance(made, SQLiteStore) and made.path == str(path)
        await made.close()
    assert isinstance(store_for("sqlite://"), SQLiteStore)
    assert isinstance(MemoryStore(), Store)
    with pytest.raises(StoreError) as info:
        store_for("redis://user:secret@host:6379/0")
    assert "secret" not in str(info.value)


# -- the conservation law -----------------------------------------------------------------

ACCOUNTS = ["player:a", "player:b", "player:c", "held:t1", HOUSE, CASHIER]

transfers = st.lists(
    st.tuples(
        st.sampled_from(ACCOUNTS),
        st.sampled_from(ACCOUNTS),
        st.integers(1, 2000),
        st.integers(0, 30),  # key: small range, so keys repeat
        st.booleans(),  # commit alone or with the next one
    ),
    max_size=25,
)


@pytest.mark.parametrize("kind", ["memory", "sqlite-memory"])
@settings(max_examples=60, deadline=None)
@given(steps=transfers)
def test_transfers_conserve_money(kind: str, steps: list[tuple[str, str, int, int, bool]]) -> None:
    """Random transfers, batched at random: the store agrees with the wallet model, the
    audit sum is 0 and every balance matches its ledger, whatever was refused."""

    async def run() -> None:
        store: Store = MemoryStore() if kind == "memory" else SQLiteStore(":memory:")
        await store.open()
        model = MemoryWallet()
        for player in ("a", "b", "c"):
            await store.ensure_player(player, player, 1000)
            model.transfer(f"welcome:{player}", CASHIER, f"player:{player}", 1000, "welcome")
        batch: list[Entry] = []
        for src, dst, amount, key, alone in steps:
            if src == dst:
                continue
            batch.append(Entry(f"k{key}", src, dst, amount, "t"))
            if not alone:
                continue
            await _commit_like_model(store, model, batch)
            batch = []
        await _commit_like_model(store, model, batch)
        audit = await store.audit()
        assert audit["sum"] == 0
        assert audit["ledger_matches"]
        assert audit["entries"] == len(model.entries)
        balances = await store.load_balances()
        assert {a: b for a, b in balances.items() if b} == {
            a: b for a, b in model.balances.items() if b
        }
        assert all(b >= 0 for a, b in balances.items() if a.startswith("player:"))
        await store.close()

    asyncio.run(run())


async def _commit_like_model(store: Store, model: MemoryWallet, batch: list[Entry]) -> None:
    """Commit ``batch`` to the store and, all or nothing, to a copy of the model."""
    trial = MemoryWallet(model.balances)
    trial.entries = list(model.entries)
    trial._keys = {e.key for e in model.entries}
    expected: Exception | None = None
    posted: dict[str, Entry] = {e.key: e for e in model.entries}
    for entry in batch:
        old = posted.get(entry.key)
        if old is not None:
            if old != entry:
                expected = KeyConflict()
                break
            continue
        try:
            trial.transfer(entry.key, entry.src, entry.dst, entry.amount, entry.kind)
        except Exception as exc:
            expected = exc
            break
        posted[entry.key] = entry
    try:
        inserted = await store.commit(entries=batch)
    except StoreError:
        assert expected is not None
        event(f"refused: {type(expected).__name__}")
        return
    assert expected is None
    assert inserted == len(trial.entries) - len(model.entries)
    model.balances, model.entries, model._keys = trial.balances, trial.entries, trial._keys
