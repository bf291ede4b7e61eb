"""Fixtures for the web table's tests: one headless Chromium per session (per xdist
worker), a context and a page of its own for each test, pages that fail the test on a
script error, servers of their own, and the artifacts folder. The helpers they use are
in web_helpers.py.

Playwright's sync API runs its own asyncio loop on this thread, and between its calls
marks that loop as the thread's running loop; the other tests a worker runs drive loops
of their own on the same thread. So a web test runs with Playwright's loop marked
running (:func:`pytest_runtest_protocol`), and every other test without it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright
from web_helpers import CHROMIUM, CHROMIUM_ARGS, ROOT, ServerProcess, ms, server_config


@dataclass
class PageWatch:
    """A page and the script errors it reported (there must be none)."""

    page: Page
    context: BrowserContext
    errors: list[str] = field(default_factory=list)


#: This folder: its tests are the web tests.
HERE = Path(__file__).resolve().parent
#: Playwright's loop, once the session's browser is launched.
_PLAYWRIGHT_LOOP: list[asyncio.AbstractEventLoop] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """A web test (this folder's) runs with Playwright's loop marked running, as its sync
    API expects; the tests after it, without (they run loops of their own)."""
    if HERE not in item.path.parents:
        yield
        return
    if _PLAYWRIGHT_LOOP:  # (else the browser is launched in this test's setup)
        asyncio.events._set_running_loop(_PLAYWRIGHT_LOOP[0])
    try:
        yield
    finally:
        asyncio.events._set_running_loop(None)


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """One headless Chromium for the session (a fresh profile, made by Playwright): each
    test opens contexts of its own in it (:func:`open_page`, :func:`office`)."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (scripts/test does)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        expect.set_options(timeout=ms(10))
        _PLAYWRIGHT_LOOP.append(asyncio.get_running_loop())  # marked so by the call above
        try:
            yield b
        finally:
            # The session may end in another folder's test, with no loop marked running.
            asyncio.events._set_running_loop(_PLAYWRIGHT_LOOP.pop())
            b.close()


@pytest.fixture
def open_page(browser: Browser) -> Iterator[Callable[..., Page]]:
    """``open_page(url, viewport=(w, h))``: a page in its own context. The test fails if
    any page threw a script error or logged one."""
    watches: list[PageWatch] = []

    def _open(
        url: str | None = None, *, viewport: tuple[int, int] = (1280, 900), **options: Any
    ) -> Page:
        context = browser.new_context(
            viewport={"width": viewport[0], "height": viewport[1]}, **options
        )
        context.set_default_timeout(ms(10))
        page = context.new_page()
        watch = PageWatch(page, context)
        page.on("pageerror", lambda err: watch.errors.append(f"pageerror: {err}"))
        page.on(
            "console",
            lambda msg: (
                watch.errors.append(f"console.{msg.type}: {msg.text}")
                if msg.type == "error"
                else None
            ),
        )
        watches.append(watch)
        if url is not None:
            page.goto(url)
        return page

    yield _open
    errors = [e for w in watches for e in w.errors if not _expected_console_error(e)]
    for w in watches:
        w.context.close()
    assert not errors, "script errors in the page:\n" + "\n".join(errors)


def _expected_console_error(text: str) -> bool:
    """Chromium logs a failed WebSocket connection (while the server restarts) as an
    error; that is the network, not the page."""
    return "WebSocket connection to" in text or "net::ERR_CONNECTION_REFUSED" in text


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """Where screenshots go (kept after the run)."""
    base = Path(os.environ.get("CHEMMY_ARTIFACTS", ROOT / "tmp" / "artifacts"))
    out = base / "web"
    out.mkdir(parents=True, exist_ok=True)
    return out


@pytest.fixture
def make_server(tmp_path: Path) -> Iterator[Callable[[list[dict[str, Any]]], ServerProcess]]:
    """``make_server(tables)``: a started server of its own (stopped at the end)."""
    servers: list[ServerProcess] = []

    def _make(tables: list[dict[str, Any]]) -> ServerProcess:
        home = tmp_path / f"server{len(servers)}"
        home.mkdir()
        server = ServerProcess(home, server_config(tables))
        server.start()
        servers.append(server)
        return server

    yield _make
    for s in servers:
        s.stop()


@pytest.fixture
def office(browser: Browser) -> Iterator[Callable[..., Page]]:
    """``office(url)``: the back office (or any page) in a page of its own; any script
    error fails the test, except the console's line for each refused fetch (a 4xx is
    what the back office's tests ask for)."""
    contexts: list[BrowserContext] = []
    errors: list[str] = []

    def _open(url: str | None = None, **options: Any) -> Page:
        context = browser.new_context(viewport={"width": 1280, "height": 900}, **options)
        context.set_default_timeout(ms(10))
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda err: errors.append(f"pageerror: {err}"))
        page.on(
            "console",
            lambda msg: (
                errors.append(f"console.{msg.type}: {msg.text}")
                if msg.type == "error" and "the server responded with a status of 4" not in msg.text
                else None
            ),
        )
        if url is not None:
            page.goto(url)
            page.locator("body[data-ready='1']").wait_for(state="attached")
        return page

    yield _open
    for c in contexts:
        c.close()
    assert not errors, "script errors in the page:\n" + "\n".join(errors)
