"""Fixtures of the wallet tests: ``wallet``, the reference wallet (examples/wallet) as a
real subprocess on a database of this test's own (tests/wallet/wallet_helpers.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.wallet.wallet_helpers import SECRET, ReferenceWallet, reference_wallet


@pytest.fixture
def wallet(tmp_path: Path) -> Iterator[ReferenceWallet]:
    """The reference wallet, signed with :data:`~tests.wallet.wallet_helpers.SECRET`,
    its players starting with 100000; stopped at the end."""
    with reference_wallet(tmp_path, SECRET) as running:
        yield running
