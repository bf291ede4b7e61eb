"""The web page puts its own randomness into every shoe it sits at (issue 24,
docs/fairness.md §9): in a real browser it commits when it sits (``crypto.getRandomValues``,
SHA-256 by ``crypto.subtle``), keeps the value in sessionStorage, reveals it after the cut,
and says so plainly; the server's snapshot shows the value matching the commitment.

And "verify this shoe" (fairness.js) in the browser: it agrees with
``server.engine.shoe.verify`` (``chemmy verify``) on genuine and tampered records, with and
without contributions, and the History dialog's button checks the table's last revealed
shoe, here one the page contributed to."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import Page, expect
from web_helpers import (
    RELAXED,
    SECRET,
    Inspector,
    ServerProcess,
    TablePage,
    holder_ready,
    ms,
    server_config,
)
from websockets.sync.client import connect as ws_connect

from server.engine.coup import resolve_coup
from server.engine.shoe import Shoe, commitment, timeout_cut, verify
from server.process.auth import make_token

pytestmark = pytest.mark.slow  # a server subprocess, a browser or a terminal: seconds each

TABLES = [
    {"id": "give", "name": "Giving salon", "tier": "1-100", "timers": RELAXED},
    {"id": "give2", "name": "Verifying salon", "tier": "1-100", "timers": RELAXED},
]
SEED = bytes(range(32))
VALUES = [bytes([b]) * 32 for b in (0x33, 0x11, 0x22)]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    s = ServerProcess(tmp_path_factory.mktemp("web-give"), server_config(TABLES)).start()
    yield s
    s.stop()


def test_the_page_contributes_by_itself(
    server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    alice = TablePage(open_page(), "alice")
    alice.open(server, "alice", "Alice", table="give")
    holder_ready(alice, 1)  # sit, accept, cut: the page committed and revealed meanwhile
    expect(alice.page.locator("#log")).to_contain_text("Your randomness is in this shoe")
    expect(alice.page.locator("#randomness")).to_have_text(
        "your randomness is in this shoe (1 in all)"
    )
    inspector = Inspector(server, "inspector", "Inspector")
    try:
        snap = inspector.snapshot("give")
    finally:
        inspector.close()
    (mine,) = snap["shoe"]["contributions"]
    assert mine["player"] == "alice" and mine["value"] is not None
    assert hashlib.sha256(bytes.fromhex(mine["value"])).hexdigest() == mine["commitment"]
    kept = alice.page.evaluate(
        f"() => sessionStorage.getItem('chemmy.contribution.give.{snap['shoe']['no']}')"
    )
    assert kept == mine["value"]  # the value the page drew, kept until the reveal
    assert alice.state("s.shoe.contributions.length") == 1
    assert alice.state("s.shoe.contributions[0].value") == mine["value"]


def deal(
    decks: int, revealed: list[bytes], withheld: list[bytes], cut: int | None
) -> dict[str, Any]:
    """A whole shoe's record, mixed with ``revealed`` (and listing ``withheld``)."""
    shoe = Shoe.from_seed(SEED, decks)
    shoe.mix(revealed)
    by = "croupier" if cut is None else "ann"
    cut = timeout_cut(shoe.shuffle_key or SEED, shoe.size) if cut is None else cut
    shoe.apply_cut(cut)
    face, count = shoe.burn()
    shoe.place_stop(16)
    coups: list[dict[str, list[str]]] = []
    last = None
    while last is None or len(coups) <= last:
        coup = resolve_coup(shoe.cards[shoe.position : shoe.position + 6])
        for _ in range(coup.cards_used):
            shoe.draw()
        coups.append({"player": list(coup.player), "banker": list(coup.banker)})
        if last is None and shoe.stop_card_out:
            last = len(coups)
    names = [f"p{i}" for i in range(len(revealed) + len(withheld))]
    given = [(v, v.hex()) for v in revealed] + [(v, None) for v in withheld]
    return {
        "decks": decks,
        "commitment": commitment(SEED),
        "seed": SEED.hex(),
        "cut": cut,
        "cut_by": by,
        "stop_offset": 16,
        "burn_card": face,
        "burned": count,
        "coups": coups,
        "contributions": [
            {"player": n, "commitment": commitment(v), "value": hexed}
            for n, (v, hexed) in zip(names, given, strict=True)
        ],
        "withheld": names[len(revealed) :],
    }


def records() -> list[dict[str, Any]]:
    genuine = deal(8, VALUES, [], 150)
    tampered_value = json.loads(json.dumps(genuine))
    tampered_value["contributions"][1]["value"] = (b"\x44" * 32).hex()
    tampered_coup = json.loads(json.dumps(genuine))
    tampered_coup["coups"][3]["player"][0] = (
        "Kd" if tampered_coup["coups"][3]["player"][0] != "Kd" else "Qd"
    )
    return [
        genuine,
        deal(6, VALUES[:1], VALUES[1:], None),  # two withheld, a timeout cut from the key
        deal(1, [], [], None),  # no contribution: the seed's shoe, as before
        deal(8, [], [VALUES[0]], 77),  # committed, withheld: the seed's shoe
        tampered_value,
        tampered_coup,
        {**genuine, "contributions": [], "withheld": []},  # the contributions left out
        {**genuine, "cut": 151},
        {**deal(6, VALUES[:1], VALUES[1:], None), "cut": 40},  # a dishonest timeout cut
        {**genuine, "withheld": ["p1"]},
        {**genuine, "coups": genuine["coups"][:5]},  # incomplete
    ]


def test_the_page_verifies_shoes_as_chemmy_verify_does(
    server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    page = TablePage(open_page(), "ver").open(server, "ver", "Ver")
    page.page.wait_for_function("() => Boolean(window.chemmyPage)", timeout=ms(10))
    for record in records():
        theirs = page.page.evaluate(
            "async (r) => (await import('/fairness.js')).verifyShoe(r)", record
        )
        ours = verify(record)
        assert (theirs["ok"], theirs["coups"], theirs["contributions"]) == (
            ours.ok,
            ours.coups_checked,
            ours.contributions,
        ), (theirs, str(ours))


def test_verify_the_last_shoe_in_the_history_dialog(
    server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    bea = TablePage(open_page(), "bea")
    bea.open(server, "bea", "Bea", table="give2")
    holder_ready(bea, 1)  # committed and revealed by itself
    expect(bea.page.locator("#log")).to_contain_text("Your randomness is in this shoe")
    # The operator closes the table mid-shoe: its seed is revealed, the record stored.
    boss = _operator(server)
    try:
        boss.request("close_table", table="give2")
    finally:
        boss.close()
    report = bea.page.evaluate("() => chemmyPage.verifyShoe('give2', 1)")
    assert report["ok"] is True and report["contributions"] == 1, report
    bea.click("#btn-history")
    bea.click("#btn-verify")
    expect(bea.page.locator("#verify-status")).to_contain_text(
        "Shoe 1 verifies: its seed matches the commitment, 1 player's randomness matches theirs"
    )


def _operator(server: ServerProcess) -> Inspector:
    """An :class:`Inspector` whose hello carries an operator's token."""
    op = Inspector.__new__(Inspector)
    op._stack = contextlib.ExitStack()
    op.ws = op._stack.enter_context(
        ws_connect(server.ws, subprotocols=["chemmy.v1.json"], max_size=2**24)  # type: ignore[list-item]
    )
    op.hello = op.request("hello", token=make_token(SECRET, "boss", "Boss", roles=("operator",)))
    return op
