"""What the deploy tests share: scripts/cluster's functions, TLS clients, metrics.

- :func:`cluster_script` loads ``scripts/cluster`` as a module: the tests start nginx
  through its :class:`Nginx` (deploy/'s config with the ports, the certificate paths
  and the upstream servers substituted, nothing else), so what the tests run is what
  the script runs.
- :func:`server_helpers` is the test toolkit ``kit`` (the recording protocol client and
  the table driver).
- :func:`tls_client_class` is that client over ``wss://`` trusting a throwaway CA.
- :func:`metric` reads one sample of a process's ``/metrics``.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import re
import ssl
import sys
import urllib.request
from pathlib import Path
from types import ModuleType
from typing import Any

from kit import scaled
from kit.launch import ROOT

__all__ = ["ROOT", "cluster_script", "metric", "server_helpers", "tls_client_class"]


def _load(name: str, path: Path) -> ModuleType:
    module = sys.modules.get(name)
    if module is not None:
        return module
    loader = importlib.machinery.SourceFileLoader(name, str(path))
    spec = importlib.util.spec_from_loader(name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module


def cluster_script() -> ModuleType:
    """``scripts/cluster``, importable."""
    return _load("chemmy_cluster_script", ROOT / "scripts" / "cluster")


def server_helpers() -> ModuleType:
    """The test toolkit (``Client``, ``Game``, ``SECRET``...)."""
    import kit

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
