"""The balances a table decides a command with, made right before it decides: a guest
who may sit or bet stored with their play money, a joining or sitting player's balance
read afresh (from the operator's wallet too, with a seamless one), and a bet refused for
want of funds tried once more when the balance read afresh has changed (a deposit, or
another table, moved it).

A part of the actor's *decide*: the store is still the truth (the step's commit checks
every movement again). It never decides a rule (the table does, here with the balances
it is given), never writes a step and never moves money.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from server.ledger.accounts import player_account
from server.protocol.records import CommandRecord
from server.table import TableError
from server.vocabulary import commands as c
from server.vocabulary.events import Step

from .kinds import FUNDED, GUEST_FIELD

if TYPE_CHECKING:
    from .actor import TableActor

__all__ = ["decide_funded", "prepare"]

#: Commands that may need a player's latest balance: it is read before they are decided.
_FRESH_BALANCE = (c.Join, c.Sit)


async def prepare(actor: TableActor, cmd: c.Command, record: CommandRecord | None) -> None:
    """What the store must hold or say before ``cmd`` is decided: a guest sitting down
    stored, a joining or sitting player's balance read afresh."""
    guest = None if record is None else record.fields.get(GUEST_FIELD)
    if isinstance(cmd, c.Sit | c.PlaceBet | c.SameBet) and isinstance(guest, dict):
        # A guest is written to the store (with their play money) only once the rules
        # let them sit or bet: a refused command keeps nothing of theirs.
        actor.table.verify(cmd)
        balance = await actor.store.ensure_player(
            cmd.player, str(guest["name"]), int(guest["funds"]), guest=True
        )
        actor.wallet.load([(player_account(cmd.player), balance)])
    seamless = actor.seamless
    if isinstance(cmd, c.Join) and seamless is not None and seamless.money.confirms_holds:
        session = None if record is None else record.fields.get(c.WALLET_SESSION_FIELD)
        await seamless.mirror(cmd.player, session if isinstance(session, dict) else None)
    if isinstance(cmd, _FRESH_BALANCE):
        await actor.refresh([cmd.player])
    if isinstance(cmd, c.Join) and isinstance(guest, dict):
        await _welcome(actor, cmd.player, int(guest["funds"]))


async def _welcome(actor: TableActor, player: str, funds: int) -> None:
    """A guest not yet stored joins: the table decides their bets (and says what they may
    bet: their actions) with the play money their first bet stores them with (GAME_RULES
    §5), as their snapshot shows it. The store is still the truth: the bet's commit is
    refused if they had less."""
    account = player_account(player)
    if actor.wallet.balance(account) == 0 and await actor.store.player_name(player) is None:
        actor.wallet.load([(account, funds)])


async def decide_funded(actor: TableActor, cmd: c.Command, now: float) -> Step:
    """The actor's step for ``cmd``, once more after reading the player's balance afresh
    when a bet was refused for want of funds and the balance has changed."""
    try:
        return actor._decide(cmd, now)
    except TableError as err:
        # The balance this table knew may be out of date (a deposit, another table):
        # read it, and try once more if it changed.
        if not (
            err.code == "insufficient_funds"
            and isinstance(cmd, FUNDED)
            and await actor.refresh([cmd.player])
        ):
            raise
        return actor._decide(cmd, now)
