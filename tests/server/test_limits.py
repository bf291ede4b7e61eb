"""The gateway's shared limits without a socket: the fair lines in front of the tables,
the connection caps and shared buckets, the client's address, and their settings."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from websockets.datastructures import Headers
from websockets.http11 import Request

from server.limits.local import Limits, Lines, client_address
from server.process.config import ConfigError, ServerConfig, build_parser, load_config
from server.protocol.errors import Refused


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Table:
    """Stands for a table's queue: records what reached it, in order."""

    def __init__(self) -> None:
        self.got: list[str] = []
        self.refuse: set[str] = set()

    def go(self, name: str) -> Callable[[], bool]:
        def send() -> bool:
            if name in self.refuse:
                return False
            self.got.append(name)
            return True

        return send


# -- the lines ------------------------------------------------------------------------------


def test_a_players_commands_go_in_order_a_few_at_a_time() -> None:
    lines, table = Lines(per_player=2, per_address=10, waiting=10), Table()
    keys = [lines.enter("t1", "a", "ann", table.go(f"c{n}")) for n in range(5)]
    assert table.got == ["c0", "c1"]
    assert lines.in_flight("t1", "a", "ann") == 2 and lines.in_flight("t1", "a") == 2
    lines.answered(keys[0])
    assert table.got == ["c0", "c1", "c2"]
    for key in keys[1:]:
        lines.answered(key)
    assert table.got == ["c0", "c1", "c2", "c3", "c4"]
    assert len(lines) == 0 and lines.in_flight("t1", "a") == 0  # nothing is kept


def test_a_full_line_is_refused_and_changes_nothing() -> None:
    lines, table = Lines(per_player=1, per_address=10, waiting=2), Table()
    for n in range(3):
        lines.enter("t1", "a", "ann", table.go(f"c{n}"))
    with pytest.raises(Refused) as info:
        lines.enter("t1", "a", "ann", table.go("c3"))
    assert info.value.code == "rate_limited"
    assert table.got == ["c0"]
    # Someone else at the same table and address is not refused.
    lines.enter("t1", "a", "bob", table.go("b0"))
    assert table.got == ["c0", "b0"]


def test_an_addresss_players_take_turns() -> None:
    lines, table = Lines(per_player=2, per_address=2, waiting=10), Table()
    keys: dict[str, Any] = {}
    for name in ("m0", "m1", "m2", "m3"):
        keys[name] = lines.enter("t1", "nat", "mallory", table.go(name))
    keys["a0"] = lines.enter("t1", "nat", "ann", table.go("a0"))
    keys["b0"] = lines.enter("t1", "nat", "bob", table.go("b0"))
    assert table.got == ["m0", "m1"]  # the address's two places
    lines.answered(keys["m0"])
    assert table.got[-1] == "a0"  # not mallory's third: ann's turn
    lines.answered(keys["m1"])
    assert table.got[-1] == "b0"
    lines.answered(keys["a0"])
    assert table.got[-1] == "m2"
    # Another address has its own places.
    lines.enter("t1", "home", "zoe", table.go("z0"))
    assert table.got[-1] == "z0"


def test_a_command_that_does_not_reach_the_table_frees_its_place() -> None:
    lines, table = Lines(per_player=1, per_address=1, waiting=10), Table()
    table.refuse.add("c0")
    lines.enter("t1", "a", "ann", table.go("c0"))
    lines.enter("t1", "a", "ann", table.go("c1"))
    assert table.got == ["c1"]
    assert lines.in_flight("t1", "a", "ann") == 1


def test_a_reply_that_never_comes_gives_its_place_back() -> None:
    clock = Clock()
    lines, table = (
        Lines(per_player=1, per_address=5, waiting=10, lost_after=60, clock=clock),
        Table(),
    )
    lines.enter("t1", "a", "ann", table.go("c0"))  # its owner went away: no reply
    lines.enter("t1", "a", "ann", table.go("c1"))
    assert table.got == ["c0"]
    clock.now += 61
    lines.enter("t1", "a", "ann", table.go("c2"))
    assert table.got == ["c0", "c1"]


def test_lines_of_a_closed_table_are_dropped() -> None:
    lines, table = Lines(per_player=1, per_address=5, waiting=10), Table()
    key = lines.enter("t1", "a", "ann", table.go("c0"))
    lines.enter("t1", "a", "ann", table.go("c1"))
    lines.enter("t2", "a", "ann", table.go("d0"))
    lines.drop_table("t1")
    lines.answered(key)  # a late reply changes nothing
    assert table.got == ["c0", "d0"]
    assert lines.in_flight("t1", "a") == 0 and lines.in_flight("t2", "a") == 1


def test_a_reply_while_a_command_is_handed_over() -> None:
    """A bus may answer before ``submit`` returns: the line stays consistent."""
    lines = Lines(per_player=1, per_address=1, waiting=10)
    got: list[str] = []
    keys: list[Any] = []

    def answered_at_once(name: str) -> Callable[[], bool]:
        def send() -> bool:
            got.append(name)
            lines.answered(keys[0])
            return True

        return send

    keys.append(("t1", "a", "ann"))
    for n in range(3):
        lines.enter("t1", "a", "ann", answered_at_once(f"c{n}"))
    assert got == ["c0", "c1", "c2"]
    assert len(lines) == 0


# -- connections and buckets ---------------------------------------------------------------


def limits(clock: Clock, **settings: Any) -> Limits:
    return Limits(ServerConfig(**settings), clock=clock)


def test_connections_are_capped_per_address_and_per_player() -> None:
    clock = Clock()
    lim = limits(clock, max_connections_per_address=2, max_connections_per_player=1)
    assert lim.connect("a") and lim.connect("a")
    assert not lim.connect("a")
    assert lim.connect("b")
    lim.disconnect("a")
    assert lim.connect("a")
    lim.sign_in("ann")
    with pytest.raises(Refused) as info:
        lim.sign_in("ann")
    assert info.value.code == "too_many_connections"
    lim.sign_out("ann")
    lim.sign_in("ann")
    # 0: no cap.
    free = limits(clock, max_connections_per_address=0, max_connections_per_player=0)
    assert all(free.connect("a") for _ in range(1000))
    for _ in range(1000):
        free.sign_in("ann")


def test_buckets_are_shared_and_spent_only_when_all_allow() -> None:
    clock = Clock()
    lim = limits(
        clock,
        player_rate_limit=1.0,
        player_rate_burst=2,
        address_rate_limit=1.0,
        address_rate_burst=3,
    )
    lim.connect("a")
    lim.sign_in("ann")
    assert lim.take("a", "ann") and lim.take("a", "ann")
    assert not lim.take("a", "ann")  # ann's two are spent...
    assert lim.take("a", None)  # ... the address still had one: not spent by the refusal
    assert not lim.take("a", None)
    clock.now += 1
    assert lim.take("a", "ann")


def test_hellos_per_address_outlive_the_connections() -> None:
    clock = Clock()
    lim = limits(clock, hello_rate_limit=1.0, hello_rate_burst=2)
    for _ in range(2):
        assert lim.connect("a") and lim.take_hello("a")
        lim.disconnect("a")
    lim.sweep()
    assert lim.connect("a") and not lim.take_hello("a")  # closing earned nothing back
    assert lim.take_hello("b")
    lim.disconnect("a")
    clock.now += 10  # the buckets are full again: the address is forgotten
    lim.sweep()
    assert "a" not in lim.addresses and "b" not in lim.addresses
    assert limits(clock, hello_rate_limit=0.0).take_hello("a")  # 0: no limit


def test_shared_rates_follow_the_connections_rate_unless_set() -> None:
    assert ServerConfig().shared_rates() == ((40.0, 80), (200.0, 400))
    fast = ServerConfig(rate_limit=1000.0, rate_burst=5)
    assert fast.shared_rates() == ((2000.0, 10), (10000.0, 50))
    set_ = ServerConfig(player_rate_limit=0.0, address_rate_burst=7)
    assert set_.shared_rates() == ((0.0, 80), (200.0, 7))


# -- the client's address -------------------------------------------------------------------


def conn(peer: str, *forwarded: str) -> Any:
    headers = Headers([("X-Forwarded-For", value) for value in forwarded])
    return SimpleNamespace(remote_address=(peer, 4242), request=Request("/", headers))


def test_client_address() -> None:
    trusted = Limits(ServerConfig(trusted_proxies=("10.0.0.0/8", "fd00::1"))).trusted
    assert client_address(conn("203.0.113.5", "198.51.100.1")) == "203.0.113.5"  # not trusted
    assert client_address(conn("10.1.2.3", "198.51.100.1"), trusted) == "198.51.100.1"
    # Right to left, past our own proxies; what the client wrote on the left is not read.
    chain = conn("10.1.2.3", "6.6.6.6, 198.51.100.1", "10.9.9.9")
    assert client_address(chain, trusted) == "198.51.100.1"
    assert client_address(conn("10.1.2.3", "garbage, 198.51.100.1"), trusted) == "198.51.100.1"
    assert client_address(conn("10.1.2.3", "198.51.100.1, garbage"), trusted) == "10.1.2.3"
    assert client_address(conn("10.1.2.3"), trusted) == "10.1.2.3"  # no header
    # IPv6 by its /64; IPv4-mapped as IPv4.
    assert client_address(conn("2001:db8:1:2:aaaa::1")) == "2001:db8:1:2::/64"
    assert client_address(conn("2001:db8:1:2:bbbb::9")) == "2001:db8:1:2::/64"
    assert client_address(conn("::ffff:192.0.2.7")) == "192.0.2.7"
    assert client_address(conn("fd00::1", "2001:db8::5"), trusted) == "2001:db8::/64"
    assert client_address(SimpleNamespace(remote_address=None, request=None)) == "unknown"


def test_the_settings() -> None:
    config = load_config(
        ["--trusted-proxies", "10.0.0.0/8, 192.0.2.1", "--max-connections-per-player", "3"],
        {"CHEMMY_PLAYER_RATE_LIMIT": "7.5", "CHEMMY_HELLO_RATE_BURST": "9"},
    )
    assert config.trusted_proxies == ("10.0.0.0/8", "192.0.2.1")
    assert config.max_connections_per_player == 3
    assert (config.player_rate_limit, config.hello_rate_burst) == (7.5, 9)
    assert config.address_rate_limit is None  # derived
    for argv in (
        ["--trusted-proxies", "10.0.0.0/33"],
        ["--trusted-proxies", "proxy.example"],
        ["--max-connections-per-address", "-1"],
        ["--player-rate-limit", "-2"],
        ["--address-rate-burst", "0"],
        ["--hello-rate-limit", "nan"],
    ):
        with pytest.raises(ConfigError):
            load_config(argv, {})
    text = " ".join(build_parser().format_help().split())
    assert "2 x rate-limit" in text and "10 x rate-burst" in text


@given(
    st.lists(
        st.one_of(
            st.tuples(
                st.just("enter"), st.sampled_from("abc"), st.sampled_from("xy"), st.booleans()
            ),
            st.tuples(st.just("answer"), st.integers(0, 50)),
        ),
        max_size=80,
    )
)
def test_lines_keep_their_promises(steps: list[Any]) -> None:
    """Any mix of commands, refusals at the bus and replies: no player or address ever
    has more than its places at the table, each player's commands reach it in order,
    and once everything is answered, everything was sent and nothing is kept."""
    lines = Lines(per_player=2, per_address=3, waiting=5)
    at_table: list[tuple[Any, str]] = []  # (line key, command) sent, not answered yet
    reached: dict[Any, list[int]] = {}  # line key -> the commands that reached the table
    counter = iter(range(10_000))

    def check() -> None:
        per_player = Counter(key for key, _ in at_table)
        per_address = Counter(key[1] for key, _ in at_table)
        assert all(n <= 2 for n in per_player.values()), per_player
        assert all(n <= 3 for n in per_address.values()), per_address
        for key, n in per_player.items():
            assert lines.in_flight(*key) == n

    def command(key: Any, player: str, reaches: bool) -> Callable[[], bool]:
        number = next(counter)

        def go() -> bool:
            if not reaches:
                return False
            at_table.append((key, player))
            reached.setdefault(key, []).append(number)
            return True

        return go

    for step in steps:
        if step[0] == "enter":
            _, player, address, reaches = step
            key = ("t1", address, player)
            with contextlib.suppress(Refused):
                lines.enter("t1", address, player, command(key, player, reaches))
        elif at_table:
            key, _player = at_table.pop(step[1] % len(at_table))
            lines.answered(key)
        check()
    while at_table:
        key, _player = at_table.pop(0)
        lines.answered(key)
        check()
    assert len(lines) == 0
    for numbers in reached.values():
        assert numbers == sorted(numbers)
