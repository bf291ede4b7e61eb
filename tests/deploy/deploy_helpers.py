"""What the deploy tests share: scripts/cluster's functions, TLS clients, metrics.

- :func:`cluster_script` is what ``scripts/cluster`` runs, the kit's
  :mod:`tests.kit.local`: the tests start nginx through its :class:`Nginx` (deploy/'s
  config with the ports, the certificate paths and the upstream servers substituted,
  nothing else), so what the tests run is what the script runs.
- :func:`server_helpers` is the test toolkit ``tests.kit`` (the recording protocol client and
  the table driver).
- :func:`tls_client_class` is that client over ``wss://`` trusting a throwaway CA.
- :func:`metric` reads one sample of a process's ``/metrics``.
- :class:`Front`: nginx in front of ``chemmy-server`` processes (``make_front`` in
  conftest.py starts them).
"""

from __future__ import annotations

import asyncio
import re
import ssl
import time
import urllib.request
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import redis.asyncio as aioredis

from server.croupier.cluster import lease_key, placement
from tests.kit import ServerProcess, local, scaled
from tests.kit.launch import ROOT

__all__ = [
    "ROOT",
    "Front",
    "MakeFront",
    "cluster_script",
    "metric",
    "server_helpers",
    "tls_client_class",
]


def cluster_script() -> ModuleType:
    """What ``scripts/cluster`` runs: the kit's :mod:`tests.kit.local`."""
    return local


def server_helpers() -> ModuleType:
    """The test toolkit (``Client``, ``Game``, ``SECRET``...)."""
    from tests import kit

    return kit


def tls_client_class(context: ssl.SSLContext) -> type[Any]:
    """The recording client, connecting with ``context`` (on reconnections too)."""
    base: type[Any] = server_helpers().Client

    class TlsClient(base):  # type: ignore[misc, valid-type]
        async def open(self, **kwargs: Any) -> Any:
            kwargs.setdefault("ssl", context)
            return await super().open(**kwargs)

    return TlsClient


def metrics_text(port: int) -> str:
    """A process's ``/metrics``, straight from it (never through nginx)."""
    url = f"http://127.0.0.1:{port}/metrics"
    with urllib.request.urlopen(url, timeout=scaled(5)) as response:
        return str(response.read().decode())


def metric(port: int, name: str) -> float:
    """The value of the unlabelled sample ``name`` on a process's ``/metrics``."""
    found = re.search(rf"^{re.escape(name)} (\S+)$", metrics_text(port), re.MULTILINE)
    assert found is not None, f"no {name} on :{port}/metrics"
    return float(found[1])


@dataclass
class Front:
    """nginx (``nginx``, scripts/cluster's :class:`Nginx`) in front of ``servers``."""

    servers: list[ServerProcess]
    nginx: Any
    store: str | None
    clients: list[Any] = field(default_factory=list)

    @property
    def url(self) -> str:
        """Where players connect: nginx's TLS port."""
        return f"wss://127.0.0.1:{self.nginx.https_port}/"

    @property
    def https(self) -> str:
        return f"https://127.0.0.1:{self.nginx.https_port}"

    async def settled(self, tables: list[str]) -> None:
        """Wait until the cluster's members are exactly these processes and each table
        is owned where placement puts it: no table moves until a process joins or
        leaves. (A process that left without a clean stop stays a member until its
        heartbeat expires.)"""
        assert self.store is not None, "a cluster's"
        r = aioredis.Redis.from_url(self.store)
        pids = {s.pid for s in self.servers}
        try:
            async with asyncio.timeout(scaled(20)):
                while True:
                    now_ms = int(time.time() * 1000)
                    nodes = [
                        n.decode() for n in await r.zrangebyscore("chemmy:nodes", now_ms, "+inf")
                    ]
                    raw = [await r.get(lease_key(t)) for t in tables]
                    owners = {
                        t: None if o is None else o.decode()
                        for t, o in zip(tables, raw, strict=True)
                    }
                    placed = placement(tables, nodes, owners)  # where it stays, balanced
                    if {int(n.rsplit("-", 2)[1]) for n in nodes} == pids and all(
                        owners[t] == placed[t] for t in tables
                    ):
                        return
                    await asyncio.sleep(0.05)
        finally:
            await r.aclose()


MakeFront = Callable[..., Awaitable[Front]]
