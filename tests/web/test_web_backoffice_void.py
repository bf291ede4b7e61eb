"""The back office voids the round in play (issue 21, docs/operations.md §8), in a real
Chromium against a real server, with players on real WebSocket connections.

Two players (the test kit's recording clients, run on an event loop of their own in a
thread, so that Playwright's sync API keeps the test's thread) sit at a table whose
timers are long (nothing moves by itself during the test), bet, and the coup is dealt
and squeezed: a coup in progress, not settled. The operator's page shows "Void current
round" enabled on that table's line (its ``round_id``, from ``GET /operator/v1/tables``)
and disabled on a table with no round in play; pressing it opens a small form naming
the round, which sends nothing without a reason, then POSTs the void with the reason and
says in plain words that the round was voided. The players receive ``voided``, their
balances are back exactly (every wager returned), and after the server stops the books
of its SQLite file are exact (``tests.kit.crash.check_books``: the sum 0, every balance
its ledger, every hold with one outcome, the void its ``void`` entries).

A refusal is shown as the server worded it: the form opened on the next round, which is
voided by another call meanwhile, is answered ``409 already_settled``.

Screenshots (PNG) go under the test's tmp_path and to the artifacts folder.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import re
import threading
import uuid
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from playwright.sync_api import Browser, Page, expect
from test_web_backoffice import OPERATOR, keep, refusal_text
from web_helpers import SECRET, ServerProcess, scaled, server_config

from server.store import open_store
from tests.kit import Client, Game, open_player
from tests.kit.crash import check_books

pytestmark = pytest.mark.slow  # a server subprocess and a browser: seconds each

T = TypeVar("T")
# Nothing times out by itself while the test looks: the coup waits for its squeeze.
LONG = {k: 300 for k in ("betting", "squeeze", "third_card", "shoe_offer", "cut", "grace")}
TABLES = [
    {"id": "bv-1", "name": "Void here", "tier": "1-100", "timers": LONG},
    {"id": "bv-2", "name": "Nobody", "tier": "1-100", "timers": LONG},
]
REASON = "the card reader failed"
BETS = {"ann": ("player", 2_000), "bob": ("banker", 1_500)}


class Loop:
    """An asyncio loop in a thread of its own, for the kit's async clients."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T], seconds: float = 30) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(scaled(seconds))

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(scaled(10))
        self.loop.close()


@pytest.fixture
def loop() -> Iterator[Loop]:
    made = Loop()
    yield made
    made.close()


def post(server: ServerProcess, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """An operator's POST with their token (as another back office would send it)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        raw = json.dumps(body).encode()
        headers = {
            "Authorization": f"Bearer {OPERATOR}",
            "Content-Type": "application/json",
            "Idempotency-Key": uuid.uuid4().hex,
        }
        conn.request("POST", path, body=raw, headers=headers)
        r = conn.getresponse()
        return r.status, json.loads(r.read())
    finally:
        conn.close()


async def seat_and_squeeze(url: str) -> tuple[dict[str, Client], Game, str, dict[str, int]]:
    """Ann and Bob sit at bv-1, bet (BETS), press DONE; the coup is dealt and Ann, its
    Player turner, has begun her squeeze. Returns the clients, the game, the round id and
    the balances before the bets."""
    players: dict[str, Client] = {}
    for seat, pid in enumerate(("ann", "bob"), start=1):
        players[pid] = await open_player(url, pid, secret=SECRET, name=pid.title())
        await players[pid].join("bv-1")
        await players[pid].call("sit", table="bv-1", seat=seat)
    game = Game("bv-1", players, players["ann"])
    opened = await game.to_betting()
    rid = str(opened["data"]["round_id"])
    before = {pid: await c.balance() for pid, c in players.items()}
    for pid, (area, amount) in BETS.items():
        await game.act(pid, "bet", area=area, amount=amount)
    for pid in BETS:
        await game.act(pid, "done")
    turn = await players["ann"].wait_event("turn", table="bv-1")
    assert turn["data"]["turner"] == "ann" and turn["data"]["hand"] == "player", turn
    await game.act("ann", "squeeze", hand="player", style="peek")
    return players, game, rid, before


async def close_all(players: dict[str, Client]) -> None:
    for c in players.values():
        await c.close()


async def audit(db: Path, round_ids: tuple[str, ...]) -> dict[str, Any]:
    store = await open_store(db)
    try:
        return await check_books(store, ("ann", "bob"), round_ids=round_ids)
    finally:
        await store.close()


def test_the_operator_voids_the_round_in_play_and_every_wager_comes_back(
    browser: Browser,
    loop: Loop,
    office: Callable[[str], Page],
    tmp_path: Path,
    artifacts: Path,
) -> None:
    server = ServerProcess(tmp_path / "server", server_config(TABLES)).start()
    players: dict[str, Client] = {}
    page: Page | None = None
    try:
        players, _game, rid, before = loop.run(seat_and_squeeze(server.ws))
        page = office(f"{server.http}/operator/#token={OPERATOR}")

        # The line of bv-1 names the round in play; bv-2 has none: its control is off.
        row = page.locator("#tables-list tr[data-table='bv-1']")
        expect(row.locator(".phase")).to_have_text("Turning the cards")
        button = row.locator("button[data-action='void']")
        expect(button).to_have_text("Void current round")
        expect(button).to_be_enabled()
        expect(button).to_have_attribute("data-round", rid)
        quiet = page.locator("#tables-list tr[data-table='bv-2'] button[data-action='void']")
        expect(quiet).to_be_disabled()
        expect(quiet).to_have_attribute("title", "No round in play at this table")

        # The form names the round; without a reason nothing is sent.
        form = page.locator("#live-void")
        expect(form).to_be_hidden()
        button.click()
        expect(form).to_be_visible()
        expect(page.locator("#live-void-title")).to_have_text(
            f"Void round {rid} at table bv-1: every wager on it goes back to its player."
        )
        sent: list[str] = []
        page.on("request", lambda r: sent.append(r.url) if r.method == "POST" else None)
        page.click("#live-void-send")
        expect(page.locator("#live-void-answer")).to_have_text("Give a reason for the void")
        assert sent == []
        # Cancel closes it; opened again, with a reason: the void is asked for.
        page.click("#live-void-cancel")
        expect(form).to_be_hidden()
        button.click()
        page.fill("#live-void-reason", REASON)
        keep(page, tmp_path, artifacts, "backoffice-void-form")
        with page.expect_response(re.compile(rf"/operator/v1/rounds/{rid}/void$")) as got:
            page.click("#live-void-send")
        response = got.value
        assert response.request.method == "POST"
        assert response.request.headers["authorization"] == f"bearer {OPERATOR}"
        assert response.request.post_data_json == {"reason": REASON}
        assert response.status == 200, response.body()
        assert response.json()["voided"] is True and response.json()["round_id"] == rid
        expect(page.locator("#live-void-answer")).to_have_text(
            f"Round {rid} at table bv-1 voided: every wager was returned"
        )
        expect(form).to_be_hidden()
        keep(page, tmp_path, artifacts, "backoffice-void-in-play")

        # Every player was told, and has exactly what they had before their bets.
        refunded = {pid: amount for pid, (_, amount) in BETS.items()}
        for pid, client in players.items():
            voided = loop.run(client.wait_event("voided", table="bv-1"))
            data = voided["data"]
            assert (data["round_id"], data["reason"]) == (rid, REASON), data
            assert data["refunded"] == refunded, data
            assert data["balance"] == data["available"] == before[pid], data
            assert loop.run(client.balance()) == before[pid]
        # The table moves on: the next round opens, and the line names it.
        opened = loop.run(
            players["ann"].wait_event("betting_opened", table="bv-1", after=int(voided["seq"]))
        )
        following = str(opened["data"]["round_id"])
        assert following != rid
        expect(button).to_have_attribute("data-round", following)
        expect(button).to_be_enabled()

        # A refusal in the server's words: the form opened on that round, which another
        # call voids first, is answered 409 already_settled.
        button.click()
        expect(page.locator("#live-void-title")).to_contain_text(f"Void round {following} ")
        status, body = post(server, f"/operator/v1/rounds/{following}/void", {"reason": "first"})
        assert status == 200, body
        page.fill("#live-void-reason", REASON)
        with page.expect_response(re.compile(rf"/rounds/{following}/void$")) as got:
            page.click("#live-void-send")
        refused = got.value
        assert refused.status == 409 and refused.json()["status"] == "already_settled"
        expect(page.locator("#live-void-answer")).to_have_text(
            refusal_text(refused.status, refused.body())
        )
        expect(page.locator("#live-void-answer")).to_have_attribute("data-state", "refused")
        keep(page, tmp_path, artifacts, "backoffice-void-refused")
        # The table's line says its last round was voided, and why (not "- 0.00").
        last = page.locator("#tables-list tr[data-table='bv-1'] td.last")
        expect(last).to_have_text(f"{following} Voided (first): every bet returned")
        for pid, client in players.items():
            assert loop.run(client.balance()) == before[pid]
    finally:
        if page is not None:
            page.close()  # before the server stops: its refreshes would find nobody there
        loop.run(close_all(players))
        server.stop()

    # The books of the stopped server's store: exact.
    books = loop.run(audit(server.db, (rid, following)))
    record = books["rounds"][rid]
    assert record["void"] is True and record["reason"] == REASON
    assert record["voided_in"] == "turn"
    assert sorted((b["player"], b["stake"], b["returned"]) for b in record["bets"]) == [
        ("ann", 2_000, 2_000),
        ("bob", 1_500, 1_500),
    ]
    assert books["rounds"][following]["void"] is True
    assert books["balances"].get("held:bv-1", 0) == 0
    assert {pid: books["balances"][f"player:{pid}"] for pid in before} == before
