"""The error tree is whole in server/protocol/errors.py (issue 35 §3).

The internal roots the shell raises (the store's, the operator wallet's, a signature's,
an operator call's) are defined there and drawn in its docstring. The wallet's and the operator's are
importable under the same names from the modules that raise them (one class, not two);
the store's are imported from the tree alone (names from their home: the store's
modules re-export none of them).
"""

from __future__ import annotations

import importlib

import pytest

from server.protocol import errors

#: Each internal root defined in server.protocol.errors, and the module that raises it.
ROOTS = {
    "StoreError": "server.store.base",
    "StoreUnavailable": "server.store.base",
    "StoreInUse": "server.store.base",
    "KeyConflict": "server.store.base",
    "Overdrawn": "server.store.base",
    "OutOfRange": "server.store.base",
    "LimitPassed": "server.store.base",
    "StaleEpoch": "server.store.base",
    "BadWalletCall": "server.store.base",
    "WalletError": "server.wallet.base",
    "SignatureError": "server.wallet.signing",
    "OperatorRefusal": "server.operator.api",
}


@pytest.mark.parametrize("name", sorted(ROOTS))
def test_an_internal_root_is_defined_with_the_tree(name: str) -> None:
    cls = getattr(errors, name)
    assert cls.__module__ == "server.protocol.errors" and name in errors.__all__
    raiser = importlib.import_module(ROOTS[name])
    if ROOTS[name].startswith("server.store"):
        assert not hasattr(raiser, name) and not hasattr(
            importlib.import_module("server.store"), name
        )
    else:
        assert getattr(raiser, name) is cls  # (named there too)
    assert f"── {name}" in (errors.__doc__ or "")  # drawn in the tree
    assert not issubclass(cls, errors.ChemmyError)  # never sent as it is


def test_the_store_errors_branch() -> None:
    store = {n for n, m in ROOTS.items() if m == "server.store.base"}
    assert all(issubclass(getattr(errors, n), errors.StoreError) for n in store)
    assert issubclass(errors.BadWalletCall, ValueError)
    passed = errors.LimitPassed("wager_day", 500, 20)
    assert (passed.kind, passed.cap, passed.remaining) == ("wager_day", 500, 20)
    refusal = errors.OperatorRefusal(409, "conflict", "no", {"limit": 1})
    assert (refusal.http_status, refusal.code, refusal.details) == (409, "conflict", {"limit": 1})
    assert errors.SignatureError("stale_signature", "old").status == "stale_signature"
