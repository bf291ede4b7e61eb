"""The web page puts its own randomness into every shoe it sits at (issue 24,
docs/fairness.md §9): in a real browser it commits when it sits (``crypto.getRandomValues``,
SHA-256 by ``crypto.subtle``), keeps the value in sessionStorage, reveals it after the cut,
and says so plainly; the server's snapshot shows the value matching the commitment."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import Page, expect
from web_helpers import RELAXED, Inspector, ServerProcess, TablePage, holder_ready, server_config

pytestmark = pytest.mark.slow  # a server subprocess, a browser or a terminal: seconds each

TABLES = [{"id": "give", "name": "Giving salon", "tier": "1-100", "timers": RELAXED}]


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
