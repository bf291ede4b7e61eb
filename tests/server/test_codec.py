"""The codec: both formats round-trip, every decode error path, and the fuzzer's rule."""

from __future__ import annotations

import json
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.protocol.codec import (
    FORMATS,
    JSON,
    MAX_DEPTH,
    MSGPACK,
    decode,
    encode,
    is_binary,
    payload,
)
from server.protocol.errors import ChemmyError, ProtocolError, Refused

MESSAGE: dict[str, Any] = {
    "type": "bet",
    "id": 17,
    "table": "t1",
    "spots": {"player": 100, "banker": 0, "tie": 25},
    "cards": [["K", "s"], ["9", "h"]],
    "ratio": 0.95,
    "ok": True,
    "note": None,
    "name": "Zoë 🂡",
}


@pytest.mark.parametrize("fmt", FORMATS)
def test_round_trip(fmt: str) -> None:
    frame = encode(MESSAGE, fmt)
    assert isinstance(frame, bytes) == is_binary(fmt)
    assert decode(frame, fmt) == MESSAGE


def test_json_is_compact_and_keeps_unicode() -> None:
    frame = encode({"type": "chat", "text": "é"}, JSON)
    assert frame == '{"type":"chat","text":"é"}'


def test_msgpack_keeps_bin_apart_from_str() -> None:
    message = {"type": "x", "blob": b"\x00\xff", "text": "\x00"}
    assert decode(encode(message, MSGPACK), MSGPACK) == message


def test_a_non_finite_float_goes_out_as_null_in_json() -> None:
    # (JSON cannot carry one; the server makes none, and a client's is refused on decode.)
    assert decode(encode({"type": "x", "v": float("nan")}, JSON), JSON) == {"type": "x", "v": None}
    with pytest.raises(ProtocolError):
        decode('{"type": "x", "v": NaN}', JSON)


def test_json_frames_are_the_standard_librarys_json() -> None:

    message = {"type": "event", "seq": 7, "at": 1796160421.107, "name": "Zoë", 3: [1.5, None]}
    assert encode(message, JSON) == json.dumps(message, separators=(",", ":"), ensure_ascii=False)


def test_encode_accepts_any_mapping() -> None:
    from types import MappingProxyType

    assert decode(encode(MappingProxyType({"type": "x"}), JSON), JSON) == {"type": "x"}


def test_encode_errors_are_server_bugs() -> None:
    with pytest.raises(TypeError):
        encode({"type": "x", "v": b"raw"}, JSON)
    with pytest.raises(TypeError):
        encode({"type": "x", "v": 1 << 70}, JSON)
    with pytest.raises(ValueError):
        encode({"type": "x", "v": 1 << 70}, MSGPACK)
    with pytest.raises(ValueError):
        encode({"type": "x"}, "chemmy.v0.xml")
    with pytest.raises(ValueError):
        decode("{}", "chemmy.v0.xml")


@given(
    st.dictionaries(
        st.text(max_size=8) | st.integers(-5, 5),
        st.none()
        | st.booleans()
        | st.integers(-(1 << 65), 1 << 65)  # (past msgpack's 64 bits: refused)
        | st.text()
        | st.text(st.characters(exclude_categories=()), max_size=4)  # (lone surrogates)
        | st.binary(max_size=4)  # (JSON refuses bytes)
        | st.floats(),
        max_size=6,
    )
)
@settings(max_examples=200)
def test_a_payload_is_the_encoded_frame_and_says_whether_it_is_text(message: Any) -> None:
    """``payload`` (the hub's and the replies' frames) makes the bytes ``encode`` makes, as
    a frame's payload: JSON's text encoded, msgpack's bytes; the same refusals."""
    message = {"type": "event", **message}
    for fmt in FORMATS:
        try:
            encoded: str | bytes = encode(message, fmt)
        except (TypeError, ValueError) as exc:
            with pytest.raises(type(exc)):
                payload(message, fmt)
            continue
        text = isinstance(encoded, str)
        want = encoded.encode() if isinstance(encoded, str) else encoded
        assert payload(message, fmt) == (want, text) and text == (fmt == JSON)
    for message, fmt, error in (
        ({"type": "x", "v": b"raw"}, JSON, TypeError),
        ({"type": "x"}, "chemmy.v0.xml", ValueError),
    ):
        for made in (encode, payload):
            with pytest.raises(error):
                made(message, fmt)


def test_error_tree() -> None:
    error = ProtocolError("bad_frame", "nope")
    assert isinstance(error, ChemmyError)
    assert not isinstance(error, Refused)
    assert error.code == "bad_frame" and error.message == "nope"
    assert error.to_dict() == {"code": "bad_frame", "message": "nope"}


def _code(frame: str | bytes, fmt: str, **kwargs: Any) -> str:
    with pytest.raises(ProtocolError) as info:
        decode(frame, fmt, **kwargs)
    return info.value.code


@pytest.mark.parametrize(
    ("frame", "fmt"),
    [
        (b'{"type":"x"}', JSON),  # binary frame on a JSON connection
        (bytearray(b'{"type":"x"}'), JSON),
        ('{"type":"x"}', MSGPACK),  # text frame on a msgpack connection
        ("{", JSON),
        ("", JSON),
        ('{"type":"x"} {}', JSON),
        ('{"type":"x","v":NaN}', JSON),
        ('{"type":"x","v":Infinity}', JSON),
        ('{"type":"x","v":-Infinity}', JSON),
        ('{"type":"x","v":' + "1" * 5000 + "}", JSON),  # past int_max_str_digits
        ("[" * 100_000 + "]" * 100_000, JSON),  # recursion
        (b"", MSGPACK),
        (b"\xc1", MSGPACK),  # never used
        (b"\x81\xa4type", MSGPACK),  # truncated
        (msgpack.packb({"type": "x"}) + b"\x00", MSGPACK),  # extra data
        (b"\xd4\x05\x00", MSGPACK),  # fixext 1
        (b"\xc7\x00\x05", MSGPACK),  # ext 8, empty
        (b"\xd6\xff\x00\x00\x00\x00", MSGPACK),  # timestamp
        (b"\xa2\xff\xfe", MSGPACK),  # invalid UTF-8 in a str
        (b"\x81\x01\x01", MSGPACK),  # int map key
        (b"\x81\x91\x01\x01", MSGPACK),  # unhashable map key
        (b"\xdd\xff\xff\xff\xff", MSGPACK),  # claims a 4G array
        (b"\xdf\xff\xff\xff\xff", MSGPACK),  # claims a 4G map
        (b"\xdb\xff\xff\xff\xff", MSGPACK),  # claims a 4G str
        (b"\x91" * 5000 + b"\xc0", MSGPACK),  # past msgpack's stack
    ],
)
def test_bad_frame(frame: str | bytes, fmt: str) -> None:
    assert _code(frame, fmt) == "bad_frame"


def test_frame_size_is_bounded() -> None:
    assert _code(encode({"type": "x", "pad": "a" * 100}, JSON), JSON, max_size=64) == "bad_frame"
    big = encode({"type": "x", "pad": "a" * 100}, MSGPACK)
    assert _code(big, MSGPACK, max_size=64) == "bad_frame"
    assert decode(big, MSGPACK, max_size=len(big))["type"] == "x"


@pytest.mark.parametrize(
    "value",
    [
        [],
        [{"type": "x"}],
        "type",
        17,
        None,
        {},
        {"type": 1},
        {"type": None},
        {"type": ""},
        {"type": ["x"]},
        {"kind": "x"},
    ],
)
@pytest.mark.parametrize("fmt", FORMATS)
def test_bad_message(value: Any, fmt: str) -> None:
    frame = json.dumps(value) if fmt == JSON else msgpack.packb(value)
    assert _code(frame, fmt) == "bad_message"


def _nest(depth: int) -> dict[str, Any]:
    message: dict[str, Any] = {"type": "x"}
    inner = message
    for _ in range(depth - 1):
        inner["v"] = {}
        inner = inner["v"]
    return message


@pytest.mark.parametrize("fmt", FORMATS)
def test_depth_is_bounded(fmt: str) -> None:
    assert decode(encode(_nest(MAX_DEPTH), fmt), fmt)["type"] == "x"
    assert _code(encode(_nest(MAX_DEPTH + 1), fmt), fmt) == "bad_message"
    deep_list: Any = 0
    for _ in range(MAX_DEPTH + 1):
        deep_list = [deep_list]
    assert _code(encode({"type": "x", "v": deep_list}, fmt), fmt) == "bad_message"


def test_msgpack_non_finite_float_is_bad_message() -> None:
    frame = msgpack.packb({"type": "x", "v": float("inf")})
    assert _code(frame, MSGPACK) == "bad_message"


def test_numbers_fit_both_formats() -> None:
    assert _code('{"type":"x","v":1e400}', JSON) == "bad_message"  # parses as inf
    assert _code('{"type":"x","v":18446744073709551616}', JSON) == "bad_message"
    assert _code('{"type":"x","v":-9223372036854775809}', JSON) == "bad_message"
    assert decode('{"type":"x","v":18446744073709551615}', JSON)["v"] == 2**64 - 1
    assert decode('{"type":"x","v":-9223372036854775808}', JSON)["v"] == -(2**63)


def test_json_lone_surrogate_is_bad_message() -> None:
    assert _code('{"type":"x","name":"\\ud800"}', JSON) == "bad_message"
    assert _code('{"type":"x","\\udfff":1}', JSON) == "bad_message"
    # A correctly paired surrogate escape is a real character.
    assert decode('{"type":"\\ud83c\\udca1"}', JSON)["type"] == "🂡"


def test_msgpack_bytes_map_key_is_bad_message() -> None:
    frame = msgpack.packb({"type": "x", b"k": 1}, use_bin_type=True)
    assert _code(frame, MSGPACK) == "bad_message"


# -- fuzz: any input either decodes to a message or raises ProtocolError (h11's rule) ---


def _check(frame: str | bytes, fmt: str) -> None:
    try:
        message = decode(frame, fmt)
    except ProtocolError as error:
        assert error.code in {"bad_frame", "bad_message"}
    else:
        assert isinstance(message, dict)
        assert isinstance(message["type"], str)
        # Whatever decodes can be relayed in either format.
        encode(message, MSGPACK)
        if not any(isinstance(v, bytes) for v in message.values()):
            text = encode(message, JSON)
            assert isinstance(text, str)
            text.encode("utf-8")


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=256), st.sampled_from(FORMATS))
def test_fuzz_bytes(frame: bytes, fmt: str) -> None:
    _check(frame, fmt)


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=256), st.sampled_from(FORMATS))
def test_fuzz_text(frame: str, fmt: str) -> None:
    _check(frame, fmt)


_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats()
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4)
    ),
    max_leaves=20,
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(_json_values, st.sampled_from(FORMATS))
def test_fuzz_structured(value: Any, fmt: str) -> None:
    """Near-miss documents (valid encodings of arbitrary values, with a "type" or not)."""
    if fmt == JSON:
        frame: str | bytes = json.dumps(value)
    else:
        frame = msgpack.packb(value, use_bin_type=True)
    _check(frame, fmt)
    if isinstance(value, dict):
        value = {**value, "type": "t"}
        frame = json.dumps(value) if fmt == JSON else msgpack.packb(value, use_bin_type=True)
        _check(frame, fmt)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_fuzz_mutated_msgpack(noise: bytes) -> None:
    """A valid message with bytes spliced in the middle."""
    frame = msgpack.packb(MESSAGE, use_bin_type=True)
    cut = len(noise) % len(frame)
    _check(frame[:cut] + noise + frame[cut:], MSGPACK)


def _read_by_the_standard_library(frame: str) -> Any:
    """What JSON ``decode`` read before it read with orjson first: the standard
    library's decoder, then the same checks (the value, or the refusal)."""
    from server.protocol import codec

    try:
        value = codec._decode_json(frame, codec.MAX_SIZE)
        codec._check_message(value, text=True)
    except ProtocolError as error:
        return ("refused", error.code, error.message)
    return ("read", value, [type(v) for v in value.values()])


def _read(frame: str) -> Any:
    try:
        value = decode(frame, JSON)
    except ProtocolError as error:
        return ("refused", error.code, error.message)
    return ("read", value, [type(v) for v in value.values()])


@pytest.mark.parametrize(
    "frame",
    [
        '{"type":"bet","id":"r1","table":"t1","area":"player","amount":100}',
        '{"type":"x","v":18446744073709551616}',  # orjson: a float; refused as an integer
        '{"type":"x","v":-9223372036854775809,"w":1e400}',  # the first met is the one said
        '{"type":"x","v":1.5,"w":[1,{"a":2.0}]}',
        '{"type":"x","v":1e400}',
        '{"type":"x","v":NaN}',
        '{"type":"x","name":"\\ud800"}',
        '{"type":"\\ud83c\\udca1","k":"é"}',
        '{"type":"x","v":' + "[" * 1000 + "]" * 1000 + "}",  # orjson's depth, not json's
        '{"type":"x","v":' + "[" * 20 + "]" * 20 + "}",
        '{"type":"x","a":1,"a":2}',
        '{"type":"x","b":true,"n":null,"s":"\\u0000"}',
        '{"type":"x"} ',
        "\ufeff{}",
        '{"type":""}',
        '[{"type":"x"}]',
    ],
)
def test_json_frames_are_read_as_the_standard_library_reads_them(frame: str) -> None:
    """Read with orjson first (every client frame: a fifth of the time), a frame is
    accepted with the same value, or refused with the same code and message, as the
    standard library's reading with the same checks gives."""
    assert _read(frame) == _read_by_the_standard_library(frame)


_wide_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_wide_json_values)
@pytest.mark.slow
def test_fuzz_json_read_as_the_standard_library_reads_it(value: Any) -> None:
    frames = [json.dumps(value)]
    if isinstance(value, dict):
        frames.append(json.dumps({**value, "type": "t"}))
    for frame in frames:
        assert _read(frame) == _read_by_the_standard_library(frame)
