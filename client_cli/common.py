"""What the online ``chemmy`` subcommands share: the server URL and who you are.

Every online subcommand (``play``, ``bot``, ``tables``, ``balance``, ``deposit``,
``history``, ``verify --table``) takes the server's URL one way: ``--url URL``, else
the ``CHEMMY_URL`` environment variable, else :data:`DEFAULT_URL`; and either
``--token TOKEN`` (or the ``CHEMMY_TOKEN`` environment variable) or ``--guest``.
Without either, you play as a guest. A guest identity is new on every connection, so anything that should last
(history, balance) needs a token.

Light on imports: this module is loaded when the ``chemmy`` parser is built.
"""

from __future__ import annotations

import argparse
import os
import urllib.parse
from dataclasses import dataclass

from client_cli.main import CliError

__all__ = [
    "DEFAULT_URL",
    "URL_ENV",
    "Who",
    "add_identity_args",
    "add_url_arg",
    "positive_int",
    "server_url",
    "table_url",
    "who",
]

DEFAULT_URL = "ws://127.0.0.1:8765"
TOKEN_ENV = "CHEMMY_TOKEN"
URL_ENV = "CHEMMY_URL"


@dataclass(frozen=True)
class Who:
    url: str
    token: str | None
    guest: bool
    name: str | None


def add_url_arg(p: argparse.ArgumentParser) -> None:
    """``--url URL``: the server (see :func:`who` for the default)."""
    p.add_argument(
        "--url", metavar="URL", help=f"server WebSocket URL (default: ${URL_ENV} or {DEFAULT_URL})"
    )


def add_identity_args(p: argparse.ArgumentParser, *, name: bool = True) -> None:
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--token", metavar="TOKEN", help=f"your player token (default: ${TOKEN_ENV})"
    )
    group.add_argument(
        "--guest", action="store_true", help="play as a guest (a new identity each connection)"
    )
    if name:
        p.add_argument("--name", metavar="NAME", help="your name at the table (guests)")


def server_url(args: argparse.Namespace) -> str:
    """``--url``, else ``$CHEMMY_URL``, else :data:`DEFAULT_URL`; a ws:// or wss:// URL."""
    url = str(getattr(args, "url", None) or os.environ.get(URL_ENV) or DEFAULT_URL)
    if not url.startswith(("ws://", "wss://")):
        raise CliError(f"{args.command}: the server URL starts with ws:// or wss://, not {url!r}")
    return url


def table_url(url: str, table: str) -> str:
    """``url`` naming ``table`` in its query (``?table=T``, encoded as the web page does),
    so that a load balancer can send every connection of a table to one process of a
    cluster (deploy/nginx); ``url`` as it is when its query names a table already."""
    parts = urllib.parse.urlsplit(url)
    if "table" in urllib.parse.parse_qs(parts.query, keep_blank_values=True):
        return url
    named = "table=" + urllib.parse.quote(table, safe="!*'()")  # (encodeURIComponent's)
    query = f"{parts.query}&{named}" if parts.query else named
    return urllib.parse.urlunsplit(parts._replace(path=parts.path or "/", query=query))


def who(args: argparse.Namespace) -> Who:
    """The URL and credentials the arguments (and environment) ask for."""
    url = server_url(args)
    token = (
        None
        if getattr(args, "guest", False)
        else getattr(args, "token", None) or os.environ.get(TOKEN_ENV) or None
    )
    return Who(url=url, token=token, guest=token is None, name=getattr(args, "name", None))


def positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {n}")
    return n
