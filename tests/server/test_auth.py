"""Player tokens and guests: what is accepted, what is refused, and that tokens stay secret."""

from __future__ import annotations

import time
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa

from server.process.auth import (
    Authenticator,
    AuthError,
    Identity,
    clean_name,
    guest_from_resume,
    guest_identity,
    guest_resume_token,
    is_valid_player_id,
    make_token,
)
from server.process.config import ConfigError, load_config
from server.protocol.errors import ChemmyError, Refused

SECRET = "s3cret-s3cret-s3cret-s3cret-s3cret!"
NOW = 1_700_000_000


def hs256(**kwargs: object) -> Authenticator:
    return Authenticator(secret=SECRET, **kwargs)  # type: ignore[arg-type]


def refused(auth: Authenticator, token: str, code: str = "bad_token") -> AuthError:
    with pytest.raises(AuthError) as info:
        auth.authenticate(token)
    error = info.value
    assert error.code == code
    if token:
        # The token never appears in what a client or a log is told.
        for text in (error.message, str(error), repr(error), str(error.to_dict())):
            assert token not in text
            for part in token.split("."):
                if len(part) > 8:
                    assert part not in text
    # PyJWT's exception (whose text is not ours) is not chained.
    assert error.__cause__ is None
    assert error.__context__ is None or error.__suppress_context__
    return error


def raw(claims: dict[str, object], key: object = SECRET, alg: str = "HS256") -> str:
    return jwt.encode(claims, key, algorithm=alg)  # type: ignore[arg-type]


def ed25519_pair() -> tuple[bytes, bytes]:
    private = ed25519.Ed25519PrivateKey.generate()
    return _pems(private)


def _pems(private: ed25519.Ed25519PrivateKey | rsa.RSAPrivateKey) -> tuple[bytes, bytes]:
    private_pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    public_pem = private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private_pem, public_pem


@pytest.fixture(scope="module")
def rsa_pair() -> tuple[bytes, bytes]:
    return _pems(rsa.generate_private_key(public_exponent=65537, key_size=2048))


# -- HS256 -------------------------------------------------------------------------------


def test_hs256_valid() -> None:
    token = make_token(SECRET, "ann", "Ann", roles=["vip"])
    assert hs256().authenticate(token) == Identity("ann", "Ann", frozenset({"vip"}), False)


def test_name_defaults_to_sub_and_operators() -> None:
    token = make_token(SECRET, "op@example.com")
    identity = hs256(operators=["op@example.com"]).authenticate(token)
    assert identity.name == "op@example.com"
    assert identity.is_operator and not identity.guest
    long_id = "x" * 64
    assert hs256().authenticate(make_token(SECRET, long_id)).name == "x" * 32
    assert hs256().authenticate(make_token(SECRET, "o", roles=["operator"])).is_operator


def test_wrong_secret() -> None:
    token = make_token("another-secret-another-secret-another", "ann", "Ann")
    assert "signature" in refused(hs256(), token).message


def test_expired_and_leeway() -> None:
    now = time.time()
    refused(hs256(), make_token(SECRET, "ann", ttl=60, now=now - 120), "token_expired")
    # Within the leeway: still fine.
    assert hs256().authenticate(make_token(SECRET, "ann", ttl=60, now=now - 65)).player_id == "ann"


def test_exp_required_by_default() -> None:
    token = raw({"sub": "ann"})
    assert "exp" in refused(hs256(), token).message
    assert hs256(require_exp=False).authenticate(token).player_id == "ann"


@pytest.mark.parametrize(
    "claims",
    [
        {"name": "Ann"},  # no sub
        {"sub": ""},
        {"sub": "ann smith"},
        {"sub": "ann/../../etc"},
        {"sub": "a" * 65},
        {"sub": "ann\n"},
        {"sub": 17},
        {"sub": "guest-0123456789abcdef"},  # reserved for guests
        {"sub": "ann", "name": ""},
        {"sub": "ann", "name": "   "},
        {"sub": "ann", "name": "x" * 33},
        {"sub": "ann", "name": "Ann\x07"},
        {"sub": "ann", "name": "\u202eevil"},  # bidi override
        {"sub": "ann", "name": 5},
        {"sub": "ann", "roles": "operator"},
        {"sub": "ann", "roles": [1]},
        {"sub": "ann", "roles": ["has space"]},
    ],
)
def test_bad_claims(claims: dict[str, object]) -> None:
    refused(hs256(), raw({**claims, "exp": int(time.time()) + 60}))


def test_issuer_and_audience() -> None:
    auth = hs256(issuer="casino", audience="chemmy")
    good = make_token(SECRET, "ann", issuer="casino", audience="chemmy")
    assert auth.authenticate(good).player_id == "ann"
    refused(auth, make_token(SECRET, "ann", issuer="other", audience="chemmy"))
    refused(auth, make_token(SECRET, "ann", issuer="casino", audience="other"))
    refused(auth, make_token(SECRET, "ann"))


def test_garbage_and_missing_tokens() -> None:
    auth = hs256()
    for token in ["x", "a.b.c", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbm4ifQ.", "é" * 20, "a" * 9000]:
        refused(auth, token)
    refused(auth, "", "auth_required")
    # alg "none" is never accepted.
    unsigned = jwt.encode({"sub": "ann", "exp": NOW * 2}, "", algorithm="none")
    refused(auth, unsigned)


def test_guest_only_server_refuses_tokens() -> None:
    auth = Authenticator()
    assert not auth.accepts_tokens
    refused(auth, make_token(SECRET, "ann"))
    assert auth.identify(None, "Zoë").guest
    with pytest.raises(AuthError) as info:
        Authenticator(secret=SECRET, guests=False).identify(None)
    assert info.value.code == "auth_required"
    assert hs256().identify(make_token(SECRET, "ann")).player_id == "ann"


# -- EdDSA and RS256 ---------------------------------------------------------------------


def test_ed25519() -> None:
    private_pem, public_pem = ed25519_pair()
    auth = Authenticator(public_key=public_pem, algorithm="EdDSA")
    token = make_token(private_pem, "ann", "Ann", alg="EdDSA")
    assert auth.authenticate(token) == Identity("ann", "Ann")
    other_private, _ = ed25519_pair()
    refused(auth, make_token(other_private, "ann", alg="EdDSA"))
    refused(auth, make_token(SECRET, "ann"))  # an HS256 token


def test_rs256(rsa_pair: tuple[bytes, bytes]) -> None:
    private_pem, public_pem = rsa_pair
    auth = Authenticator(public_key=public_pem.decode(), algorithm="RS256")
    token = make_token(private_pem.decode(), "ann", "Ann", alg="RS256")
    assert auth.authenticate(token).name == "Ann"
    refused(
        auth, make_token(private_pem, "ann", alg="RS256", now=time.time() - 7200), "token_expired"
    )


def _forge_hs256(claims: dict[str, object], key: bytes) -> str:
    """An HS256 token whose HMAC key is the server's public key text: the classic
    algorithm-confusion forgery. PyJWT refuses to make one, so sign by hand."""
    import base64
    import hashlib
    import hmac
    import json

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    head = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = b64(json.dumps(claims).encode())
    signature = hmac.new(key, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{b64(signature)}"


def test_algorithm_confusion(rsa_pair: tuple[bytes, bytes]) -> None:
    claims: dict[str, object] = {
        "sub": "mallory",
        "roles": ["operator"],
        "exp": int(time.time()) + 60,
    }
    ed_public = ed25519_pair()[1]
    for public_pem, alg in ((ed_public, "EdDSA"), (rsa_pair[1], "RS256")):
        auth = Authenticator(public_key=public_pem, algorithm=alg)
        refused(auth, _forge_hs256(claims, public_pem))
        refused(auth, _forge_hs256(claims, public_pem.strip()))
    # Nor is the other asymmetric algorithm accepted.
    ed_private, ed_public = ed25519_pair()
    rs_server = Authenticator(public_key=rsa_pair[1], algorithm="RS256")
    refused(rs_server, make_token(ed_private, "mallory", alg="EdDSA"))
    ed_server = Authenticator(public_key=ed_public, algorithm="EdDSA")
    refused(ed_server, make_token(rsa_pair[0], "mallory", alg="RS256"))
    with pytest.raises(ConfigError):  # an HS256 server given a public key
        Authenticator(public_key=rsa_pair[1], algorithm="HS256")


def test_key_checks(rsa_pair: tuple[bytes, bytes]) -> None:
    private_pem, public_pem = rsa_pair
    _, ed_public = ed25519_pair()
    bad = [
        {"public_key": private_pem, "algorithm": "RS256"},  # a private key
        {"public_key": ed_public, "algorithm": "RS256"},  # the wrong kind
        {"public_key": public_pem, "algorithm": "EdDSA"},
        {"public_key": b"-----BEGIN PUBLIC KEY-----\nnope\n", "algorithm": "EdDSA"},
        {"secret": "short", "algorithm": "HS256"},
        {"secret": SECRET, "algorithm": "RS256"},
        {"secret": SECRET, "algorithm": "none"},
        {"secret": SECRET, "public_key": public_pem, "algorithm": "RS256"},
    ]
    for kwargs in bad:
        with pytest.raises(ConfigError) as info:
            Authenticator(**kwargs)  # type: ignore[arg-type]
        assert SECRET not in str(info.value)


def test_from_config(tmp_path: Path) -> None:
    private_pem, public_pem = ed25519_pair()
    key_file = tmp_path / "jwt.pem"
    key_file.write_bytes(public_pem)
    config = load_config(
        ["--jwt-algorithm", "EdDSA", "--jwt-public-key-file", str(key_file)],
        {"CHEMMY_OPERATOR_PLAYERS": "boss"},
    )
    auth = Authenticator.from_config(config)
    assert auth.authenticate(make_token(private_pem, "boss", alg="EdDSA")).is_operator
    hs = Authenticator.from_config(load_config([], {"CHEMMY_JWT_SECRET": SECRET}))
    assert hs.authenticate(make_token(SECRET, "ann")).player_id == "ann"
    assert SECRET not in repr(hs)


# -- guests and names --------------------------------------------------------------------


def test_guest_ids_unique() -> None:
    guests = [guest_identity() for _ in range(500)]
    assert len({g.player_id for g in guests}) == 500
    for guest in guests[:5]:
        assert guest.guest and guest.roles == frozenset()
        assert guest.player_id.startswith("guest-") and is_valid_player_id(guest.player_id)
        assert guest.name.startswith("Guest ")
    assert guest_identity("  Zoë  ").name == "Zoë"
    with pytest.raises(AuthError) as info:
        guest_identity("\x00")
    assert info.value.code == "bad_name"


def test_validation_helpers() -> None:
    assert is_valid_player_id("a.b:c@d-e_f")
    assert not is_valid_player_id("")
    assert not is_valid_player_id(None)
    assert clean_name(" Ann ") == "Ann"
    assert clean_name("e\u0301") == "é"  # NFC
    with pytest.raises(ValueError):
        Identity("ann", " Ann")
    with pytest.raises(ValueError):
        Identity("bad id", "x")
    with pytest.raises(ValueError):
        Identity("guest-1", "x", frozenset({"operator"}), guest=True)


def test_error_tree() -> None:
    error = AuthError("bad_token", "no")
    assert isinstance(error, ChemmyError) and not isinstance(error, Refused)


# -- reserved ids and time claims ------------------------------------------------------


def test_the_croupiers_id_is_nobodys() -> None:
    """The table's own actions are recorded as "croupier"'s: no token may name it."""
    error = refused(hs256(), raw({"sub": "croupier", "exp": int(time.time()) + 60}))
    assert "reserved" in error.message
    assert not is_valid_player_id("croupier")
    assert is_valid_player_id("Croupier2")
    with pytest.raises(ValueError):
        Identity("croupier", "The croupier")
    with pytest.raises(ValueError):
        make_token(SECRET, "croupier")
    with pytest.raises(ConfigError):
        load_config(["--operator-players", "croupier"], {})


@pytest.mark.parametrize(
    "claims",
    [
        {"exp": "9999999999"},  # PyJWT takes int("...")
        {"exp": 1e300},  # ... and int(1e300)
        {"exp": float(NOW * 2)},
        {"exp": 2**53},
        {"exp": -1},
        {"exp": True},
        {"exp": [NOW * 2]},
        {"exp": NOW * 2, "iat": "1700000000"},
        {"exp": NOW * 2, "iat": 1.5},
        {"exp": NOW * 2, "nbf": "0"},
        {"exp": NOW * 2, "nbf": 10**30},
        {"exp": str(NOW - 3600)},  # a string is bad even when it would be past
    ],
)
def test_time_claims_are_whole_seconds(claims: dict[str, object]) -> None:
    error = refused(hs256(), raw({"sub": "ann", **claims}))
    assert "whole number" in error.message


def test_time_claims_are_checked() -> None:
    now = int(time.time())
    auth = hs256()
    ok = auth.authenticate(raw({"sub": "ann", "exp": now + 60, "iat": now, "nbf": now}))
    assert ok.player_id == "ann"
    refused(auth, raw({"sub": "ann", "exp": now - 11}), "token_expired")
    assert auth.authenticate(raw({"sub": "ann", "exp": now - 5})).player_id == "ann"  # leeway
    assert (
        "not valid yet"
        in refused(auth, raw({"sub": "ann", "exp": now + 99, "nbf": now + 60})).message
    )
    assert (
        "not valid yet"
        in refused(auth, raw({"sub": "ann", "exp": now + 99, "iat": now + 60})).message
    )
    assert hs256(require_exp=False).authenticate(raw({"sub": "ann"})).player_id == "ann"
    # The bounds docs/protocol.md gives: 0 to 2^53 - 1 (2^53 is refused, above).
    last = 2**53 - 1
    assert auth.authenticate(raw({"sub": "ann", "exp": last, "iat": 0})).player_id == "ann"


def test_guest_resume_tokens_keep_their_claims_whole() -> None:
    key = b"k" * 32
    guest = guest_identity("Zoë")
    token = guest_resume_token(key, guest)
    assert guest_from_resume(key, token) == guest
    bad = jwt.encode(
        {"sub": guest.player_id, "name": "Zoë", "kind": "guest", "exp": 1e300}, key, "HS256"
    )
    with pytest.raises(AuthError) as info:
        guest_from_resume(key, bad)
    assert info.value.code == "bad_token"
    expired = guest_resume_token(key, guest, now=time.time() - 2 * 24 * 3600)
    with pytest.raises(AuthError) as info:
        guest_from_resume(key, expired)
    assert info.value.code == "token_expired"


# -- the language claim (issue 17) -------------------------------------------------------


def test_language_claim_is_passed_on() -> None:
    token = make_token(SECRET, "marie", "Marie", language="fr")
    assert hs256().authenticate(token).language == "fr"
    assert hs256().authenticate(make_token(SECRET, "ann")).language is None
    assert hs256().authenticate(
        raw({"sub": "z", "exp": NOW * 2, "language": "de-CH"})
    ).language == ("de-CH")


@pytest.mark.parametrize("bad", ["", "f", "french!", "fr_FR", "x" * 36, 7, ["fr"], "fr-"])
def test_language_claim_must_be_a_tag(bad: object) -> None:
    error = refused(hs256(), raw({"sub": "ann", "exp": NOW * 2, "language": bad}))
    assert "language" in error.message
    with pytest.raises(ValueError):
        Identity("ann", "Ann", language="not a tag")


# -- the operator's claims about the player's play: currency, jurisdiction, brand, return_url


def test_currency_and_the_operators_claims_are_kept() -> None:
    token = make_token(
        SECRET,
        "eve",
        "Eve",
        currency="EUR",
        jurisdiction="MT",
        brand="casino-one",
        return_url="https://casino.example/lobby?from=chemmy",
    )
    eve = hs256().authenticate(token)
    assert (eve.currency, eve.jurisdiction, eve.brand) == ("EUR", "MT", "casino-one")
    assert eve.return_url == "https://casino.example/lobby?from=chemmy"
    plain = hs256().authenticate(make_token(SECRET, "ann"))
    assert (plain.currency, plain.jurisdiction, plain.brand, plain.return_url) == (None,) * 4
    assert hs256().authenticate(raw({"sub": "z", "exp": NOW * 2, "jurisdiction": "US-NJ"}))
    assert guest_identity().currency is None  # a guest plays with play money


@pytest.mark.parametrize(
    ("claim", "bad"),
    [
        ("currency", "eur"),
        ("currency", "EURO"),
        ("currency", "ABC"),
        ("currency", 978),
        ("currency", ""),
        ("jurisdiction", "Malta"),
        ("jurisdiction", "QQ"),
        ("jurisdiction", "ZZ"),
        ("jurisdiction", "mt"),
        ("jurisdiction", ["MT"]),
        ("brand", ""),
        ("brand", "a brand"),
        ("brand", "x" * 65),
        ("brand", 5),
        ("return_url", "javascript:alert(1)"),
        ("return_url", "ftp://casino.example/"),
        ("return_url", "https://"),
        ("return_url", "https://casino.example/a b"),
        ("return_url", "https://casino.example:99999/"),
        ("return_url", "https://x.example/" + "a" * 2048),
        ("return_url", {"url": "https://casino.example/"}),
    ],
)
def test_bad_operator_claims_are_refused(claim: str, bad: object) -> None:
    error = refused(hs256(), raw({"sub": "ann", "exp": NOW * 2, claim: bad}))
    assert claim in error.message
    with pytest.raises(ValueError):
        Identity("ann", "Ann", **{claim: bad})  # type: ignore[arg-type]
