"""``hello``: a connection says who it is, with a player token or as a guest.

The identity comes from the authenticator's one entry point
(:meth:`~server.process.auth.Authenticator.identify`); a player with a token is then known
to the store (a new one is funded with the welcome balance), a new guest only once they
sit or deposit; the reply carries the balance, and for a guest a resume token that
brings them back to the same seat, and the token's ``language`` claim (``null`` when
there is none, and for guests) for the client to choose its words in, and the token's
``currency`` (``null``: play money, as for every guest) with its ``decimals``, for the
client to show every amount in, and the reality check's period (minutes) of the
player's play session, which goes on through reconnects (``server.protection.play_session``):
one due is sent, as a ``reality_check``, right after the reply.

With ``--wallet transfer`` the player's money is in the currency their first transfer
fixed (``Store.player_currency``, docs/wallet.md §2), and that currency decides: a
token whose ``currency`` claim (none: play money) is another one is refused
``currency_mismatch`` before anything is written, so no money of one currency is ever
bet as another's at a table.

A player has at most ``max_connections_per_player`` connections that said hello
(``too_many_connections`` beyond; over a cluster, on all the processes together); how
many hellos an address may send is the dispatcher's check (``server.limits.local``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from server.protection.context import PlayClock
from server.protection.play_session import begin, follow, minutes
from server.protocol.errors import Refused, StoreError
from server.vocabulary.options import currency_decimals

if TYPE_CHECKING:
    from server.gateway.context import HelloContext
    from server.gateway.session import Session

__all__ = ["hello"]


async def hello(ctx: HelloContext, session: Session, mid: Any, fields: dict[str, Any]) -> None:
    if session.identity is not None:
        raise Refused("already_authenticated", "this connection has said hello")
    config = ctx.config
    ident = ctx.auth.identify(
        fields.get("token"),
        fields.get("name"),
        guest=bool(fields.get("guest")),
        resume=fields.get("resume"),
    )
    ctx.limits.check_player(ident.player_id)  # too_many_connections, before the store
    if config.wallet == "transfer" and not ident.guest:
        await _same_currency(ctx, ident.player_id, ident.currency)
    if ident.guest and await ctx.store.player_name(ident.player_id) is None:
        # A new guest is kept in memory only, with the play money they would get, until
        # they sit or deposit (the gateway's persist): hellos alone write nothing.
        session.persisted = False
        balance = config.welcome_balance
    else:
        await ctx.store.ensure_player(
            ident.player_id, ident.name, config.welcome_balance, guest=ident.guest
        )
        # seamless: theirs, now
        await ctx.ask_wallet(ident.player_id, ident.currency, ident.wallet_session)
        balance, _available = await ctx.money(ident.player_id)
    # The player's play session goes on, or begins (server.protection.play_session), with the
    # reality check's period the token asks for, else the server's.
    every = (ident.reality_check or config.reality_check) * 60 or None
    clock = PlayClock(every, config.session_gap * 60)
    found = await begin(ctx.store, ident.player_id, session.persisted, every, clock.gap)
    # Counted from here (over a cluster, against every process's), or refused
    # too_many_connections; the handler signs out.
    await ctx.limits.open_player(ident.player_id)
    session.identity, session.play = ident, clock
    restriction = None if session.persisted is False else await _restriction(ctx, ident.player_id)
    extra = {"resume": ctx.auth.resume_token(ident)} if ident.guest else {}
    ctx.ok(
        session,
        mid,
        **extra,
        player=ident.player_id,
        name=ident.name,
        guest=ident.guest,
        roles=sorted(ident.roles),
        balance=balance,
        language=ident.language,
        currency=ident.currency,
        decimals=currency_decimals(ident.currency),
        deposits=config.wallet == "internal",  # the operator's money: their site
        restriction=restriction,
        reality_check=minutes(every if found is None else found["every"]),
        server="chemmy/1",
    )
    # A reality check due now is sent at once, after the reply; the next is timed.
    follow(ctx, session, found)


async def _same_currency(ctx: HelloContext, player: str, token: str | None) -> None:
    """Refuse ``currency_mismatch`` when the player's money is in another currency than
    their token says (transfer mode: the account's currency, fixed by its first
    transfer, decides; a player with none yet has no money to bet)."""
    fixed = await ctx.store.player_currency(player)
    if fixed is not None and fixed != token:
        said = token if token is not None else "no currency (play money)"
        raise Refused(
            "currency_mismatch",
            f"your money here is in {fixed} and your token says {said}: ask the site you "
            "came from for a token in your account's currency",
        )


async def _restriction(ctx: HelloContext, player: str) -> dict[str, Any] | None:
    """The break or self-exclusion in force, for the client to say so at once (``None``
    too when the store cannot say now: every ``sit`` and ``bet`` reads it again)."""
    try:
        return await ctx.store.player_restriction(player)
    except StoreError:
        return None
