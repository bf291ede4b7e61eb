"""The operator's table controls over HTTP (issue 21): voids, create, close, pause, resume.

- ``POST /operator/v1/rounds/{round_id}/void`` with ``{"reason": "..."}`` (1-200
  characters after the text check of names and chat, ``server.protocol.text``: no
  control, bidi or zero-width character reaches the players' ``voided`` event; ``400
  bad_reason`` otherwise): the table's current round, not settled, is voided (every wager back,
  recorded ``void: true``, the players told by a ``voided`` event). The table is found
  from the round id (``<table>-<shoe>-<coup>``). ``404 not_found``: no such table, or a
  round it is not playing; ``409 already_settled``: the round is over.
- ``POST /operator/v1/tables`` with ``{"table": id?, "options": {...}?}``: a new table,
  as the WebSocket ``create_table`` (``server.gateway.tables.new_table``); ``409
  table_exists``, ``400 bad_options``/``bad_request``.
- ``POST /operator/v1/tables/{table}/close``, ``/pause``, ``/resume``: as the WebSocket
  ``close_table``; pause stops new coups (a coup being dealt finishes), resume lets them
  start again.

Each goes to the table's owner as a command record on the bus, as the WebSocket
operator commands do (:meth:`server.gateway.server.ChemmyServer.ask_table`), so any process
of a cluster may take the call. Nothing here decides a rule: the table refuses what it
refuses, and its code becomes the HTTP status (:data:`STATUS`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from server.gateway.tables import TABLE_ID, new_table
from server.operator.api import OperatorAPI, OperatorCall, OperatorRefusal
from server.operator.context import OperatorSide
from server.protocol.errors import ChemmyError
from server.protocol.records import ReplyRecord
from server.protocol.text import clean_text
from server.vocabulary.commands import VOID_REASON_MAX

__all__ = ["STATUS", "install", "table_of_round"]

#: The HTTP status of each refusal a table or the gateway answers (else 409).
STATUS: Mapping[str, int] = {
    "not_found": 404,
    "no_table": 404,
    "already_settled": 409,
    "table_closed": 409,
    "table_exists": 409,
    "bad_reason": 400,
    "bad_command": 400,
    "bad_options": 400,
    "bad_message": 400,
    "busy": 503,
    "unavailable": 503,
    "store_unavailable": 503,
    "timeout": 504,
    "store_failed": 500,
    "internal": 500,
}


def table_of_round(round_id: str) -> str | None:
    """The table of a round id ``<table>-<shoe_no>-<coup_no>`` (a table id may hold
    ``-`` itself), or None."""
    parts = round_id.rsplit("-", 2)
    if len(parts) != 3 or not (parts[1].isdigit() and parts[2].isdigit()):
        return None
    return parts[0] if TABLE_ID.fullmatch(parts[0]) else None


def _refusal(code: str, message: str) -> OperatorRefusal:
    code = "not_found" if code == "no_table" else code
    return OperatorRefusal(STATUS.get(code, 409), code, message)


def _answer(reply: ReplyRecord) -> dict[str, Any]:
    if reply.error is not None:
        raise _refusal(str(reply.error.get("code")), str(reply.error.get("message")))
    return dict(reply.result or {})


def install(api: OperatorAPI, ctx: OperatorSide) -> None:
    """Add the table controls to ``api``."""

    async def known(tid: str) -> str:
        if not TABLE_ID.fullmatch(tid) or not await ctx.lobby.has(tid):
            raise OperatorRefusal(404, "not_found", f"there is no table {tid[:40]!r}")
        return tid

    async def void(call: OperatorCall) -> Mapping[str, Any]:
        rid = call.params["round_id"]
        body = call.json()
        try:
            reason = clean_text(body.get("reason"))  # shown to every player (chat's rule)
        except ValueError as exc:
            raise OperatorRefusal(400, "bad_reason", f"the reason: {exc}") from None
        if not 1 <= len(reason) <= VOID_REASON_MAX:
            raise OperatorRefusal(
                400, "bad_reason", f"give a reason of 1-{VOID_REASON_MAX} characters"
            )
        tid = table_of_round(rid)
        if tid is None:
            raise OperatorRefusal(404, "not_found", "a round id is <table>-<shoe>-<coup>")
        await known(tid)
        reply = await ctx.ask_table(tid, "void", {"round_id": rid, "reason": reason})
        return {**_answer(reply), "by": str(call.caller)}

    async def create(call: OperatorCall) -> Mapping[str, Any]:
        body = call.json() if call.request.body else {}
        try:
            summary = await new_table(ctx, body.get("table"), body.get("options"))
        except ChemmyError as err:
            raise _refusal(err.code, err.message) from None
        return {"table": summary}

    def control(kind: str) -> Any:
        async def route(call: OperatorCall) -> Mapping[str, Any]:
            tid = await known(call.params["table"])
            answer = _answer(await ctx.ask_table(tid, kind))
            return {"table": tid, **{k: v for k, v in answer.items() if k != "table"}}

        return route

    api.add("POST", "/operator/v1/rounds/{round_id}/void", void)
    api.add("POST", "/operator/v1/tables", create)
    api.add("POST", "/operator/v1/tables/{table}/close", control("close"))
    api.add("POST", "/operator/v1/tables/{table}/pause", control("pause"))
    api.add("POST", "/operator/v1/tables/{table}/resume", control("resume"))
