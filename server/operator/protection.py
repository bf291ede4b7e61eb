"""The operator's routes of player protection: a player's restriction and limits.

``GET`` and ``POST /operator/v1/players/{player}/restriction`` (a break or an exclusion
set or lifted; chips placed go back, ``server.protection.responsible.return_chips``) and
``.../limits`` (an operator's changes apply at once, up or down; the answer holds the
player's play session going on). The rules are player protection's
(``server.protection.rules``), run by the store atomically; this module reads the
request and answers.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

from server.operator.api import OperatorAPI, OperatorCall, OperatorRefusal
from server.operator.context import OperatorSide
from server.protection import play_session
from server.protection.play_limits import limit_change, view
from server.protection.responsible import PERIODS, return_chips
from server.protection.rules import merge_limits, merge_restriction, play_ended
from server.protocol.errors import Refused

__all__ = ["install"]


def install(api: OperatorAPI, ctx: OperatorSide) -> None:
    """Both routes on ``api``."""
    install_restriction(api, ctx)
    install_limits(api, ctx)


def install_restriction(api: OperatorAPI, ctx: OperatorSide) -> None:
    """``GET`` and ``POST /operator/v1/players/{player}/restriction``."""

    async def read(call: OperatorCall) -> dict[str, Any]:
        player = call.params["player"]
        return {"player": player, "restriction": await ctx.store.player_restriction(player)}

    async def write(call: OperatorCall) -> dict[str, Any]:
        player = call.params["player"]
        kind, until = _operator_change(call.json())
        kept = await ctx.store.set_player_restriction(
            player, kind, until, f"operator:{call.caller}", rule=merge_restriction
        )
        if kept is not None:
            await return_chips(ctx.bus, ctx.lobby, player)
        return {"player": player, "restriction": kept}

    path = "/operator/v1/players/{player}/restriction"
    api.add("GET", path, read)
    api.add("POST", path, write)


def _operator_change(body: Mapping[str, Any]) -> tuple[str, float]:
    """``{"period": P}`` (one of :data:`PERIODS`), ``{"kind": K, "until": T}`` (Unix
    seconds) or ``{"lift": true}``: the (kind, until) to store."""
    if body.get("lift") is True and set(body) == {"lift"}:
        return "break", 0.0
    if set(body) == {"period"} and body["period"] in PERIODS:
        kind, seconds = PERIODS[body["period"]]
        return kind, time.time() + seconds
    until = body.get("until")
    if (
        set(body) == {"kind", "until"}
        and body["kind"] in ("break", "exclusion")
        and isinstance(until, int | float)
        and not isinstance(until, bool)
        and math.isfinite(until)
    ):
        return str(body["kind"]), float(until)
    raise OperatorRefusal(
        400,
        "bad_request",
        f'give {{"period": one of {", ".join(PERIODS)}}}, {{"kind": "break" or "exclusion",'
        ' "until": Unix seconds}, or {"lift": true}',
    )


def install_limits(api: OperatorAPI, ctx: OperatorSide) -> None:
    """``GET`` and ``POST /operator/v1/players/{player}/limits``: the operator's changes
    (``{"changes": {kind: amount or null}}``) apply at once, up or down. Both answer
    with the player's limits and their play session going on (None: none, or it ended:
    no connection of theirs seen for more than ``--session-gap``)."""

    async def answer(player: str) -> dict[str, Any]:
        found = await ctx.store.play_session(player)
        if found is not None and play_ended(found, play_session.now(), ctx.config.session_gap * 60):
            found = None  # the next hello begins a new one
        return {"player": player, **await view(ctx.store, player, found)}

    async def read(call: OperatorCall) -> dict[str, Any]:
        return await answer(call.params["player"])

    async def write(call: OperatorCall) -> dict[str, Any]:
        player = call.params["player"]
        changes = _operator_changes(call.json())
        await ctx.store.set_player_limits(
            player, changes, f"operator:{call.caller}", rule=merge_limits
        )
        return await answer(player)

    path = "/operator/v1/players/{player}/limits"
    api.add("GET", path, read)
    api.add("POST", path, write)


def _operator_changes(body: Mapping[str, Any]) -> dict[str, int | None]:
    changes = body.get("changes")
    if set(body) != {"changes"} or not isinstance(changes, dict) or not changes:
        raise OperatorRefusal(
            400, "bad_request", 'give {"changes": {kind: minor units or minutes, or null}}'
        )
    out: dict[str, int | None] = {}
    for kind, amount in changes.items():
        if amount is not None and (isinstance(amount, bool) or not isinstance(amount, int)):
            raise OperatorRefusal(400, "bad_limit", f"{kind}: an amount is a whole number or null")
        try:
            out.update(limit_change(kind, amount))
        except Refused as refused:
            raise OperatorRefusal(400, refused.code, refused.message) from None
    return out
