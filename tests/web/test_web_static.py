"""The page's files over plain HTTP on the server's port (server/gateway/static.py): GET and
HEAD, content types, revalidation by ETag, the Content-Security-Policy, the rules text
shared with the terminal client, and nothing but the listed files."""

from __future__ import annotations

import http.client
import re
from collections.abc import Iterator

import pytest
from web_helpers import ROOT, ServerProcess, server_config
from websockets.datastructures import Headers
from websockets.http11 import Request

from server.gateway import static

# (One server subprocess for the module and plain HTTP: under a second in all, not slow.)

STATIC = ROOT / "web"
LOCALES = ROOT / "texts" / "locales"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    s = ServerProcess(tmp_path_factory.mktemp("web-static"), server_config([{"id": "s1"}])).start()
    yield s
    s.stop()


def fetch(
    server: ServerProcess, path: str, method: str = "GET", headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request(method, path, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def test_the_page_and_its_files(server: ServerProcess) -> None:
    status, headers, body = fetch(server, "/")
    assert status == 200
    assert body == (STATIC / "index.html").read_bytes()
    assert headers["content-type"] == "text/html; charset=utf-8"
    assert headers["cache-control"] == "no-cache"
    assert headers["x-content-type-options"] == "nosniff"
    csp = headers["content-security-policy"]
    for directive in (
        "default-src 'none'",
        "script-src 'self'",
        "connect-src 'self'",
        "frame-ancestors *",
        "require-trusted-types-for 'script'",
    ):
        assert directive in csp
    assert "unsafe" not in csp
    types = {
        "/app.js": "text/javascript; charset=utf-8",
        "/chemmy.js": "text/javascript; charset=utf-8",
        "/state.js": "text/javascript; charset=utf-8",
        "/chemmy.css": "text/css; charset=utf-8",
        "/favicon.svg": "image/svg+xml",
    }
    for path, kind in types.items():
        status, headers, body = fetch(server, path + "?v=1")
        assert (status, headers["content-type"]) == (200, kind), path
        assert body == (STATIC / path[1:]).read_bytes()
    # Every file of the folder is served (a new kind of file needs its content type).
    served = set(static.assets())
    assert {f"/{p.name}" for p in STATIC.iterdir() if p.is_file() and p.suffix != ".py"} <= served
    # ... and the message catalogs, one folder of them (issue 17).
    catalogs = {f"/locales/{p.name}" for p in LOCALES.iterdir()}
    assert {"/locales/en.json", "/locales/fr.json"} <= catalogs <= served
    # ... and the back office's (issue 21): the page at /operator/, its files below.
    office = {f"/operator/static/{p.name}" for p in (STATIC / "operator").iterdir()}
    assert "/operator/" in served
    assert office - {"/operator/static/index.html"} <= served
    status, headers, body = fetch(server, "/locales/fr.json")
    assert (status, headers["content-type"]) == (200, "application/json")
    assert body == (LOCALES / "fr.json").read_bytes()


def test_head_revalidation_and_methods(server: ServerProcess) -> None:
    status, headers, body = fetch(server, "/app.js", "HEAD")
    assert status == 200 and body == b""
    assert int(headers["content-length"]) == (STATIC / "app.js").stat().st_size
    etag = headers["etag"]
    status, headers, body = fetch(server, "/app.js", headers={"If-None-Match": etag})
    assert status == 304 and body == b"" and headers["etag"] == etag
    status, _, _ = fetch(server, "/app.js", headers={"If-None-Match": '"stale"'})
    assert status == 200
    status, headers, _ = fetch(server, "/app.js", "POST", headers={"Content-Length": "0"})
    assert status == 405 and headers["allow"] == "GET, HEAD"


def test_the_rules_are_the_terminal_clients(server: ServerProcess) -> None:
    status, headers, body = fetch(server, "/rules.md")
    assert status == 200 and headers["content-type"] == "text/markdown; charset=utf-8"
    assert body == (ROOT / "texts" / "rules.md").read_bytes()


def test_nothing_else_is_served(server: ServerProcess) -> None:
    for path in (
        "/nope.js",
        "/../server/gateway/static.py",
        "/__init__.py",
        "/static.py",
        "/%2e%2e/pyproject.toml",
        "/index.htm",
    ):
        status, _, _ = fetch(server, path)
        assert status == 404, path
    status, _, body = fetch(server, "/healthz")
    assert (status, body) == (200, b"ok\n")


def test_modules_an_operator_imports_are_shared(server: ServerProcess) -> None:
    # state.js imports i18n.js, which imports the English catalog (issue 17).
    for path in ("/chemmy.js", "/state.js", "/i18n.js", "/locales/en.json", "/locales/fr.json"):
        _, headers, _ = fetch(server, path)
        assert headers["access-control-allow-origin"] == "*"
        assert headers["cross-origin-resource-policy"] == "cross-origin"
    _, headers, _ = fetch(server, "/app.js")
    assert "access-control-allow-origin" not in headers
    assert headers["cross-origin-resource-policy"] == "same-origin"


def test_framing_follows_the_origin_allowlist() -> None:
    csp = static.content_security_policy(["https://casino.example", "null"])
    assert "frame-ancestors 'self' https://casino.example;" in csp
    response = static.respond(Request("/", Headers()), ["https://casino.example"])
    assert response is not None
    assert (
        "frame-ancestors 'self' https://casino.example"
        in response.headers["Content-Security-Policy"]
    )


def test_a_websocket_handshake_is_not_a_page() -> None:
    upgrade = Headers([("Upgrade", "websocket"), ("Connection", "Upgrade")])
    assert static.respond(Request("/", upgrade)) is None
    assert static.respond(Request("/nope", Headers())) is None


def test_the_page_has_no_inline_code() -> None:
    """The CSP forbids inline scripts, styles and handlers: the page has none, and the
    scripts never write HTML as text."""
    for page in ("index.html", "operator/index.html"):  # the table and the back office
        html = (STATIC / page).read_text()
        assert "<script>" not in html and "<style" not in html and " style=" not in html
        assert not re.search(r"\son[a-z]+\s*=", html), f"an inline event handler in {page}"
    for js in [*STATIC.glob("*.js"), *STATIC.glob("operator/*.js")]:
        text = js.read_text()
        sinks = (
            r"\.(inner|outer)HTML\s*=|insertAdjacentHTML\(|document\.write|\beval\(|new Function\("
        )
        assert not re.search(sinks, text), f"{js.name} writes HTML as text or evaluates code"
