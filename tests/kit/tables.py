"""Table definitions and secrets the test servers are started with.

- :data:`SECRET` is the HS256 secret every test server accepts tokens under;
  :data:`OTHER_SECRET` one it does not.
- :func:`table_def` is a table for ``ServerConfig.tables`` (or a TOML ``[[tables]]``
  entry) with :func:`timers` short enough for tests and scaled for slow machines;
  :func:`server_toml` writes a ``chemmy-server`` TOML file of settings and tables.
"""

from __future__ import annotations

from typing import Any

from .timing import scaled

SECRET = "chemmy-tests-hs256-secret-0123456789abcdef"  # >= 32 bytes
OTHER_SECRET = "not-the-servers-secret-0123456789abcdefgh"


def timers(**over: float) -> dict[str, float]:
    """Table timers (seconds, scaled): short enough for tests, long enough not to fire
    while a test drives the table itself."""
    base: dict[str, float] = {
        "betting": 5,
        "squeeze": 5,
        "third_card": 5,
        "shoe_offer": 5,
        "cut": 5,
        "grace": 5,
    }
    base.update(over)
    return {k: scaled(v) for k, v in base.items()}


def table_def(table_id: str = "t1", **over: Any) -> dict[str, Any]:
    """A table definition for ServerConfig.tables (tier 1-100: bets of 100-10,000)."""
    definition: dict[str, Any] = {"id": table_id, "name": f"Test {table_id}", "tier": "1-100"}
    definition["timers"] = timers(**over.pop("timers", {}))
    definition.update(over)
    return definition


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML for {value!r}")


def server_toml(tables: list[dict[str, Any]], **settings: Any) -> str:
    """A ``chemmy-server`` TOML file: ``settings`` at the top, then ``[[tables]]``."""
    lines = [f"{key} = {_toml_value(value)}" for key, value in settings.items()]
    for table in tables:
        lines += ["", "[[tables]]"]
        lines += [f"{key} = {_toml_value(value)}" for key, value in table.items()]
    return "\n".join(lines) + "\n"
