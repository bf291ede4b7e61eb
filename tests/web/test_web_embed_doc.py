"""docs/embedding.md word for word (issue 34 §1): the page's own blocks, taken out of the
markdown at test time (never copied here), served as the page says, and a coup played
through them in Chromium, so the recipe cannot drift from what works.

- The operator's site: real nginx with the page's §5 configuration (its listen port,
  certificate paths, web root and upstream addresses put in, every other line as it
  is: the site's ``Content-Security-Policy`` header, no inline script or style), the
  token endpoint of §2 (``chemmy_token.py`` and ``operator_backend.py``, run as they are
  on a free port), Chemmy started with the ``--origins`` §5 gives, and the pages of §3
  and §4 (``casino.html`` + ``casino.js``; ``my-table.html`` + ``my-table.js``) in the
  web root. ``casino.example`` is this test's ``localhost:PORT``; the visitor's login
  is the ``X-User`` header the token endpoint reads.
- §3, the iframe way: the frame has its size and its title, the table connects with
  the token from the endpoint and a coup is played in it; the host page hears the
  player's seat; no script error, no CSP violation (the console would say so); axe-core
  finds no serious or critical issue in the host page or inside the frame.
- §4, the module way: the page's script waits for what the server allows (the shoe
  offered, then cut) and its bet is taken; the coup is settled.
- A frame whose origin the server does not take (``--origins`` naming another site):
  the table says that this site may not show it, the host page is told (code 4003),
  and it does not try again ("Connection lost — reconnecting" for ever, before).
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect
from test_web_a11y import AXE, IMPACTS
from web_helpers import FAST, ROOT, SECRET, TablePage, ms, scaled, server_config

from tests.kit import ServerProcess
from tests.kit.launch import Process
from tests.kit.local import ClusterError, free_port, make_tls, nginx_main

pytestmark = pytest.mark.slow  # nginx, two subprocesses and a browser: seconds each

DOC = ROOT / "docs" / "embedding.md"
SITE = "casino.example"
TABLES = [{"id": "t1", "name": "Embedded", "tier": "1-100", "timers": FAST}]


# ---------------------------------------------------------------------------- the page


def doc_files(text: str) -> dict[str, str]:
    """Every fenced block of the page that names its file on its first line (``<!--
    casino.html: ... -->``, ``// my-table.js: ...``, ``# chemmy_token.py: ...``), by
    that name; and the one ``nginx`` block as ``nginx.conf``."""
    files: dict[str, str] = {}
    for lang, body in re.findall(r"^```(\w*)\n(.*?)^```", text, flags=re.M | re.S):
        first = body.splitlines()[0] if body else ""
        named = re.match(r"^\s*(?:<!--|//|#)\s*([\w.-]+\.(?:html|js|py)):", first)
        if named:
            files[named[1]] = body
        elif lang == "nginx":
            assert "nginx.conf" not in files, "one nginx block"
            files["nginx.conf"] = body
    return files


def doc_origins(text: str) -> str:
    """The ``--origins`` of §5's chemmy-server command."""
    found = re.search(r"Start Chemmy behind it with `chemmy-server [^`]*--origins (\S+?)`", text)
    assert found, "docs/embedding.md §5 starts Chemmy with --origins"
    return found[1]


def render_nginx(
    conf: str, *, port: int, cert: Path, key: Path, root: Path, chemmy: int, backend: int
) -> str:
    """§5's configuration with what differs on this machine put in: the listening
    address, the certificate, the web root, the two upstream addresses. Each must be
    found exactly once, so a changed block fails here rather than serve something else."""
    subs = [
        (r"^(\s*)listen\s+443\s+ssl;", rf"\1listen 127.0.0.1:{port} ssl;"),
        (r"^(\s*ssl_certificate\s+)\S+;", rf"\g<1>{cert};"),
        (r"^(\s*ssl_certificate_key\s+)\S+;", rf"\g<1>{key};"),
        (r"^(\s*root\s+)/var/www/casino;", rf"\g<1>{root};"),
        (r"(upstream chemmy\s*\{\s*server )127\.0\.0\.1:8765;", rf"\g<1>127.0.0.1:{chemmy};"),
        (r"(upstream operator_be\s*\{\s*server )127\.0\.0\.1:8000;", rf"\g<1>127.0.0.1:{backend};"),
    ]
    for pattern, replacement in subs:
        conf, count = re.subn(pattern, replacement, conf, flags=re.M)
        assert count == 1, f"docs/embedding.md §5: {pattern!r} found {count} times"
    return conf


@dataclass
class Site:
    """The operator's site of docs/embedding.md, running: nginx, the token endpoint and
    Chemmy behind it."""

    origin: str
    chemmy: ServerProcess
    processes: list[Any] = field(default_factory=list)


def wait_http(url: str, what: str, seconds: float = 20) -> None:
    deadline = time.monotonic() + scaled(seconds)
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=1).close()
            return
        except urllib.error.HTTPError:
            return  # it answers
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"{what} did not answer at {url}")


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Callable[..., Site]]:
    """``site(origins=None)``: the site running, Chemmy with the page's ``--origins``
    (or the ones given)."""
    made: list[Any] = []
    text = DOC.read_text(encoding="utf-8")
    files = doc_files(text)
    for name in (
        "casino.html",
        "casino.js",
        "my-table.html",
        "my-table.js",
        "chemmy_token.py",
        "operator_backend.py",
        "nginx.conf",
    ):
        assert name in files, f"docs/embedding.md has no block for {name}"

    def start(origins: str | None = None) -> Site:
        nginx_bin = shutil.which("nginx") or "/usr/sbin/nginx"
        assert Path(nginx_bin).exists(), "nginx is not installed (Debian package nginx)"
        home = tmp_path / f"site{len(made)}"
        www, backend_dir, conf = home / "www", home / "backend", home / "nginx"
        for d in (www, backend_dir, conf):
            d.mkdir(parents=True)
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
            (conf / "temp" / kind).mkdir(parents=True)
        backend_port = free_port()
        # §2's two files, as they are but for the port.
        (backend_dir / "chemmy_token.py").write_text(files["chemmy_token.py"])
        server_py = files["operator_backend.py"]
        assert server_py.count("8000") == 1
        (backend_dir / "operator_backend.py").write_text(
            server_py.replace("8000", str(backend_port))
        )
        backend = Process(
            [sys.executable, "operator_backend.py"],
            ready=None,
            cwd=backend_dir,
            env={"CHEMMY_JWT_SECRET": SECRET},
        )
        backend.start()
        made.append(backend)
        wait_http(f"http://127.0.0.1:{backend_port}/", "the token endpoint")
        _ca, cert, key = make_tls(conf / "tls")
        for attempt in range(10):
            port = free_port()  # nginx cannot say which port 0 it bound: try another
            origin = f"https://localhost:{port}"
            # Chemmy, with the --origins of §5 (casino.example: this site).
            wanted = origins or doc_origins(text).replace(f"https://{SITE}", origin)
            chemmy = ServerProcess(
                home / f"chemmy{attempt}", server_config(TABLES), "--log-level", "warning",
                "--origins", wanted,
            )  # fmt: skip
            chemmy.start()
            site_conf = render_nginx(
                files["nginx.conf"], port=port, cert=cert, key=key, root=www,
                chemmy=chemmy.port, backend=backend_port,
            )  # fmt: skip
            (conf / "chemmy.conf").write_text(site_conf)
            (conf / "chemmy-upstream.conf").write_text("")
            (conf / "nginx.conf").write_text(site_main(conf))
            for name in ("casino.html", "my-table.html"):
                (www / name).write_text(host_page(files[name].replace(SITE, f"localhost:{port}")))
            for name in ("casino.js", "my-table.js"):
                (www / name).write_text(files[name].replace(SITE, f"localhost:{port}"))
            nginx = Process(
                [nginx_bin, "-p", str(conf), "-c", str(conf / "nginx.conf"), "-e",
                 str(conf / "error.log")],
                ready=None,
                own_session=True,
            )  # fmt: skip
            nginx.start()
            with contextlib.suppress(AssertionError):
                wait_http(f"http://127.0.0.1:{port}/", "nginx", 5)
            if nginx.running:
                made.extend([chemmy, nginx])
                return Site(origin, chemmy)
            nginx.stop()
            chemmy.stop()
        raise ClusterError(f"nginx did not start: {(conf / 'error.log').read_text()[-2000:]}")

    yield start
    for process in reversed(made):
        process.stop()


def site_main(folder: Path) -> str:
    """The main nginx.conf around §5's block, as Debian's /etc/nginx/nginx.conf is: with
    the file types (a module script must come as JavaScript)."""
    types = next((p for p in (Path("/etc/nginx/mime.types"),) if p.exists()), None)
    assert types is not None, "nginx's mime.types is missing (Debian package nginx)"
    main = nginx_main(folder)
    head = f"http {{\n    include {types};\n    default_type application/octet-stream;\n"
    assert main.count("http {\n") == 1
    return main.replace("http {\n", head)


def host_page(snippet: str) -> str:
    """A page of the operator's site around a block of the page (as any site would)."""
    return f"""<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Casino</title></head>
<body>
<h1>Casino</h1>
{snippet}
</body>
</html>
"""


@pytest.fixture
def visitor(browser: Browser) -> Iterator[Callable[..., Page]]:
    """``visitor(user, bypass_csp=False)``: a logged-in visitor's page (the ``X-User``
    header the token endpoint reads; the site's certificate is this test's own). Any
    script error or CSP violation fails the test."""
    contexts: list[BrowserContext] = []
    errors: list[str] = []

    def _open(user: str, *, bypass_csp: bool = False) -> Page:
        context = browser.new_context(
            viewport={"width": 1280, "height": 1000},
            ignore_https_errors=True,
            extra_http_headers={"X-User": user},
            bypass_csp=bypass_csp,
        )
        context.set_default_timeout(ms(15))
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda err: errors.append(f"pageerror: {err}"))
        page.on(
            "console",
            lambda m: (
                errors.append(f"console.{m.type}: {m.text} ({m.location.get('url')})")
                if m.type == "error" and not m.location.get("url", "").endswith("/favicon.ico")
                else None  # the site's own icon is not the recipe's
            ),
        )
        return page

    yield _open
    for c in contexts:
        c.close()
    assert not errors, "script errors or CSP violations:\n" + "\n".join(errors)


def axe_serious(frame: Any, where: str) -> list[str]:
    """axe-core's serious and critical violations in ``frame`` (a page or a frame)."""
    frame.evaluate(AXE.read_text(encoding="utf-8"))
    result = frame.evaluate(
        """async () => {
          const r = await axe.run(document, { resultTypes: ["violations"] });
          return { violations: r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(" ")) })), passes: r.passes.length };
        }"""
    )
    assert result["passes"] > 5, f"axe checked nothing at {where}"
    return [
        f"{where}: {v['impact']} {v['id']} at {v['nodes'][:3]}"
        for v in result["violations"]
        if v["impact"] in IMPACTS
    ]


# ---------------------------------------------------------------------------- §3


def test_the_iframe_way_as_written_plays_a_coup(
    site: Callable[..., Site], visitor: Callable[..., Page]
) -> None:
    s = site()
    page = visitor("grace")
    statuses: list[Any] = []
    page.expose_function("heard", lambda detail: statuses.append(detail))
    page.add_init_script(
        "addEventListener('DOMContentLoaded', () => document.getElementById('chemmy')"
        "?.addEventListener('chemmy:status', (ev) => window.heard(ev.detail)));"
    )
    page.goto(f"{s.origin}/casino.html")
    frame_el = page.locator("#chemmy")
    expect(frame_el).to_have_attribute("title", re.compile(r"\S"))
    box = frame_el.bounding_box()
    assert box is not None and box["height"] >= 800 and box["width"] >= 1000, (
        box
    )  # sized by embed.js
    table = page.frame_locator("#chemmy")
    expect(table.locator("#who")).to_have_text("Grace")
    expect(table.locator("#plaque")).to_contain_text("Embedded")
    frame = page.frame(url=re.compile(r"/chemmy/"))
    assert frame is not None and "token" not in frame.url
    # A coup, played in the frame as a player would.
    tp = TablePage(frame, "grace")
    tp.sit(3)
    tp.click("#act-accept")
    tp.click("#act-cut")
    frame.wait_for_function("() => Boolean(chemmyPage.state.actions.done)", timeout=ms(15))
    tp.bet("banker")
    round_id = tp.round_id()
    tp.click("#act-done")
    tp.toss_until_settled(round_id)
    # The host page heard its player's seat and balance (casino.js's listener too).
    assert any(d.get("seat") == 3 and d.get("player") == "grace" for d in statuses), statuses[-3:]


def test_axe_finds_nothing_serious_inside_the_documented_iframe(
    site: Callable[..., Site], visitor: Callable[..., Page]
) -> None:
    """axe-core inside the frame (a second visit that bypasses the CSP: its Trusted Types
    would refuse the injected axe script; the markup is the same), in the lobby and at
    the table, seated."""
    s = site()
    page = visitor("hana", bypass_csp=True)
    page.goto(f"{s.origin}/casino.html")
    table = page.frame_locator("#chemmy")
    expect(table.locator("#table")).to_be_visible()
    frame = page.frame(url=re.compile(r"/chemmy/"))
    assert frame is not None
    found = axe_serious(frame, "the table in the frame")
    TablePage(frame, "hana").sit(2)
    found += axe_serious(frame, "seated, in the frame")
    found += axe_serious(page, "the operator's page")
    assert not found, "axe found serious or critical violations:\n" + "\n".join(found)


# ---------------------------------------------------------------------------- §4


def test_the_module_way_as_written_waits_for_the_shoe_then_bets(
    site: Callable[..., Site], visitor: Callable[..., Page]
) -> None:
    s = site()
    page = visitor("ivan")
    said: list[str] = []
    page.on("console", lambda m: said.append(m.text) if m.type == "log" else None)
    page.goto(f"{s.origin}/my-table.html")
    page.wait_for_function("() => document.title === 'Chemmy (open)'", timeout=ms(15))
    deadline = time.monotonic() + scaled(30)
    while not any(re.search(r"— You (won|lost)|Your bets push|You break even", t) for t in said):
        assert time.monotonic() < deadline, f"no settled coup in the page's notes: {said[-8:]}"
        page.wait_for_timeout(100)
    assert not [t for t in said if t.startswith("Refused:")], said
    assert any(t.startswith("You sit in seat") for t in said), said
    assert any("place your bets" in t for t in said), said


# ---------------------------------------------------------------------------- origins


def test_a_frame_from_an_origin_not_allowed_says_so_and_tells_its_host(
    site: Callable[..., Site], visitor: Callable[..., Page]
) -> None:
    """Chemmy started with ``--origins`` naming another site: the frame (behind this
    nginx, which passes the Host without its port: not Chemmy's own origin either) is
    not taken. It says so, tells the host (code 4003), and stops."""
    s = site(origins="https://elsewhere.example")
    page = visitor("jon")
    statuses: list[Any] = []
    page.expose_function("heard", lambda detail: statuses.append(detail))
    page.add_init_script(
        "addEventListener('DOMContentLoaded', () => document.getElementById('chemmy')"
        "?.addEventListener('chemmy:status', (ev) => window.heard(ev.detail)));"
    )
    page.goto(f"{s.origin}/casino.html")
    table = page.frame_locator("#chemmy")
    expect(table.locator("#message")).to_have_text("This site is not allowed to show the table")
    expect(table.locator("#banner")).to_contain_text(f"({s.origin})")
    expect(table.locator("#conn")).to_have_text("disconnected")
    page.wait_for_timeout(ms(2))  # no reconnecting meanwhile
    expect(table.locator("#banner")).not_to_contain_text("reconnecting")
    closed = [d for d in statuses if d.get("state") == "closed"]
    assert closed and closed[-1]["code"] == 4003, statuses
    assert closed[-1]["reason"].startswith("origin_not_allowed"), statuses
    assert not [d for d in statuses if d.get("state") == "reconnecting"], statuses
    assert json.dumps(statuses)  # the host got plain data
