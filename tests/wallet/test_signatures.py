"""Signatures with key pairs (issue 33, point 12) and docs/wallet.md against the code
(point 13), without a wallet subprocess: the Ed25519 example of docs/wallet.md §1 is
its test vector; a key file of the wrong kind stops the server at start-up; the
operator's calls to a real server signed with either of two public keys are taken and
nothing else is; §3's table of statuses is the code's vocabulary; and every refusal a
player may be told has its words in every language and both clients.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa

from server.process.config import ConfigError, load_config
from server.wallet.base import STATUSES
from server.wallet.signing import HEADER, key_signature_header, signature_header
from tests.kit.inproc import Net
from tests.wallet.wallet_helpers import write_keys

ROOT = Path(__file__).resolve().parents[2]
KEY = "the-operators-key-for-the-signature-tests-0123456789"


@pytest.fixture
async def net(tmp_path: Path) -> AsyncIterator[Net]:
    n = Net(tmp_path)
    try:
        yield n
    finally:
        await n.close()


def test_a_key_file_of_the_wrong_kind_is_refused_at_start_up(tmp_path: Path) -> None:
    private, public = write_keys(tmp_path, "k", ed25519.Ed25519PrivateKey.generate())
    seamless = ["--wallet", "seamless", "--wallet-url", "http://127.0.0.1:9"]
    with pytest.raises(ConfigError, match="an ed25519 key, and wallet_signature is rsa"):
        load_config(
            [
                *seamless,
                "--wallet-signature",
                "rsa",
                "--wallet-signing-key-file",
                str(private),
                "--wallet-key-id",
                "k1",
            ]
        )
    with pytest.raises(ConfigError, match="wallet_signing_key_file: not an unencrypted PEM"):
        load_config(
            [
                *seamless,
                "--wallet-signature",
                "ed25519",
                "--wallet-signing-key-file",
                str(public),
                "--wallet-key-id",
                "k1",
            ]
        )
    with pytest.raises(ConfigError, match="needs wallet_signing_key_file and wallet_key_id"):
        load_config([*seamless, "--wallet-signature", "ed25519"])
    with pytest.raises(ConfigError, match="operator_public_keys: op: a private key"):
        load_config(["--operator-public-keys", f"op={private}"])
    with pytest.raises(ConfigError, match="is not <key id>=<path"):
        load_config(["--operator-public-keys", str(public)])
    config = load_config(
        [
            *seamless,
            "--wallet-signature",
            "ed25519",
            "--wallet-signing-key-file",
            str(private),
            "--wallet-key-id",
            "k1",
            "--operator-public-keys",
            f"a={public},b={public}",
        ]
    )
    assert config.wallet_secret is None and config.operator_public_keys == (
        f"a={public}",
        f"b={public}",
    )


async def test_operator_calls_signed_with_either_of_two_public_keys_are_taken(
    net: Net, tmp_path: Path
) -> None:
    old = ed25519.Ed25519PrivateKey.generate()
    new = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _, old_public = write_keys(tmp_path / "keys", "old", old)
    _, new_public = write_keys(tmp_path / "keys", "new", new)
    server = await net.start(operator_public_keys=(f"op-old={old_public}", f"op-new={new_public}"))
    target = "/operator/v1/transactions?limit=5"
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.port}", timeout=10) as http:

        async def get(header: str) -> httpx.Response:
            return await http.get(target, headers={HEADER: header.encode("utf-8")})

        for key, kid in ((old, "op-old"), (new, "op-new")):
            answer = await get(key_signature_header(key, kid, time.time(), "GET", target, b""))
            assert answer.status_code == 200, answer.text
        refusals = [
            key_signature_header(old, "op-new", time.time(), "GET", target, b""),  # wrong key
            key_signature_header(old, "op-other", time.time(), "GET", target, b""),  # unknown
            key_signature_header(new, "op-new", time.time() - 400, "GET", target, b""),
            signature_header(KEY.encode(), time.time(), "GET", target, b""),  # no shared key
            "t=1,kid=op-old,ed25519=,rsa-sha256=AAAA",
            "t=1,kid=op-old,ed25519=é",
        ]
        statuses = [(await get(h)).json()["status"] for h in refusals]
        assert statuses == ["bad_signature"] * 2 + ["stale_signature"] + ["bad_signature"] * 3


def test_the_ed25519_example_of_docs_wallet_md_is_its_test_vector() -> None:
    key = ed25519.Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
    header = key_signature_header(
        key, "chemmy-2026", 1764601200, "POST", "/wallet/debit", b'{"a":1}'
    )
    text = (ROOT / "docs" / "wallet.md").read_text(encoding="utf-8")
    assert f"Chemmy-Signature: {header}" in text
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    assert public.decode().strip().splitlines()[1] in text


def test_the_status_table_of_docs_wallet_md_is_the_vocabulary() -> None:
    doc = (ROOT / "docs" / "wallet.md").read_text(encoding="utf-8")
    part = doc[doc.index("### Statuses") :]
    part = part[: part.index("\n### ", 1)]
    listed = re.findall(r"^\| `([a-z_]+)` \|", part, re.M)
    assert sorted(listed) == sorted(STATUSES)


def test_every_debit_refusal_has_its_words_in_every_language_and_client() -> None:
    """A player refused ``session_expired`` reads that, not ``wallet_unavailable``'s
    words: each refusal the table tells has a sentence in each catalog, and both
    clients know it (the page's state.js, the terminal's sentences)."""
    import json

    from client_cli.sentences import debit_refused
    from server.vocabulary.commands import DEBIT_REFUSALS

    static = ROOT / "web"
    state_js = (static / "state.js").read_text(encoding="utf-8")
    listed = re.search(r"const DEBIT_REFUSALS = \[([^\]]*)\]", state_js)
    assert listed is not None
    in_page = set(re.findall(r'"([a-z_]+)"', listed.group(1))) | {"wallet_unavailable"}
    assert in_page == set(DEBIT_REFUSALS)
    for language in ("en", "de", "fr"):
        catalog = json.loads((ROOT / "texts" / "locales" / f"{language}.json").read_text("utf-8"))
        for reason in DEBIT_REFUSALS:
            assert f"ev.debit_refused.{reason}" in catalog, (language, reason)
    unknown = debit_refused("wallet_unavailable")
    for reason in set(DEBIT_REFUSALS) - {"wallet_unavailable"}:
        assert debit_refused(reason) != unknown, reason


def test_the_tokens_sid_else_its_jti_is_the_players_session_at_the_operator() -> None:
    import jwt

    from server.process.auth import Authenticator, AuthError, make_token
    from tests.kit.tables import SECRET

    auth = Authenticator(secret=SECRET)

    def session(**claims: str) -> str | None:
        token = make_token(SECRET, "ann", currency="EUR", brand="casino-one", **claims)
        identity = auth.authenticate(token)
        assert identity.wallet_session["brand"] == "casino-one"
        return identity.wallet_session["session"]

    assert session(sid="s-1", jti="j-1") == "s-1"
    assert session(jti="j-1") == "j-1"
    assert session() is None
    for bad in ("has space", "", "x" * 129, "é"):
        forged = jwt.encode(
            {"sub": "ann", "exp": int(time.time()) + 60, "sid": bad}, SECRET, algorithm="HS256"
        )
        with pytest.raises(AuthError) as refused:
            auth.authenticate(forged)
        assert refused.value.code == "bad_token"
    numbered = jwt.encode({"sub": "ann", "exp": int(time.time()) + 60, "jti": 7}, SECRET, "HS256")
    with pytest.raises(AuthError):
        auth.authenticate(numbered)
