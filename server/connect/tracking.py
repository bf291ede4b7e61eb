"""A read-only script's answers kept in process while Redis says its keys did not change
(issue 36: the per-bet reads, a script of four or five reads before every bet).

Redis's own client-side caching (``CLIENT TRACKING``, RESP2 with a redirect): a
connection of its own (the *reader*) runs the script with its keys declared, so Redis
remembers that this client read them; a second one (the *listener*), subscribed to
``__redis__:invalidate``, hears every later change of any of them, whoever made it (a
process of any version, an operator's tool, a script), and the answers that read a
changed key are dropped (a moment after the write: as soon as the listener hears it).
An answer is kept for :data:`KEEP` seconds at most, and used only while the listener
answered lately (it is pinged while answers are kept, :data:`BEAT`): a listener lost,
silent or to a primary the sentinels no longer name drops them all, and every read goes
to Redis (the script on the client, as before) until both connections are made again.
An answer read while a change was heard is not kept.

What this module must never do: answer from a key Redis said changed, or keep an answer
when it cannot hear the changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Iterable, Sequence
from typing import Any, Final, TypeVar

import redis.asyncio as aioredis
from redis.exceptions import NoScriptError, RedisError

__all__ = ["BEAT", "KEEP", "Tracked"]

log = logging.getLogger("chemmy.store")

#: Seconds an answer is kept at most (a player who bets again within it is not read).
KEEP: Final = 60.0
#: The listener is pinged once silent this long while answers are kept, taken for lost
#: when a ping is not answered within two, and answers are used only while it said
#: something within three (seconds).
BEAT: Final = 0.5
#: How long the listener waits for a message while nothing is kept, and how long after
#: losing its connections it makes them again, at first and at most (seconds).
IDLE_WAIT, RETRY, RETRY_MAX = 5.0, 1.0, 30.0
_CHANNEL: Final = b"__redis__:invalidate"
T = TypeVar("T")


class Tracked:
    """The answers of ``script`` (a read-only Lua script, its keys declared) in the Redis
    of the client it is bound to (:meth:`bind`), kept per name (see the module
    docstring). ``loose(answer, keys)`` names the declared keys an answer does not depend
    on (a player's flows when they have no limits): a change of those does not drop it."""

    def __init__(self, script: str, loose: Any = None) -> None:
        self._text = script
        self._loose = loose
        self._pool: Any = None
        self._script: Any = None
        #: name -> (when read, its answer); key -> the names whose answers read it.
        self._kept: dict[str, tuple[float, Any]] = {}
        self._readers: dict[bytes, set[str]] = {}
        self._changes = 0  # changes heard (and connections lost): a read meanwhile is not kept
        self._reader: Any = None
        self._listener: Any = None
        self._heard = -1e9  # when the listener last said anything (monotonic)
        self._reading = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self.hits = self.misses = 0

    def bind(self, client: aioredis.Redis) -> None:
        """Read through ``client``'s Redis (a store opened)."""
        self._pool = client.connection_pool
        self._script = client.register_script(self._text)

    async def read(self, name: str, keys: Sequence[str], args: Sequence[str]) -> Any:
        """The script's answer for ``keys`` and ``args``, kept as ``name``'s."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())
        if self._reader is not None and not self._primary():
            self._lose()  # (a switch of primary: the pair is made again, to the new one)
        now = time.monotonic()
        found = self._kept.get(name)
        trusted = self._reader is not None and now - self._heard <= 3 * BEAT
        if found is not None and trusted and now - found[0] <= KEEP:
            self.hits += 1
            return found[1]
        self.misses += 1
        if self._reader is None or self._reading.locked():
            return await self._script(keys=keys, args=args)  # (not kept)
        changes = self._changes
        try:
            async with self._reading:
                answer = await self._tracked_read(keys, args)
        except (RedisError, OSError, TimeoutError):  # (the pair is made again meanwhile)
            return await self._script(keys=keys, args=args)
        if self._changes == changes and self._reader is not None:
            idle = not self._kept
            self._keep(name, keys, answer, now)
            if idle:  # (the listener waits long while nothing is kept: it hears a pong now)
                with contextlib.suppress(RedisError, OSError):
                    await self._listener.send_command("PING")
        return answer

    async def _tracked_read(self, keys: Sequence[str], args: Sequence[str]) -> Any:
        reader = self._reader
        try:
            await reader.send_command("EVALSHA", self._script.sha, len(keys), *keys, *args)
            try:
                return await reader.read_response()
            except NoScriptError:
                await reader.send_command("EVAL", self._script.script, len(keys), *keys, *args)
                return await reader.read_response()
        except BaseException:
            self._lose()  # (a reply may be left unread on it: not used again)
            raise

    async def wrote(self, names: Iterable[str], write: Awaitable[T], key: str = "") -> T:
        """``write``, of keys the answers of ``names`` read (``key``: only the key
        ``key + name`` of each): once its reply came (or it failed), each
        :meth:`forget`-ten."""
        try:
            return await write
        finally:
            for name in names:
                self.forget(name, key and key + name)

    def forget(self, name: str, key: str = "") -> None:
        """This process wrote a key ``name``'s answer reads (its reply came, or it
        failed): the answer is read from Redis next time, and a read on its way is not
        kept. A process sees its own writes at once, not when the listener hears them.
        With ``key``, the one key written: an answer that does not depend on it (a loose
        key: a player's flows when they have no limits) is kept (issue 36: each bet's
        stake moved them, and the next bet read again)."""
        self._changes += 1
        if not key or name in self._readers.get(key.encode(), ()):
            self._kept.pop(name, None)

    def _keep(self, name: str, keys: Sequence[str], answer: Any, now: float) -> None:
        loose = set(self._loose(answer, keys)) if self._loose is not None else set()
        self._kept[name] = (now, answer)
        for key in keys:
            if key not in loose:
                self._readers.setdefault(key.encode(), set()).add(name)

    def _changed(self, keys: list[bytes] | None) -> None:
        """Redis says ``keys`` changed (None: every key, a ``FLUSHDB``)."""
        self._changes += 1
        if keys is None:
            self._kept.clear()
            self._readers.clear()
            return
        for key in keys:
            for name in self._readers.pop(key, ()):
                self._kept.pop(name, None)

    def _primary(self) -> bool:
        """Whether both connections are to the primary the sentinels named last (always,
        for one Redis)."""
        primary = getattr(self._pool, "master_address", None)
        return primary is None or all(
            c is not None and (c.host, c.port) == primary for c in (self._reader, self._listener)
        )

    def _lose(self) -> None:
        """Nothing can be heard any more: nothing is kept, nothing read on the reader."""
        self._changed(None)
        reader, listener, self._reader, self._listener = self._reader, self._listener, None, None
        for connection in (reader, listener):
            if connection is not None:
                connection._close()  # (at once: no await; a reply half read is dropped)

    def _connection(self) -> Any:
        """A RESP2 connection made like the client's (address or the sentinels' primary,
        credentials, database, TLS, timeouts)."""
        kwargs = self._pool.connection_kwargs
        kwargs = {k: v for k, v in kwargs.items() if not k.startswith(("maint_", "orig_"))}
        # No health check: one made by a PING sent from a bet's task would read the
        # listener while its own task waits on it (a RuntimeError, not a RedisError).
        return self._pool.connection_class(**{**kwargs, "protocol": 2, "health_check_interval": 0})

    async def _open(self) -> None:
        listener, reader = self._connection(), self._connection()
        try:
            await listener.connect()
            await listener.send_command("CLIENT", "ID")
            me = await listener.read_response()
            await listener.send_command("SUBSCRIBE", _CHANNEL)
            await listener.read_response()
            await reader.connect()
            await reader.send_command("CLIENT", "TRACKING", "on", "REDIRECT", me)
            await reader.read_response()
        except BaseException:
            for connection in (listener, reader):
                connection._close()
            raise
        self._changed(None)
        self._listener, self._reader, self._heard = listener, reader, time.monotonic()

    async def _run(self) -> None:
        """Make the pair, hear the changes, and make it again once lost (a Redis that
        refuses it, an ACL without ``CLIENT TRACKING``, is asked less and less often)."""
        wait = RETRY
        while True:
            try:
                await self._open()
                wait = RETRY
                await self._listen()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # (lost, refused, or closed here: _lose)
                log.debug("tracked reads: %r; reading from Redis until heard again", exc)
            finally:
                self._lose()
            await asyncio.sleep(wait)
            wait = min(RETRY_MAX, wait * 2)

    async def _listen(self) -> None:
        """Hear the changes; ping the listener once silent for :data:`BEAT` while answers
        are kept, and take it for lost when a ping is not answered within two."""
        listener, pinged = self._listener, -1e9
        while listener is self._listener:
            message = await listener.read_response(timeout=BEAT if self._kept else IDLE_WAIT)
            now = time.monotonic()
            if message is not None:
                self._heard = now
                if message[0] == b"message" and message[1] == _CHANNEL:
                    self._changed(message[2])
            waiting = self._heard < pinged
            if waiting and now - pinged > 2 * BEAT:
                raise TimeoutError("the listener did not answer its ping")
            if self._kept and not waiting and now - self._heard >= BEAT:
                await listener.send_command("PING")
                pinged = now
            self._forget(now)

    def _forget(self, now: float) -> None:
        """Drop the answers kept longer than :data:`KEEP`."""
        old = [name for name, (when, _) in self._kept.items() if now - when > KEEP]
        for name in old:
            del self._kept[name]
        if not self._kept:
            self._readers.clear()

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        self._lose()
