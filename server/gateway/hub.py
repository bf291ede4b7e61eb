"""Fan-out: table events to the connections watching each table.

Each event is encoded once per distinct view and format: the public view once for
JSON and once for msgpack (only for formats someone uses), and a separate frame only
for the few players the event has a private part for (a turner's squeezed cards, a
player's own balance). Frames go out without waiting, as ``websockets.broadcast``
writes them, each frame made once (:func:`write_all`), and a published step's frames
written to each connection together (``_Out``): a slow client never slows a table. The server's watchdog closes a client whose write buffer keeps growing (see
``server.gateway.server``), and that client resumes from its last ``seq``.

A step published to a table's few watchers is written to them at once; to thousands
(:data:`AT_ONCE`), from the event loop's next turn, a slice at a time (:class:`_Tail`,
:data:`_TAIL`), so the sender's reply, written right after the publish, does not wait
for two thousand writes to others (issue 37 §3). Nothing overtakes on a connection:
anything written to one (a reply, by :func:`write_all` or :func:`send_now`) first takes
what still waits for it there, in the same write; and a step published while an earlier
one still waits joins it (one write for both). A pass over a large table's watchers
begins no sooner than :data:`TAIL_GAP` after the last one began: the steps published
meanwhile go in one write.

A bounded log of recent events per table lets a reconnecting client catch up. A
transient event (a squeezed card's bend, a chat line) goes out as a message of its own kind
(:func:`transient`) and is neither logged nor replayed.
"""

from __future__ import annotations

import asyncio
import struct
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from websockets.asyncio.server import ServerConnection, broadcast
from websockets.protocol import OPEN

from server.protocol.codec import JSON, payload
from server.table.views import view_event
from server.vocabulary.events import Event

__all__ = ["Hub", "Subscriber"]

#: Each table's recent log (a resume within a few minutes is served from it; an older
#: one from the table's stored log, which keeps ``EVENT_RETENTION`` events). A full
#: table's event holds about 2.8 KiB of Python objects (its data, its private parts) and
#: a coup makes about 43: 4,096 of them grew a process by some 11 MiB a table in its
#: first 45 minutes of play (1.4 GiB for 120 tables), where 256 (about 6 coups) hold
#: 0.7 MiB.
RETAINED_EVENTS = 256


@dataclass(eq=False, slots=True)
class Subscriber:
    conn: ServerConnection
    player: str | None
    fmt: str
    #: No extension (compression) on its connection: its frames are the same bytes as
    #: everyone's, made once for all. Decided once, when it subscribes (:meth:`Hub.subscribe`).
    plain: bool = True


@dataclass(slots=True)
class _Room:
    subs: dict[ServerConnection, Subscriber] = field(default_factory=dict)
    #: The plain connections (:attr:`Subscriber.plain`) by format; the others by format
    #: in ``deflated`` (their frames go through ``broadcast``, at once).
    by_fmt: dict[str, set[ServerConnection]] = field(default_factory=dict)
    deflated: dict[str, set[ServerConnection]] = field(default_factory=dict)
    by_player: dict[str, set[ServerConnection]] = field(default_factory=dict)
    log: deque[Event] = field(default_factory=lambda: deque(maxlen=RETAINED_EVENTS))


def envelope(table: str, view: dict[str, Any]) -> dict[str, Any]:
    return {"type": "event", "table": table, **view}


def transient(table: str, event: Event) -> dict[str, Any]:
    """A transient event as sent: ``{"type": <kind>, "table", "seq", **data}``, where
    ``seq`` is the table's event it follows (a client drops one that does not follow
    the last event it has). It has no private part."""
    return {"type": event.kind, "table": table, "seq": event.seq, **event.data}


def send_now(conn: ServerConnection, frame: str | bytes) -> None:
    """Write one frame without waiting, after what published steps still have waiting
    for ``conn`` (:data:`_TAIL`), in the same write: ordering kept, and a command's
    reply goes out with its step's events, ahead of the step's other watchers."""
    if isinstance(frame, str):
        write_all((conn,), frame.encode(), text=True)
    else:
        write_all((conn,), frame, text=False)


def send_message(conn: ServerConnection, message: dict[str, Any], fmt: str) -> None:
    """:func:`send_now` of ``message`` in ``fmt``, its payload made as bytes at once (no
    ``str`` between): a reply, or a resumed event."""
    data, text = payload(message, fmt)
    write_all((conn,), data, text=text)


def write_all(conns: Iterable[ServerConnection], payload: bytes, *, text: bool) -> None:
    """``websockets.broadcast`` of one message, with its frame made once for all.

    ``broadcast`` builds and serializes the same frame again for each connection (a
    ``Frame``, its header, the protocol's list of writes). A server's frames are never
    masked, so without an extension (compression) the bytes are the same for every
    connection: they are made once here and written to each connection's transport,
    after whatever its protocol still holds (``send_data``), so the order on the wire
    is kept. A connection with an extension goes through ``broadcast``. As there, a
    connection that is not open, or in the middle of a fragmented message (this
    server sends none), is skipped, and a write that fails is ignored (the connection
    is closing: its handler cleans up). What published steps still have waiting for a
    connection (:data:`_TAIL`) is written first, in the same write."""
    frame: bytes | None = None
    for conn in conns:
        if conn.protocol.extensions:
            broadcast((conn,), payload, text=text)
            continue
        if frame is None:
            frame = _frame(payload, text)
        waiting = _TAIL.take(conn)
        _write(conn, (frame,) if waiting is None else (*waiting, frame))


def _frame(payload: bytes, text: bool) -> bytes:
    """``payload`` as an unmasked frame without extensions, as a server writes it: the
    bytes ``Frame(...).serialize(mask=False, extensions=[])`` makes (RFC 6455 §5.2: FIN
    and the opcode, then the length in 7 bits, or 16 or 64 after 126 or 127), its header
    made here (``serialize`` took about 2 µs a frame, and the hub makes one for each
    private part of an event: a thousand bettors' ``settled``, issue 37)."""
    head = 0x81 if text else 0x82
    size = len(payload)
    if size < 126:
        return bytes((head, size)) + payload
    if size < 1 << 16:
        return _HEAD16.pack(head, 126, size) + payload
    return _HEAD64.pack(head, 127, size) + payload


_HEAD16 = struct.Struct("!BBH")
_HEAD64 = struct.Struct("!BBQ")


def _write(conn: ServerConnection, frames: Sequence[bytes]) -> None:
    """``frames`` to ``conn`` in one write, after what its protocol still holds; one not
    open (or mid-fragment) skipped, a failed write ignored (as ``broadcast``)."""
    protocol = conn.protocol
    if protocol.state is not OPEN or conn.send_in_progress is not None:
        return
    try:
        if protocol.writes:  # (a pong, a close: rare; ``send_data`` writes them)
            conn.send_data()
        conn.transport.write(frames[0] if len(frames) == 1 else b"".join(frames))
    except Exception:
        conn.logger.debug("a write failed", exc_info=True)


#: A publish whose frames are for at most this many connections (with those still
#: waiting) is written at once: a table's few watchers get a step's events before its
#: reply, as ever. More (a table of two thousand) are written from the event loop's next
#: turn, a slice at a time: the senders' replies, written right after the publish, go
#: first (each with its own step's frames, :meth:`_Tail.take`).
AT_ONCE = 64

#: How long each turn of the event loop writes the tail (seconds), sixteen connections
#: at least: commands are read, replies and the next step go out between two slices.
TAIL_SLICE = 0.004

#: The least time from one pass of the tail over its watchers to the next (seconds): a
#: step published sooner after the last pass began waits for the rest of it, and the
#: steps published meanwhile join it, so a watcher of a large table gets at most about
#: 40 writes a second however fast the table's steps come (each write is a system call;
#: at two thousand watchers they were 41% of the process, issue 37 §3). A pass that
#: is behind (steps come faster than it writes) goes on at once: it coalesces anyway.
TAIL_GAP = 0.025


#: One write to a watcher in this many is timed from its step's publish (a histogram's
#: observation costs about a tenth of a write).
WAIT_SAMPLE = 8
WAIT_BORN_MOST = 4096


class _Tail:
    """Published frames not yet written, per connection, oldest first: a few
    connections' at once (:data:`AT_ONCE`), else a slice each turn of the event loop
    (:data:`TAIL_SLICE`), and taken ahead of the rest by any write to their connection
    (:meth:`take`). A publish that finds a connection's frames still waiting adds its own
    to them: when the writes fall behind, each connection gets several steps in one
    write. A connection's frames are a tuple, one for all the connections that got
    the same frames (a step for two thousand watchers adds to them at C speed, not
    one connection at a time, when none of them has frames waiting)."""

    __slots__ = ("began", "born", "frames", "loop", "passing", "scheduled", "writes")

    def __init__(self) -> None:
        self.frames: OrderedDict[ServerConnection, tuple[bytes, ...]] = OrderedDict()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.scheduled = False
        self.passing = False  # (a pass over the waiting is under way)
        self.began = -TAIL_GAP  # (when the last pass began: ``time.perf_counter``)
        #: When each waiting group's bytes were published, and who is told how long they
        #: waited (:meth:`_waited`), by the bytes' ``id`` (set again by each publish, so
        #: an ``id`` reused by a later frame is never read as the old one's).
        self.born: dict[int, tuple[float, Callable[[float], None]]] = {}
        self.writes = 0

    def add(
        self,
        groups: Sequence[tuple[Collection[ServerConnection], bytes]],
        observe: Callable[[float], None] | None = None,
    ) -> None:
        """A published step's bytes, per group of connections they are for (each
        connection in one group): behind what already waits, written from now on; with
        ``observe``, told of a sample of their writes how long each waited."""
        waiting = self.frames
        if not waiting and sum(len(conns) for conns, _ in groups) <= AT_ONCE:
            self._now(groups, observe)  # (the usual case: a table's few watchers)
            return
        born = self.born if observe is not None else None
        now = time.perf_counter()
        for conns, data in groups:
            if born is not None:
                born[id(data)] = (now, observe)  # type: ignore[assignment]
            one = (data,)
            if not waiting or waiting.keys().isdisjoint(conns):
                waiting.update(dict.fromkeys(conns, one))
                continue
            # Behind what waits: those with the same frames waiting get the same tuple
            # (each earlier tuple kept in ``longer`` while its id is a key).
            longer: dict[int, tuple[tuple[bytes, ...], tuple[bytes, ...]]] = {}
            get = waiting.get
            for conn in conns:
                before = get(conn)
                if before is None:
                    waiting[conn] = one
                else:
                    pair = longer.get(id(before))
                    if pair is None:
                        pair = longer[id(before)] = (before, before + one)
                    waiting[conn] = pair[1]
        if len(waiting) <= AT_ONCE:
            self.flush()
        elif waiting:
            self._schedule()

    def _now(
        self,
        groups: Sequence[tuple[Collection[ServerConnection], bytes]],
        observe: Callable[[float], None] | None,
    ) -> None:
        """:meth:`add`'s bytes when nothing waits and they are for at most :data:`AT_ONCE`:
        written now, in the order and with the samples :meth:`flush` would have (without
        passing through :attr:`frames`: a call and two dict operations less a watcher)."""
        now = time.perf_counter()
        writes = self.writes
        for conns, data in groups:
            one = (data,)
            for conn in conns:
                _write(conn, one)
                writes += 1
                if observe is not None and not writes % WAIT_SAMPLE:
                    observe(time.perf_counter() - now)
        self.writes = writes
        if self.born:
            self.born.clear()

    def take(self, conn: ServerConnection) -> tuple[bytes, ...] | None:
        """What waits for ``conn`` (it is written now, by the caller, ahead of the rest)."""
        return self.frames.pop(conn, None) if self.frames else None

    def _schedule(self) -> None:
        loop = asyncio.get_running_loop()
        if not self.scheduled or self.loop is not loop:  # (a test's loop may have ended)
            self.loop, self.scheduled = loop, True
            wait = 0.0 if self.passing else self.began + TAIL_GAP - time.perf_counter()
            if wait > 0:  # (a pass began less than TAIL_GAP ago: this one waits for it)
                loop.call_later(wait, self._turn)
            else:
                loop.call_soon(self._turn)

    def _turn(self) -> None:
        """The oldest waiting, for a slice's time (sixteen at least); the rest at the
        loop's next turn. A pass begins at the first turn that finds none under way, and
        ends when nothing waits (:data:`TAIL_GAP`)."""
        self.scheduled = False
        waiting = self.frames
        now = time.perf_counter()
        if not self.passing:
            self.passing, self.began = True, now
        stop = now + TAIL_SLICE
        least = 16
        while waiting and (least > 0 or time.perf_counter() < stop):
            conn, frames = waiting.popitem(last=False)
            _write(conn, frames)
            self._waited(frames)
            least -= 1
        if waiting:
            self._schedule()
        else:
            self.passing = False
            self.born.clear()

    def flush(self) -> None:
        """Everything waiting, written now."""
        while self.frames:
            conn, frames = self.frames.popitem(last=False)
            _write(conn, frames)
            self._waited(frames)
        self.born.clear()

    def _waited(self, frames: Sequence[bytes]) -> None:
        """One write in :data:`WAIT_SAMPLE`: how long its oldest frame waited since its
        publish (``chemmy_fanout_wait_seconds``). A tail that never empties forgets the
        oldest times beyond :data:`WAIT_BORN_MOST` (a sample lost, never a wrong one)."""
        self.writes += 1
        if self.writes % WAIT_SAMPLE or not self.born:
            return
        found = self.born.get(id(frames[0]))
        if found is not None:
            found[1](time.perf_counter() - found[0])
        if len(self.born) > WAIT_BORN_MOST:
            self.born.clear()


#: The frames published steps still have waiting (one writer a process: a connection's
#: frames are written in the order they were published and sent).
_TAIL = _Tail()


class _Out:
    """The frames one :meth:`Hub.publish` sends, gathered per connection and written to
    each in one write (a step's events, a burst's ``bets`` and chat lines: one system
    call a watcher, not one a frame; two thousand watchers made every frame cost tens of
    ms). Each frame is made once for all (as :func:`write_all`), and so are the bytes of
    a whole step: every plain connection of a format with no private part in the step
    gets the same bytes, joined once (:meth:`groups`), so a watcher costs the step no
    work of its own but its write; those with private parts are grouped by what they
    get (alike ``actions``: one join). A connection with an extension (compression) has
    its frames sent at once, in order, by ``broadcast`` (:meth:`Hub._broadcast`)."""

    __slots__ = ("own", "public")

    def __init__(self) -> None:
        #: Per event of the step, its public frame per format (none for a format whose
        #: connections all have a private part of it).
        self.public: list[dict[str, bytes]] = []
        #: The connections with a private part in the step: their own frames, as (event
        #: index, format, frame), one such tuple for all who got the same frame.
        self.own: dict[ServerConnection, list[tuple[int, str, bytes]]] = {}

    def private(self, conns: Iterable[ServerConnection], fmt: str, frame: bytes) -> None:
        """``conns``' own frame for the next event (instead of its public frame)."""
        mine = (len(self.public), fmt, frame)  # (one for all of them: grouped by identity)
        own = self.own
        for conn in conns:
            theirs = own.get(conn)
            if theirs is None:
                own[conn] = [mine]
            else:
                theirs.append(mine)

    def event(self, frames: dict[str, bytes]) -> None:
        """The next event's public frame per format (after its private ones)."""
        self.public.append(frames)

    def groups(self, room: _Room) -> list[tuple[Collection[ServerConnection], bytes]]:
        """Who gets which bytes: per format, its plain connections without a private
        part (one ``b"".join`` for all of them), then those with one, grouped by what
        they get."""
        public, own = self.public, self.own
        out: list[tuple[Collection[ServerConnection], bytes]] = []
        for fmt, conns in room.by_fmt.items():
            rest = conns - own.keys() if own else conns
            if not rest:
                continue
            frames = [f for f in (e.get(fmt) for e in public) if f is not None]
            if frames:
                out.append((rest, frames[0] if len(frames) == 1 else b"".join(frames)))
        alike: dict[tuple[int, ...], tuple[list[tuple[int, str, bytes]], list[ServerConnection]]]
        alike = {}
        for conn, mine in own.items():
            key = tuple(map(id, mine))  # (the same tuples: the same frames, in one format)
            group = alike.get(key)
            if group is None:
                alike[key] = (mine, [conn])
            else:
                group[1].append(conn)
        for mine, conns_alike in alike.values():
            fmt = mine[0][1]
            theirs = {index: frame for index, _fmt, frame in mine}
            frames = []
            for index, frames_of in enumerate(public):
                frame = theirs.get(index)
                if frame is None:
                    frame = frames_of.get(fmt)
                if frame is not None:
                    frames.append(frame)
            out.append((conns_alike, b"".join(frames)))
        return out


class _Public:
    """One event's public view in JSON, made once, with which a viewer's JSON frame is
    joined from their private part's JSON (:meth:`joined`) instead of encoded whole:
    a settlement gives each of a thousand bettors a ``settled`` of their own, and the
    next event each their ``actions`` (issue 37)."""

    __slots__ = ("event", "head", "table", "whole")

    def __init__(self, table: str, event: Event) -> None:
        self.table, self.event = table, event
        self.head: bytes | None = None  # the public frame but its last two braces
        self.whole: bytes | None = None  # the public frame (JSON), once made

    def joined(self, fmt: str, part: dict[str, Any], part_json: bytes) -> tuple[bytes, bool] | None:
        """The JSON frame of the viewer whose private part is ``part`` (``part_json``:
        its JSON, as ``orjson`` makes it with string keys), the bytes ``encode`` makes of
        their ``view_event``: the envelope's ``data`` is its last member, and a part
        none of whose keys is public adds its members after the public ones (a dict's
        merge keeps that order). None when it cannot be joined so (msgpack, an empty
        part, a key of the part that is public too): the caller encodes it whole."""
        data = self.event.data
        if fmt != JSON or not part or not part.keys().isdisjoint(data):
            return None
        if self.head is None:
            public = envelope(self.table, view_event(self.event, None))
            whole = self.whole = payload(public, JSON)[0]
            assert whole.endswith(b"}}"), whole[-8:]  # (the data object, the envelope)
            self.head = whole[:-2] + (b"," if data else b"")
        return self.head + part_json[1:] + b"}", True


class Hub:
    """This process's fan-out: per table, the connections watching it (by format and by
    player) and a log of its recent events. :meth:`publish` is what the bus hands a
    step's events to; :meth:`subscribe` adds a connection (catching it up from the log
    past the ``seq`` its snapshot or resume reached); :meth:`since` serves a resume.
    It never waits on a client and never decides what a viewer may see (``view_event``
    does)."""

    def __init__(
        self,
        observe: Callable[[float], None] | None = None,
        observe_wait: Callable[[float], None] | None = None,
    ) -> None:
        self._rooms: dict[str, _Room] = {}
        self._observe = observe  # fan-out latency (seconds per event), for /metrics
        #: A sample of the writes: a step's publish to its bytes handed to a watcher's
        #: connection (seconds), for /metrics.
        self._observe_wait = observe_wait

    def room(self, table: str) -> _Room:
        room = self._rooms.get(table)
        if room is None:
            room = self._rooms[table] = _Room()
        return room

    # -- subscriptions ---------------------------------------------------------------
    def subscribe(self, table: str, sub: Subscriber, after: int | None = None) -> None:
        """Start sending ``table``'s events to ``sub``. With ``after`` (the seq its
        snapshot or resume reached), the events after it that this hub already has are
        sent to it first, so it misses none that arrived meanwhile."""
        room = self.room(table)
        if after is not None:
            for event in room.log:
                if event.seq > after:
                    send_message(sub.conn, envelope(table, view_event(event, sub.player)), sub.fmt)
        sub.plain = not sub.conn.protocol.extensions  # (negotiated at the handshake)
        room.subs[sub.conn] = sub
        (room.by_fmt if sub.plain else room.deflated).setdefault(sub.fmt, set()).add(sub.conn)
        if sub.player is not None:
            room.by_player.setdefault(sub.player, set()).add(sub.conn)

    def unsubscribe(self, table: str, conn: ServerConnection) -> Subscriber | None:
        room = self._rooms.get(table)
        if room is None:
            return None
        sub = room.subs.pop(conn, None)
        if sub is None:
            return None
        (room.by_fmt if sub.plain else room.deflated).get(sub.fmt, set()).discard(conn)
        if sub.player is not None:
            conns = room.by_player.get(sub.player, set())
            conns.discard(conn)
            if not conns:
                room.by_player.pop(sub.player, None)
        return sub

    def watching(self, table: str, player: str) -> int:
        room = self._rooms.get(table)
        return len(room.by_player.get(player, ())) if room else 0

    def watchers(self) -> dict[str, int]:
        """How many of this process's connections watch each table (none: left out)."""
        return {table: len(room.subs) for table, room in self._rooms.items() if room.subs}

    def connections(self, table: str) -> Iterable[ServerConnection]:
        room = self._rooms.get(table)
        return list(room.subs) if room else []

    def drop_table(self, table: str) -> None:
        self._rooms.pop(table, None)

    @staticmethod
    def flush() -> None:
        """Every published frame still waiting, written now (before the server closes
        its connections: their last events go before the close)."""
        _TAIL.flush()

    # -- events ----------------------------------------------------------------------
    def publish(self, table: str, events: Sequence[Event]) -> None:
        room = self.room(table)
        stored = [e for e in events if not e.transient]  # (a bend is never replayed)
        if room.log and stored and stored[0].seq != room.log[-1].seq + 1:
            # Not the next one: this process did not hear the table for a while (nobody
            # here watched it). The log serves resumes only while it has no gap.
            room.log.clear()
        room.log.extend(stored)
        if not room.subs:
            return
        t0 = time.perf_counter()
        out = _Out()
        for event in events:
            if event.transient:  # its own message, not an event (docs/protocol.md)
                self._broadcast(room, out, transient(table, event))
                continue
            skip: set[ServerConnection] = set()
            made = self._private(room, out, table, event, skip) if event.private else None
            if len(skip) < len(room.subs):  # (else nobody else watches: nothing to encode)
                message = envelope(table, view_event(event, None))
                self._broadcast(room, out, message, skip, None if made is None else made.whole)
            else:
                out.event({})
        # (written in slices: the sender's reply need not wait for them all)
        _TAIL.add(out.groups(room), self._observe_wait)
        if self._observe is not None and events:
            self._observe((time.perf_counter() - t0) / len(events))

    def _private(
        self, room: _Room, out: _Out, table: str, event: Event, skip: set[ServerConnection]
    ) -> _Public:
        """``event`` to the players it has a private part for, each frame encoded once
        for all whose part is the same (a phase change gives two thousand players their
        ``actions``, most of them alike: a few frames, not one a player); its public view
        (whose JSON frame, if made, the others' is)."""
        assert event.private is not None
        groups: dict[tuple[str, bytes], tuple[tuple[bytes, bool], list[ServerConnection]]] = {}
        subs = room.subs
        public = _Public(table, event)
        # A part given to many players is one object when the table stepped in this
        # process (the table's ``actions`` of players whose actions are made from the
        # same: server/table/actions.py): its JSON is made once (the event holds every
        # part while this runs, so no id is reused). Over the bus each is its own object.
        made: dict[int, bytes | None] = {}
        for player, part in event.private.items():
            theirs = room.by_player.get(player)
            if not theirs:
                continue
            alike: bytes | None
            if id(part) in made:
                alike = made[id(part)]
            else:
                try:  # the part as JSON says which parts are alike (equal, in the same
                    # order; string keys only, so that alike in JSON is alike in msgpack too)
                    alike = orjson.dumps(part)
                except TypeError:
                    alike = None  # (no such JSON for it: its own frame)
                made[id(part)] = alike
            for conn in theirs:
                skip.add(conn)
                fmt = subs[conn].fmt
                group = groups.get((fmt, alike)) if alike is not None else None
                if group is None:
                    frame = None if alike is None else public.joined(fmt, part, alike)
                    if frame is None:
                        frame = payload(envelope(table, view_event(event, player)), fmt)
                    if alike is None:
                        self._to(room, [conn], out, frame)
                        continue
                    group = groups[fmt, alike] = (frame, [])
                group[1].append(conn)
        for frame, alike_conns in groups.values():
            self._to(room, alike_conns, out, frame)
        return public

    @staticmethod
    def _to(
        room: _Room, conns: list[ServerConnection], out: _Out, frame: tuple[bytes, bool]
    ) -> None:
        """A private frame (its payload, whether text) to ``conns`` (of one format): the
        plain ones' in ``out``, the others' at once (``broadcast``)."""
        payload, text = frame
        fmt = room.subs[conns[0]].fmt
        if any(room.deflated.values()):
            deflated = [c for c in conns if not room.subs[c].plain]
            for conn in deflated:
                broadcast((conn,), payload, text=text)
            if deflated:
                conns = [c for c in conns if room.subs[c].plain]
        if conns:
            out.private(conns, fmt, _frame(payload, text))

    def _broadcast(
        self,
        room: _Room,
        out: _Out,
        message: dict[str, Any],
        skip: set[ServerConnection] | None = None,
        made: bytes | None = None,
    ) -> None:
        """``message`` to everyone at the table but ``skip`` (who have their own frame of
        it): encoded once a format (JSON's ``made`` already, when given: the same bytes);
        the plain connections' frame in ``out`` for all of them (no set of its own an
        event: :meth:`_Out.groups` leaves them out)."""
        payloads: dict[str, tuple[bytes, bool]] = {}  # (one encode a format, for both)
        frames: dict[str, bytes] = {}
        for fmt, conns in room.by_fmt.items():
            if conns:
                payloads[fmt] = (made, True) if made and fmt == JSON else payload(message, fmt)
                frames[fmt] = _frame(*payloads[fmt])
        out.event(frames)
        for fmt, conns in room.deflated.items():
            if conns:
                data, text = payloads.get(fmt) or payload(message, fmt)
                broadcast(conns - skip if skip else conns, data, text=text)

    def since(self, table: str, seq: int) -> list[Event] | None:
        """The events after ``seq``, or None when some of them are no longer kept."""
        room = self._rooms.get(table)
        if room is None or not room.log:
            return None
        first = room.log[0].seq
        if seq + 1 < first:
            return None
        return [e for e in room.log if e.seq > seq]
