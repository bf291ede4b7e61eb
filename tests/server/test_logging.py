"""Log lines for collectors: one JSON object a line, with the table, connection and
player as keys of their own (not only inside the message text)."""

from __future__ import annotations

import json
import logging

from server.process.main import JsonFormatter


def record(**extra: object) -> logging.LogRecord:
    log = logging.getLogger("chemmy.test")
    made = log.makeRecord(
        "chemmy.test", logging.ERROR, __file__, 1, "table %s: %s", ("t1", "x"), None
    )
    for key, value in extra.items():
        setattr(made, key, value)
    return made


def test_structured_fields_are_keys() -> None:
    line = JsonFormatter().format(record(table="t1", conn=7, player="ann"))
    out = json.loads(line)
    assert out["message"] == "table t1: x"
    assert (out["table"], out["conn"], out["player"]) == ("t1", 7, "ann")
    assert out["level"] == "error" and out["logger"] == "chemmy.test"
    assert out["time"].endswith("Z")


def test_fields_not_given_are_left_out() -> None:
    out = json.loads(JsonFormatter().format(record()))
    assert not {"table", "conn", "player"} & set(out)


def test_a_traceback_stays_inside_the_one_line() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        made = record(table="t2")
        made.exc_info = sys.exc_info()
    line = JsonFormatter().format(made)
    assert "\n" not in line
    assert "ValueError: boom" in json.loads(line)["exc"]
