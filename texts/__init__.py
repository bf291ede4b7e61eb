"""The texts both clients use: the message catalogs (``locales/<language>.json``: the
web page's ``t`` and the terminal's ``client_cli.i18n``; docs/architecture.md §11a) and
the condensed rules (``rules.md``: the terminal's rules screen and the page's
``/rules.md``).

One place, so that neither client reads the other's (or the server's) files: the
gateway serves these, the terminal client reads them, and both import only this
package. It must never import ``server`` or ``client_cli``.
"""

from __future__ import annotations

from importlib import resources
from importlib.abc import Traversable

__all__ = ["LOCALES", "catalog_bytes", "catalogs", "rules_bytes"]

#: The folder of the message catalogs, one ``<language>.json`` each.
LOCALES = "locales"


def catalogs() -> Traversable:
    """The catalogs' folder (``locales/``), as packaged."""
    return resources.files(__name__).joinpath(LOCALES)


def catalog_bytes(language: str) -> bytes:
    """A language's catalog as stored (JSON); ``FileNotFoundError`` when there is none."""
    return catalogs().joinpath(f"{language}.json").read_bytes()


def rules_bytes() -> bytes:
    """The condensed rules (Markdown, UTF-8)."""
    return resources.files(__name__).joinpath("rules.md").read_bytes()
