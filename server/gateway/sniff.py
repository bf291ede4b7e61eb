"""Which connections on the gateway's port are the operator's: ``/operator/v1/...``.

:func:`sniff` reads a connection's first bytes (``server.gateway.session.GatewayConnection``
asks it before ``websockets`` sees them): a request line whose target starts with
:data:`OPERATOR_PREFIX` (any method) is handed to the operator's API through the
gateway's ``OperatorDoor`` (``server.gateway.context``), which reads and answers it
(``server.operator.http``); anything else goes to ``websockets`` as it came. First bytes
that have not told which by :data:`READ_TIMEOUT` are handed over too (and answered 408).

It never reads a request, answers one, or imports the operator room.
"""

from __future__ import annotations

from typing import Final

__all__ = ["OPERATOR_PREFIX", "READ_TIMEOUT", "sniff"]

#: The paths taken over (every method): the API. The rest of ``/operator/`` is the
#: back-office page's files (``server.gateway.static``), served like the web table's.
OPERATOR_PREFIX: Final = b"/operator/v1/"
#: Seconds from the connection's start a client has to send its whole request.
READ_TIMEOUT: Final = 5.0


def sniff(head: bytes) -> bool | None:
    """Whether the first bytes of a connection start an operator request (``True``),
    anything else (``False``), or cannot tell yet (``None``: read more)."""
    line, newline, _ = head.partition(b"\n")
    method, space, rest = line.partition(b" ")
    if not space:  # the method is not whole yet
        if newline or len(method) > _MAX_METHOD or (method and not _is_method(method)):
            return False
        return None
    if not _is_method(method):
        return False
    target, space, _ = rest.partition(b" ")
    if target.startswith(OPERATOR_PREFIX):
        return True
    if OPERATOR_PREFIX.startswith(target) and not space and not newline:
        return None  # "/oper" so far
    return False


_MAX_METHOD: Final = 16


def _is_method(method: bytes) -> bool:
    return len(method) <= _MAX_METHOD and method.isalpha() and method.isupper()
