"""Every request is answered, at once, when a table closes under it (issue 18.2-3):
commands racing ``close_table`` (queued at the table behind the close, or waiting in a
player's line at the gateway) get ``no_table`` (nothing was done), a second concurrent
``close_table`` too, and of two concurrent ``create_table`` of a just-closed id one is
``table_exists``. Real sockets, a real server on port 0."""

from __future__ import annotations

from typing import Any

from tests.kit import Game, scaled

FAST = {"rate_limit": 10_000.0, "rate_burst": 10_000}
PLAYERS = ("ann", "bob", "cat", "dan")
BETS = 5


async def test_commands_racing_close_table_are_answered_no_table_at_once(net: Any) -> None:
    server = await net.start(**FAST)
    op = await net.player(server, "boss", roles=("operator",))
    players = {}
    for seat, name in enumerate(PLAYERS, start=1):
        players[name] = p = await net.player(server, name)
        await p.join("t1")
        await p.call("sit", table="t1", seat=seat)
    await Game("t1", players, players["ann"]).to_betting()

    sent: dict[str, list[Any]] = {}
    for name, p in players.items():
        sent[name] = []
        for _ in range(BETS):
            mid, _start = await p.send_command("bet", table="t1", area="banker", amount=100)
            sent[name].append(mid)
    closes = [(await op.send_command("close_table", table="t1"))[0] for _ in range(2)]

    close_replies = await op.one_reply_each(closes, scaled(3))
    codes = sorted(r.get("code", "ok") for r in close_replies.values())
    assert codes == ["no_table", "ok"], close_replies
    for name, p in players.items():
        replies = await p.one_reply_each(sent[name], scaled(3))
        for reply in replies.values():
            assert reply["type"] == "ok" or reply["code"] == "no_table", reply
    # and afterwards: at once, no_table
    await players["ann"].refused("no_table", "bet", table="t1", area="banker", amount=100)


async def test_two_creates_of_a_just_closed_id_one_is_table_exists(net: Any) -> None:
    server = await net.start(**FAST)
    op = await net.player(server, "boss", roles=("operator",))
    other = await net.player(server, "root", roles=("operator",))
    await op.call("close_table", table="t1")
    for _ in range(3):
        a, _s = await op.send_command("create_table", table="t1")
        b, _s = await other.send_command("create_table", table="t1")
        (ra,) = (await op.one_reply_each([a], scaled(5))).values()
        (rb,) = (await other.one_reply_each([b], scaled(5))).values()
        codes = sorted(r.get("code", "ok") for r in (ra, rb))
        assert codes == ["ok", "table_exists"], (ra, rb)
        await op.call("close_table", table="t1")
