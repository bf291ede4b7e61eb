"""A store-commit counter for a ``chemmy-server`` that a benchmark starts (bench/evening.py).

The server exposes no count of its store's commits, and the benchmarks change no server
code; so the bench starts the server through :data:`MAIN` (``python -c``): it wraps
``commit`` of the SQLite and the Redis store classes with a counter (one integer add
after each commit that returned), adds a gauge ``chemmy_bench_store_commits`` to the
server's own metrics registry (served at ``/metrics`` with the rest), says on stderr
which ``server`` package it runs (so the bench can check it is the work tree's), then
runs ``server.process.main`` as ``chemmy-server`` would be run. Today each
``Store.commit`` is one SQLite transaction or one Redis script call; a store that
groups several steps into one transaction would need its transactions counted instead.
"""

from __future__ import annotations

import functools
import sys
from typing import Any

COMMITS = [0]

#: The ``python -c`` program the bench starts servers with.
MAIN = (
    "import runpy, bench._commits as c; c.install(); "
    "runpy.run_module('server.process.main', run_name='__main__', alter_sys=True)"
)


def install() -> None:
    from prometheus_client import Gauge

    import server
    from server.process import metrics
    from server.store.redis import RedisStore
    from server.store.sqlite import SQLiteStore

    for cls in (SQLiteStore, RedisStore):
        original = cls.commit

        @functools.wraps(original)
        async def commit(self: Any, *args: Any, __original: Any = original, **kwargs: Any) -> Any:
            result = await __original(self, *args, **kwargs)
            COMMITS[0] += 1
            return result

        cls.commit = commit  # type: ignore[method-assign]

    init = metrics.Metrics.__init__

    def counted_init(self: Any) -> None:
        init(self)
        gauge = Gauge(
            "chemmy_bench_store_commits",
            "Store.commit calls that returned (bench/_commits.py, not the server's own)",
            registry=self.registry,
        )
        gauge.set_function(lambda: COMMITS[0])

    metrics.Metrics.__init__ = counted_init  # type: ignore[method-assign]
    print(f"bench: server code from {server.__file__}", file=sys.stderr, flush=True)
