"""The two wire formats of the Chemmy protocol: JSON text frames and msgpack binary frames.

A connection picks its format by WebSocket subprotocol (ARCHITECTURE.md, "Shell"):

- ``chemmy.v1.json`` (:data:`JSON`): every message is one *text* frame holding one JSON
  object (RFC 8259; ``NaN`` and ``Infinity`` are not JSON and are refused);
- ``chemmy.v1.msgpack`` (:data:`MSGPACK`): every message is one *binary* frame holding
  one msgpack map (str and bin types kept apart, no extension types).

A message is a map with a non-empty string ``"type"``. :func:`decode` accepts exactly
that or raises :class:`~server.protocol.errors.ProtocolError`, nothing else (h11's
fuzzer rule), with one of two codes:

- ``"bad_frame"``: the frame cannot be decoded in the connection's format (bad bytes,
  a text frame on a msgpack connection or a binary frame on a JSON one, too big, too
  deep, an extension type, a JSON ``NaN``);
- ``"bad_message"``: it decodes, but not to a map with a string ``"type"``, or holds
  what the other format could not carry (a non-string map key, a non-finite number,
  an integer wider than 64 bits, a lone surrogate), or nests too deep.

A JSON frame is read by ``orjson`` (every client frame passes here), and read again by
the standard library's decoder whenever orjson refuses it, it holds a float, or the
checks refuse it (:func:`_decode_json_fast`): what is accepted, and every refusal's code
and message, are the standard library's reading's (tests/server/test_codec.py).

:func:`request_id` finds the ``id`` of a frame that decoded to a map but was refused
for a value (a 65-bit integer, an infinity anywhere in it), so the error reply can
still name the request it answers.

Hostile frames are bounded: the frame length is checked first, msgpack's ``max_*_len``
limits keep a small frame from claiming a huge container, and nesting deeper than
:data:`MAX_DEPTH` is refused.

This module is pure: it never does I/O, never logs, and never decides what a message
means; that is the protocol's and the table's business.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, Final, NoReturn

import msgpack
import orjson

from server.protocol.errors import ProtocolError

__all__ = [
    "FORMATS",
    "JSON",
    "MAX_DEPTH",
    "MAX_SIZE",
    "MSGPACK",
    "decode",
    "encode",
    "is_binary",
    "payload",
    "request_id",
]

JSON: Final = "chemmy.v1.json"
MSGPACK: Final = "chemmy.v1.msgpack"
#: The subprotocols in the server's order of preference.
FORMATS: Final = (MSGPACK, JSON)

#: Default bound on a frame's length (bytes for msgpack, characters for JSON). The
#: server passes its own ``max_frame``; a client reading large snapshots may pass more.
MAX_SIZE: Final = 1 << 20
#: How deeply containers may nest in a message. Real messages are a handful deep.
MAX_DEPTH: Final = 32

_INT_MIN: Final = -(1 << 63)
_INT_MAX: Final = (1 << 64) - 1

#: JSON frames are encoded by ``orjson`` (issue 23: a frame in about a seventh of the
#: standard library's time; the hub encodes one for every private view of every event).
_JSON_OPTIONS: Final = orjson.OPT_NON_STR_KEYS


def is_binary(fmt: str) -> bool:
    """Whether ``fmt`` uses binary frames (msgpack) rather than text frames (JSON)."""
    if fmt == MSGPACK:
        return True
    if fmt == JSON:
        return False
    raise ValueError(f"unknown format {fmt!r}")


def encode(message: Mapping[str, Any], fmt: str) -> str | bytes:
    """Encode one message: a ``str`` for :data:`JSON`, ``bytes`` for :data:`MSGPACK`.

    Raises :class:`TypeError` or :class:`ValueError` when the message holds something
    the format cannot carry (a server bug, never the client's): bytes in JSON, an
    integer wider than 64 bits. (A non-finite float, which JSON cannot carry either,
    goes out as ``null`` in JSON: the server makes none.)
    """
    data, text = payload(message, fmt)
    return data.decode() if text else data


def payload(message: Mapping[str, Any], fmt: str) -> tuple[bytes, bool]:
    """:func:`encode`'s message as a WebSocket frame's payload, and whether the frame is
    text: the same bytes, JSON's without a ``str`` made and encoded again (two copies of
    every frame the server writes, and a UTF-8 check)."""
    if not isinstance(message, dict):
        message = dict(message)
    if fmt == JSON:
        return orjson.dumps(message, option=_JSON_OPTIONS), True
    if fmt == MSGPACK:
        try:
            packed: bytes = msgpack.packb(message, use_bin_type=True)
        except OverflowError as exc:
            raise ValueError(str(exc)) from None
        return packed, False
    raise ValueError(f"unknown format {fmt!r}")


def decode(frame: str | bytes, fmt: str, *, max_size: int = MAX_SIZE) -> dict[str, Any]:
    """Decode one frame received on a connection speaking ``fmt``.

    Returns a ``dict`` with a non-empty ``str`` under ``"type"``; raises
    :class:`ProtocolError` (``"bad_frame"`` or ``"bad_message"``) for anything else.
    """
    if fmt == JSON:
        fast = _decode_json_fast(frame, max_size)
        if fast is not None:
            return fast
        value = _decode_json(frame, max_size)
    elif fmt == MSGPACK:
        value = _decode_msgpack(frame, max_size)
    else:
        raise ValueError(f"unknown format {fmt!r}")
    return _check_message(value, text=fmt == JSON)


def _check_message(value: Any, *, text: bool, floats: bool = True) -> dict[str, Any]:
    """``value`` if it is a message (a map with a string ``"type"``) with every value
    one both formats carry (:func:`_check_values`); else :class:`ProtocolError`."""
    if not isinstance(value, dict):
        raise ProtocolError("bad_message", "a message is a map")
    kind = value.get("type")
    if not isinstance(kind, str) or not kind:
        raise ProtocolError("bad_message", 'a message has a string "type"')
    _check_values(value, text=text, floats=floats)
    return value


def request_id(frame: str | bytes, fmt: str, *, max_size: int = MAX_SIZE) -> str | int | None:
    """The ``id`` an error reply to ``frame`` echoes when :func:`decode` refused it with
    ``bad_message``: the map's ``id`` if the wire can carry it back (a string of valid
    Unicode or an integer of at most 64 bits, not a bool), else None. Never raises.

    It parses the frame again, so call it only for a frame :func:`decode` refused.
    """
    try:
        if fmt == JSON:
            value = _decode_json(frame, max_size)
        elif fmt == MSGPACK:
            value = _decode_msgpack(frame, max_size)
        else:
            return None
    except ProtocolError:
        return None
    mid = value.get("id") if isinstance(value, dict) else None
    if isinstance(mid, bool):
        return None
    if isinstance(mid, int):
        return mid if _INT_MIN <= mid <= _INT_MAX else None
    if isinstance(mid, str):
        try:
            _check_text(mid)
        except ProtocolError:
            return None
        return mid
    return None


# -- JSON ------------------------------------------------------------------------------


def _refuse_constant(name: str) -> NoReturn:
    raise ProtocolError("bad_frame", f"{name} is not JSON")


#: ``json.loads`` with ``parse_constant`` makes a decoder for every frame (2 of its 4 µs).
_JSON_DECODER: Final = json.JSONDecoder(parse_constant=_refuse_constant)


class _Inexact(Exception):
    """orjson read a number as a float: it reads an integer wider than 64 bits as one,
    where the standard library reads the integer (and it is refused), so a frame with
    a float in it is read again by :func:`_decode_json`."""


def _decode_json_fast(frame: str | bytes, max_size: int) -> dict[str, Any] | None:
    """The message in ``frame`` read by ``orjson`` (in about a fifth of the standard
    library's time: every client frame is read here) and checked as :func:`decode`
    checks it; None when it must be read by :func:`_decode_json` instead, so that every
    frame is accepted or refused exactly as that reads it: one orjson refuses (not JSON,
    ``NaN``, a number out of a float's range, a lone surrogate, too deep...), one with
    a float in it, or one the checks refuse. Without a float, the two read every
    document they both accept alike."""
    if not isinstance(frame, str) or len(frame) > max_size:
        return None
    try:
        value = orjson.loads(frame)
    except orjson.JSONDecodeError:
        return None
    try:
        return _check_message(value, text=True, floats=False)
    except (_Inexact, ProtocolError):
        return None  # (refused as the standard library's reading is: too deep for it...)


def _decode_json(frame: str | bytes, max_size: int) -> Any:
    if not isinstance(frame, str):
        raise ProtocolError("bad_frame", "a chemmy.v1.json connection sends text frames")
    if len(frame) > max_size:
        raise ProtocolError("bad_frame", f"frame longer than {max_size}")
    try:
        return _JSON_DECODER.decode(frame)
    except ProtocolError:
        raise
    except (ValueError, RecursionError):
        # ValueError covers JSONDecodeError and integers past int_max_str_digits.
        raise ProtocolError("bad_frame", "not a JSON document") from None


# -- msgpack ---------------------------------------------------------------------------


def _refuse_ext(code: int, data: bytes) -> NoReturn:
    raise ProtocolError("bad_frame", "msgpack extension types are not used")


def _decode_msgpack(frame: str | bytes, max_size: int) -> Any:
    if not isinstance(frame, bytes | bytearray | memoryview):
        raise ProtocolError("bad_frame", "a chemmy.v1.msgpack connection sends binary frames")
    if len(frame) > max_size:
        raise ProtocolError("bad_frame", f"frame longer than {max_size}")
    try:
        return msgpack.unpackb(
            frame,
            raw=False,
            strict_map_key=True,
            use_list=True,
            ext_hook=_refuse_ext,
            max_str_len=max_size,
            max_bin_len=max_size,
            max_array_len=max_size,
            max_map_len=max_size // 2,
            max_ext_len=0,
        )
    except ProtocolError:
        raise
    except Exception:
        # Translate at the boundary: msgpack raises ValueError (and its subclasses
        # ExtraData, StackError, FormatError, UnicodeDecodeError), TypeError
        # (an unhashable map key) and others; to the client each is one bad frame.
        raise ProtocolError("bad_frame", "not a msgpack document") from None


# -- values ----------------------------------------------------------------------------


def _check_values(message: dict[str, Any], *, text: bool, floats: bool = True) -> None:
    """Refuse too-deep nesting, non-string keys, non-finite floats, integers msgpack
    cannot carry and, in JSON, lone surrogates (``"\\ud800"`` parses but cannot be
    re-encoded as UTF-8): whatever decodes in one format can be relayed in the other.
    (``floats`` False: raise :class:`_Inexact` at the first float met.)

    The values are looked at depth first, the last of a container's first, as a stack
    would give them: a command's own values, flat, are looked at in place."""
    for key in message:  # (a map's keys before any of its values)
        if not isinstance(key, str):
            raise ProtocolError("bad_message", "map keys are strings")
        if text:
            _check_text(key)
    for item in reversed(message.values()):
        kind = type(item)
        if kind is str:
            if text:
                _check_text(item)
        elif kind is int:
            if not _INT_MIN <= item <= _INT_MAX:
                raise ProtocolError("bad_message", "integers fit in 64 bits")
        elif kind is not bool and item is not None:
            _check_nested(item, text=text, floats=floats)


def _check_nested(message: Any, *, text: bool, floats: bool) -> None:
    """:func:`_check_values` of one value of a message, and of all it holds."""
    stack: list[tuple[Any, int]] = [(message, 2)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            if depth > MAX_DEPTH:
                raise ProtocolError("bad_message", f"nested deeper than {MAX_DEPTH}")
            for key, item in value.items():
                if not isinstance(key, str):
                    raise ProtocolError("bad_message", "map keys are strings")
                if text:
                    _check_text(key)
                stack.append((item, depth + 1))
        elif isinstance(value, list):
            if depth > MAX_DEPTH:
                raise ProtocolError("bad_message", f"nested deeper than {MAX_DEPTH}")
            stack.extend((item, depth + 1) for item in value)
        elif isinstance(value, float):
            if not floats:
                raise _Inexact
            if not math.isfinite(value):  # JSON's 1e400 parses as infinity
                raise ProtocolError("bad_message", "numbers are finite")
        elif isinstance(value, int):
            if not _INT_MIN <= value <= _INT_MAX:
                raise ProtocolError("bad_message", "integers fit in 64 bits")
        elif text and isinstance(value, str):
            _check_text(value)


def _check_text(value: str) -> None:
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ProtocolError("bad_message", "strings are valid Unicode") from None
