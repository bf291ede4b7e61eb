"""The one route list of ``/operator/v1/`` (docs/operator-api.md), installed on the
router by ``server.process.assemble`` (never by the gateway): every route module, in the
order the router was always given them.
"""

from __future__ import annotations

from server.operator import protection, reads, reconciliation, tables, transfers, wallet
from server.operator.api import OperatorAPI
from server.operator.context import OperatorSide

__all__ = ["install"]


def install(api: OperatorAPI, side: OperatorSide, *, transfer_api: bool) -> None:
    """Every operator route on ``api``, over ``side`` (the process: the gateway's
    ``ChemmyServer``); the transfer API's only with ``transfer_api`` (``--wallet
    transfer``)."""
    if transfer_api:
        transfers.install(api, side)
    reconciliation.install(api, side.store)
    wallet.install(api, side)
    reads.install(api, side)
    tables.install(api, side)
    protection.install(api, side)
