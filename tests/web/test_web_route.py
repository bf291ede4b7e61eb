"""The web page's WebSocket names its table when the page is opened for one, so that a
cluster's load balancer sends every connection of a table to one process (deploy/README.md):
``?table=ID`` in the page's address, in the host's ``chemmy:connect``, or a frame of "my
tables" connects to ``/?table=ID``; the lobby connects to ``/`` as before; a ``url`` the
host gives is used as given.

What the server was sent is read from a small proxy in front of it, which passes every
connection through and keeps the target of each WebSocket upgrade (the first line of
each connection's request); the page is loaded through it, so its own address is the
proxy's, as it would be a load balancer's.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import Page, expect
from web_helpers import RELAXED, ServerProcess, server_config, token

from tests.kit.timing import scaled

pytestmark = pytest.mark.slow  # a server subprocess and a browser: seconds each

TABLES = [
    {"id": f"route-{x}", "name": f"Route {x.upper()}", "tier": "1-100", "timers": RELAXED}
    for x in "ab"
]


class Recorder:
    """A TCP proxy on a free loopback port in front of ``port``: every connection passed
    through as it is; ``upgrades``, the target of each WebSocket upgrade, in order."""

    def __init__(self, port: int, refuse: str | None = None) -> None:
        self.port = port
        self.upgrades: list[str] = []
        self.live: list[str] = []  # the upgrades whose connections are still open
        self.refuse = refuse  # an upgrade whose target has this is closed at once
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.http = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):  # (closed: the test is over)
            while True:
                client, _address = self.listener.accept()
                self.sockets.append(client)  # (closed by close() whatever happens)
                threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        head = b""
        upstream: socket.socket | None = None
        target: str | None = None
        try:
            while b"\r\n\r\n" not in head and (chunk := client.recv(65536)):
                head += chunk
            lines = head.split(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")
            target = None
            if any(line.lower().replace(" ", "") == "upgrade:websocket" for line in lines):
                target = lines[0].split(" ")[1]
                self.upgrades.append(target)
                if self.refuse is not None and self.refuse in target:
                    return  # (closed: this address cannot be reached)
                self.live.append(target)
            upstream = socket.create_connection(("127.0.0.1", self.port))
            self.sockets.append(upstream)
            upstream.sendall(head)
            back = threading.Thread(target=self._pipe, args=(upstream, client), daemon=True)
            back.start()
            self._pipe(client, upstream)
            back.join(scaled(10))
        except OSError:
            pass  # (closed: the test is over)
        finally:
            if target is not None and target in self.live:
                self.live.remove(target)
            for s in (client, upstream):
                if s is not None:
                    s.close()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while chunk := source.recv(65536):
                sink.sendall(chunk)
            sink.shutdown(socket.SHUT_WR)

    def settled(self, live: list[str]) -> None:
        """Wait until the open upgrades' connections are ``live``."""
        deadline = time.monotonic() + scaled(10)
        while sorted(self.live) != sorted(live):
            assert time.monotonic() < deadline, f"open: {self.live}"
            time.sleep(0.02)

    def wait(self, count: int) -> list[str]:
        """The upgrades, once there are ``count`` of them."""
        deadline = time.monotonic() + scaled(10)
        while len(self.upgrades) < count:
            assert time.monotonic() < deadline, f"upgrades so far: {self.upgrades}"
            time.sleep(0.02)
        return list(self.upgrades)

    def close(self) -> None:
        self.listener.close()
        for s in self.sockets:  # (a shutdown wakes a thread reading it; it closes it)
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    s = ServerProcess(tmp_path_factory.mktemp("web-route"), server_config(TABLES)).start()
    yield s
    s.stop()


@pytest.fixture
def proxy(server: ServerProcess) -> Iterator[Recorder]:
    recorder = Recorder(server.port)
    yield recorder
    recorder.close()


def test_a_page_opened_for_a_table_names_it_and_the_lobby_does_not(
    proxy: Recorder, open_page: Callable[..., Page]
) -> None:
    page = open_page()
    page.goto(f"{proxy.http}/?token={token('route-ann', 'Ann')}&table=route-a")
    page.locator("#table").wait_for(state="visible")
    assert proxy.wait(1) == ["/?table=route-a"]

    # The lobby: no table in the URL. Its player adds both tables to "my tables": each
    # frame connects for its own table.
    page = open_page()  # (a page of its own: its own tab's token)
    page.goto(f"{proxy.http}/?token={token('route-bob', 'Bob')}")
    expect(page.locator("#tables .table-tile[data-tile='route-b']")).to_be_visible()
    assert proxy.wait(2)[1] == "/"
    for tile in ("route-a", "route-b"):
        page.locator(f".my-table[data-table='{tile}']").click()
    page.locator("#btn-mine").click()
    for tile in ("route-a", "route-b"):
        page.locator(f"#grid-frames iframe[data-table='{tile}']").wait_for()
    assert sorted(proxy.wait(4)[2:]) == ["/?table=route-a", "/?table=route-b"]


def test_a_table_opened_from_the_lobby_moves_the_connection_to_its_address(
    proxy: Recorder, open_page: Callable[..., Page]
) -> None:
    """The lobby's connection (``/``, anywhere a load balancer puts it) moves to the
    table's address when its player opens one: the same guest, the table shown, no
    "reconnected" note; the lobby's connection closed. A reload goes there at once, and
    the next table opened from the lobby moves it again."""
    page = open_page()
    page.goto(f"{proxy.http}/?name=Eve")
    expect(page.locator("#tables .table-card[data-table='route-a']")).to_be_visible()
    eve = page.evaluate("() => window.chemmyPage.identity.player")
    page.locator("#tables .table-card[data-table='route-a']").click()
    page.locator("#table").wait_for(state="visible")
    assert proxy.wait(2) == ["/", "/?table=route-a"]
    proxy.settled(["/?table=route-a"])  # (the lobby's connection closed)
    assert page.evaluate("() => window.chemmyPage.identity.player") == eve  # (its resume)
    sockets = page.evaluate("() => window.chemmyPage.client.url")
    assert sockets.endswith("/?table=route-a"), sockets
    expect(page.locator("#seats")).to_be_visible()
    assert "Reconnected" not in page.locator("#log").inner_text()

    page.reload()
    page.locator("#table").wait_for(state="visible")
    assert proxy.wait(3)[2] == "/?table=route-a"  # (the table this tab was at)
    page.locator("#btn-lobby").click()
    page.locator("#tables .table-card[data-table='route-b']").click()
    page.locator("#table").wait_for(state="visible")
    assert proxy.wait(4)[3] == "/?table=route-b"
    assert page.evaluate("() => window.chemmyPage.identity.player") == eve
    proxy.settled(["/?table=route-b"])
    assert len(proxy.upgrades) == 4


def test_a_table_address_out_of_reach_leaves_the_player_where_they_were(
    server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    """The table's address cannot be reached (its load balancer's upstream is down): the
    page goes back to the lobby's address and joins the table there."""
    proxy = Recorder(server.port, refuse="?table=")
    try:
        page = open_page()
        page.goto(f"{proxy.http}/?name=Fay")
        page.locator("#tables .table-card[data-table='route-b']").click()
        page.locator("#table").wait_for(state="visible")
        expect(page.locator("#seats")).to_be_visible()
        assert proxy.wait(3) == ["/", "/?table=route-b", "/"]
        client = "window.chemmyPage.client"
        assert page.evaluate(f"() => {client}.url").endswith("/")
        page.wait_for_function(f"() => {client}.tables.get('route-b')?.seq != null")  # joined
        assert "Reconnected" not in page.locator("#log").inner_text()
        proxy.settled(["/"])
    finally:
        proxy.close()


def test_a_url_given_by_the_host_is_used_as_given(
    proxy: Recorder, open_page: Callable[..., Page]
) -> None:
    given = proxy.http.replace("http:", "ws:") + "/chemmy/socket?lang=fr"
    page = open_page()
    page.goto(f"{proxy.http}/?token={token('route-cat', 'Cat')}&table=route-b&url={given}")
    page.locator("#table").wait_for(state="visible")
    assert proxy.wait(1) == ["/chemmy/socket?lang=fr"]


class Host:
    """The operator's page, at ``localhost`` (another origin than the proxy's
    ``127.0.0.1``): it frames the table (``frame``, taking its token only from this
    origin) and answers its ``chemmy:ready`` with ``message`` (docs/embedding.md §3)."""

    def __init__(self, frame: str, message: dict[str, str]) -> None:
        pages: list[bytes] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(pages[0])))
                self.end_headers()
                self.wfile.write(pages[0])

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        origin = f"http://localhost:{self.httpd.server_address[1]}"
        self.url = origin + "/"
        pages.append(
            f"""<!doctype html><title>Casino</title>
<iframe id="chemmy" src="{frame}/?parent={origin}" width="1000" height="700"></iframe>
<script>
  window.statuses = [];
  addEventListener("message", (ev) => {{
    if (ev.data.type === "chemmy:ready") ev.source.postMessage({json.dumps(message)}, ev.origin);
    if (ev.data.type === "chemmy:status") window.statuses.push(ev.data.state);
  }});
</script>""".encode()
        )
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_the_hosts_table_is_named_too(proxy: Recorder, open_page: Callable[..., Page]) -> None:
    message = {"type": "chemmy:connect", "token": token("route-dee", "Dee"), "table": "route-b"}
    host = Host(proxy.http, message)
    try:
        page = open_page()
        page.goto(host.url)
        expect(page.frame_locator("#chemmy").locator("#table")).to_be_visible()
        assert proxy.wait(1) == ["/?table=route-b"]
    finally:
        host.close()


def test_the_host_hears_nothing_of_a_move(proxy: Recorder, open_page: Callable[..., Page]) -> None:
    """A lobby in the host's frame: its player opens a table, the frame's connection moves
    to the table's address, and the host's ``chemmy:status`` says open all along."""
    host = Host(proxy.http, {"type": "chemmy:connect", "token": token("route-gus", "Gus")})
    try:
        page = open_page()
        page.goto(host.url)
        frame = page.frame_locator("#chemmy")
        frame.locator("#tables .table-card[data-table='route-a']").click()
        expect(frame.locator("#seats")).to_be_visible()
        assert proxy.wait(2) == ["/", "/?table=route-a"]
        proxy.settled(["/?table=route-a"])
        states = page.evaluate("() => window.statuses")
        assert "open" in states and "reconnecting" not in states, states
        assert states[states.index("open") :] == ["open"] * len(states[states.index("open") :])
    finally:
        host.close()
