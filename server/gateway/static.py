"""The web table's files, served on the server's own port (docs/embedding.md).

``respond(request, origins)`` answers a plain HTTP request (not a WebSocket upgrade) for
the page: ``/`` (``web/index.html``), every other file in ``web/`` by
its name (``/chemmy.js``, ``/app.js``, ``/chemmy.css``, ...), the message catalogs
(``/locales/en.json``, ...: ``texts/locales/``), and ``/rules.md``, the
rules text the terminal client shows (``texts/rules.md``: one file for both), and
the operator's back-office page: ``/operator/`` (``web/operator/index.html``) and its
files as ``/operator/static/<name>`` (``web/operator/<name>``). The page's files hold
no data (the data comes from ``/operator/v1/``, behind the operator's credential), so
they are public like the web table's; the back office may not be framed at all
(``frame-ancestors 'none'`` and ``X-Frame-Options: DENY``: its buttons void rounds and
pause tables).
``GET`` and ``HEAD`` only (``405`` otherwise); each file with its content type, an
``ETag`` and ``Cache-Control: no-cache`` (the names carry no version, so a browser
revalidates and a new release is never served stale; an unchanged file costs a
``304``), and the same strict Content-Security-Policy: scripts, styles and the
WebSocket from this origin only, no inline code, no ``innerHTML`` (Trusted Types), and
framing allowed only by the ``--origins`` allowlist (anyone when there is none, as the
WebSocket itself then admits every origin). ``/chemmy.js``, ``/state.js``, ``/i18n.js``,
``/embed.js`` and the catalogs may also be imported by an operator's page on another
origin (CORS);
the rest is same-origin.

The files are read once, when first asked for, into memory: a request never touches
the file system, so no path can reach a file outside the list. This module must never
answer a WebSocket handshake (it returns ``None`` and the handshake goes on), decide
anything about the game, or set a cookie.
"""

from __future__ import annotations

import functools
import hashlib
import http
import re
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources

from websockets.datastructures import Headers
from websockets.http11 import Request, Response

import texts

__all__ = [
    "CONTENT_TYPES",
    "LOCALES",
    "OPERATOR_PAGE",
    "SHARED_MODULES",
    "Asset",
    "assets",
    "content_security_policy",
    "respond",
]

#: The extensions served, with their content type; a file of any other kind is not.
CONTENT_TYPES: dict[str, str] = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".md": "text/markdown; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".json": "application/json",
}
_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]*")
#: Modules an operator's page may import from this server's origin (CORS): the client,
#: the table's model and the host page's side of an iframe (``embed.js``). The page's own
#: files stay same-origin.
SHARED_MODULES = frozenset({"/chemmy.js", "/state.js", "/i18n.js", "/embed.js"})
#: The one folder served besides the web folder's files: the message catalogs, one
#: per language (``locales/en.json``, ...: ``texts``, which the page and the terminal
#: client share; docs/architecture.md, "Languages"). They are shared like the modules
#: that import them.
LOCALES = texts.LOCALES
#: The back office's folder (in the web folder) and where its files are served:
#: ``/operator/`` the page, ``/operator/static/<name>`` each file.
BACK_OFFICE = "operator"
OPERATOR_PAGE = "/operator/"
_OPERATOR_FILES = "/operator/static/"


@dataclass(frozen=True, slots=True)
class Asset:
    body: bytes
    content_type: str
    etag: str


def _asset(body: bytes, name: str) -> Asset:
    ext = name[name.rfind(".") :]
    return Asset(body, CONTENT_TYPES[ext], '"' + hashlib.sha256(body).hexdigest()[:20] + '"')


@functools.cache
def assets() -> dict[str, Asset]:
    """Every path served, read once: the web folder's files, the catalogs and the rules
    text (``texts``)."""
    out: dict[str, Asset] = {}
    folder = resources.files("web")
    for entry in folder.iterdir():
        name = entry.name
        ext = name[name.rfind(".") :] if "." in name else ""
        if entry.is_file() and _NAME.fullmatch(name) and ext in CONTENT_TYPES:
            out["/" + name] = _asset(entry.read_bytes(), name)
    for entry in texts.catalogs().iterdir():
        name = entry.name
        if entry.is_file() and _NAME.fullmatch(name) and name.endswith(".json"):
            out[f"/{LOCALES}/{name}"] = _asset(entry.read_bytes(), name)
    if "/index.html" in out:
        out["/"] = out["/index.html"]
    back_office = folder.joinpath(BACK_OFFICE)
    for entry in back_office.iterdir() if back_office.is_dir() else ():
        name = entry.name
        ext = name[name.rfind(".") :] if "." in name else ""
        if entry.is_file() and _NAME.fullmatch(name) and ext in CONTENT_TYPES:
            if name == "index.html":
                out[OPERATOR_PAGE] = _asset(entry.read_bytes(), name)
            else:
                out[_OPERATOR_FILES + name] = _asset(entry.read_bytes(), name)
    out["/rules.md"] = _asset(texts.rules_bytes(), "rules.md")
    return out


def content_security_policy(origins: Iterable[str] = (), *, back_office: bool = False) -> str:
    """The page's policy. ``frame-ancestors``: the allowlisted origins (and this one),
    or anyone when the server has no allowlist; nobody for the back office."""
    framers = [o for o in origins if o != "null"]
    ancestors = " ".join(["'self'", *framers]) if framers else "*"
    if back_office:
        ancestors = "'none'"
    return "; ".join(
        [
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            "img-src 'self' data:",
            "connect-src 'self'",
            "frame-src 'self'",  # the page's own tables side by side (web/grid.js)
            "manifest-src 'self'",
            "base-uri 'none'",
            "form-action 'none'",
            f"frame-ancestors {ancestors}",
            "require-trusted-types-for 'script'",
            "trusted-types 'none'",
        ]
    )


def respond(request: Request, origins: Iterable[str] = ()) -> Response | None:
    """The response for a page request, or ``None`` when it is not one (a WebSocket
    upgrade, or a path that is not a file of the page)."""
    if request.headers.get("Upgrade", "").lower() == "websocket":
        return None
    path = request.path.split("?", 1)[0].split("#", 1)[0]
    asset = assets().get(path)
    if asset is None:
        return None
    method = getattr(request, "method", "GET")
    if method not in ("GET", "HEAD"):
        return _response(
            http.HTTPStatus.METHOD_NOT_ALLOWED,
            [("Allow", "GET, HEAD"), ("Content-Type", "text/plain; charset=utf-8")],
            b"method not allowed\n",
            method,
        )
    back_office = path.startswith(OPERATOR_PAGE)
    headers = [
        ("Content-Type", asset.content_type),
        ("Cache-Control", "no-cache"),
        ("ETag", asset.etag),
        ("Content-Security-Policy", content_security_policy(origins, back_office=back_office)),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
    ]
    if back_office:
        headers.append(("X-Frame-Options", "DENY"))
    if path in SHARED_MODULES or path.startswith(f"/{LOCALES}/"):
        headers += [
            ("Access-Control-Allow-Origin", "*"),
            ("Cross-Origin-Resource-Policy", "cross-origin"),
        ]
    else:
        headers.append(("Cross-Origin-Resource-Policy", "same-origin"))
    if asset.etag in _etags(request.headers.get("If-None-Match", "")):
        return _response(http.HTTPStatus.NOT_MODIFIED, headers, b"", method)
    return _response(http.HTTPStatus.OK, headers, asset.body, method)


def _etags(header: str) -> set[str]:
    return {tag.strip().removeprefix("W/") for tag in header.split(",") if tag.strip()}


def _response(
    status: http.HTTPStatus, headers: list[tuple[str, str]], body: bytes, method: str
) -> Response:
    """A complete response; ``HEAD`` gets the headers of ``GET`` without the body."""
    all_headers = Headers(headers)
    if status != http.HTTPStatus.NOT_MODIFIED:
        all_headers["Content-Length"] = str(len(body))
    all_headers["Connection"] = "close"
    return Response(status.value, status.phrase, all_headers, b"" if method == "HEAD" else body)
