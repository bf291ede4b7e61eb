"""Embedding (docs/embedding.md): the page in an operator's iframe gets its token by
``postMessage`` (never in a URL), from the expected origin only; and chemmy.js imported
as a module into the operator's own page.

The operator's pages come from a small HTTP server of the test's own (port 0, reached
as ``localhost``: another origin than the Chemmy server's ``127.0.0.1``; a page from a
public address could not frame or call a loopback one, Chromium's Local Network
Access, but on the internet both are public).
"""

from __future__ import annotations

import http.server
import json
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from web_helpers import RELAXED, ServerProcess, ms, server_config, shot, token

pytestmark = pytest.mark.slow  # a server subprocess, a browser or a terminal: seconds each

TABLES = [{"id": "web-embed", "name": "Embedded", "tier": "10-1000", "timers": RELAXED}]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    s = ServerProcess(tmp_path_factory.mktemp("web-embed"), server_config(TABLES)).start()
    yield s
    s.stop()


class Host:
    """An operator's web server: serves the pages it is given, at ``localhost``."""

    def __init__(self) -> None:
        pages: dict[str, bytes] = {}
        self.pages = pages

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?")[0]
                body = pages.get(path)
                self.send_response(200 if body else 204 if path == "/favicon.ico" else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://localhost:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def hosts() -> Iterator[Callable[[], Host]]:
    made: list[Host] = []

    def _make() -> Host:
        made.append(Host())
        return made[-1]

    yield _make
    for h in made:
        h.close()


def host_page(chemmy: str, token_: str, *, parent: str) -> str:
    """The operator's page: it embeds the table and, when the table says it is ready,
    sends the token its back end signed (docs/embedding.md, "The iframe way")."""
    return f"""<!doctype html>
<html><head><title>Operator casino</title></head><body>
<h1>Operator casino</h1>
<script>
  window.received = [];
  addEventListener("message", (ev) => {{
    if (ev.origin !== {json.dumps(chemmy)}) return;
    received.push(ev.data);
    if (ev.data.type === "chemmy:ready") {{
      ev.source.postMessage({{ type: "chemmy:connect", token: {json.dumps(token_)}, table: "web-embed" }}, ev.origin);
    }}
  }});
</script>
<iframe id="chemmy" src="{chemmy}/?parent={parent}" width="1100" height="800"></iframe>
</body></html>"""


def test_an_iframe_gets_its_token_by_post_message(
    server: ServerProcess,
    open_page: Callable[..., Page],
    hosts: Callable[[], Host],
    artifacts: Path,
) -> None:
    operator = hosts()
    operator.pages["/casino"] = host_page(
        server.http, token("grace", "Grace"), parent=operator.origin
    ).encode()
    host = open_page(viewport=(1200, 900))
    host.goto(f"{operator.origin}/casino")
    table = host.frame_locator("#chemmy")
    expect(table.locator("#who")).to_have_text("Grace")
    expect(table.locator("#table")).to_be_visible()
    expect(table.locator("#plaque")).to_contain_text("Embedded")
    frame = host.frame(url=re.compile(re.escape(server.http)))
    assert frame is not None and "token" not in frame.url
    table.locator("#seats .seat[data-seat='4'] .sit-here").click()
    expect(table.locator("#seats .seat.me[data-seat='4']")).to_be_visible()
    # The host hears how its player is doing (and nothing before it sent the token).
    host.wait_for_function(
        "() => received.some((m) => m.type === 'chemmy:status' && m.player === 'grace' && m.seat === 4)",
        timeout=ms(10),
    )
    kinds = host.evaluate("received.map((m) => m.type)")
    assert kinds[0] == "chemmy:ready" and "chemmy:status" in kinds
    shot(host, artifacts / "iframe.jpg")


def test_a_token_from_another_origin_is_ignored(
    server: ServerProcess, open_page: Callable[..., Page], hosts: Callable[[], Host]
) -> None:
    """The table expects its token from the operator's origin (``?parent=``): the same
    message from another site's page is ignored, and the page waits."""
    operator, evil = hosts(), hosts()
    evil.pages["/"] = host_page(
        server.http, token("mallory", "Mallory"), parent=operator.origin
    ).encode()
    page = open_page()
    page.goto(f"{evil.origin}/")
    table = page.frame_locator("#chemmy")
    expect(table.locator("#message")).to_have_text("Waiting for the host page…")
    page.wait_for_function("() => received.some((m) => m.type === 'chemmy:ready')", timeout=ms(10))
    page.wait_for_timeout(ms(0.5))
    expect(table.locator("#message")).to_have_text("Waiting for the host page…")
    expect(table.locator("#who")).to_have_text("")
    assert set(page.evaluate("received.map((m) => m.type)")) == {"chemmy:ready"}  # said again


MODULE_PAGE = """<!doctype html>
<html><head><title>Operator's own table</title></head><body>
<pre id="out">working</pre>
<script type="module">
  import { ChemmyError, connect } from "CHEMMY/chemmy.js";
  const kinds = [];
  const chemmy = connect("CHEMMY_WS", { guest: true, name: "Module" });
  const states = [];
  chemmy.on("status", ({ state }) => states.push(state));
  chemmy.on("snapshot", ({ table, seq }) => kinds.push(`snapshot ${table} ${seq}`));
  chemmy.on("event", ({ kind, seq }) => kinds.push(`${kind} ${seq}`));
  const hello = await chemmy.ready;
  const joined = await chemmy.join("web-embed");
  const sat = await chemmy.send("sit", { table: "web-embed" });
  let refused = null;
  try {
    await chemmy.send("deposit", { amount: 0 });
  } catch (err) {
    refused = err instanceof ChemmyError ? err.code : String(err);
  }
  window.result = { hello, joinedSeq: joined.seq, sat, refused, kinds, states,
                    seq: chemmy.tables.get("web-embed").seq, offset: chemmy.serverNow() - Date.now() / 1000 };
  document.getElementById("out").textContent = "done";
</script>
</body></html>"""


def test_chemmy_js_as_a_module_in_the_operators_page(
    server: ServerProcess, open_page: Callable[..., Page], hosts: Callable[[], Host]
) -> None:
    """The operator's own page imports chemmy.js from the Chemmy server (CORS) and plays
    through it: connect, hello, join, a command, events in order, a refusal."""
    operator = hosts()
    html = MODULE_PAGE.replace("CHEMMY_WS", server.ws).replace("CHEMMY", server.http)
    operator.pages["/my-table.html"] = html.encode()
    page = open_page()
    page.goto(f"{operator.origin}/my-table.html")
    expect(page.locator("#out")).to_have_text("done")
    r = page.evaluate("window.result")
    assert r["hello"]["guest"] is True and r["hello"]["name"] == "Module"
    assert r["states"][:2] == ["connecting", "open"]
    assert r["kinds"][0] == f"snapshot web-embed {r['joinedSeq']}"
    # The sit's events came before its reply, in seq order, each once.
    seqs = [int(k.split()[-1]) for k in r["kinds"][1:]]
    assert seqs == list(range(r["joinedSeq"] + 1, r["sat"]["seq"] + 1))
    assert any(k.startswith("sat ") for k in r["kinds"])
    assert r["seq"] == r["sat"]["seq"]
    assert r["refused"] == "bad_amount"
    assert abs(r["offset"]) < 5, "the server's clock, from ping"
