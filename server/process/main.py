"""``chemmy-server``: run the server until SIGTERM or SIGINT, then drain and stop.

With no arguments it serves the default lobby on ws://127.0.0.1:8765 with guest play
and a SQLite file in the current directory: nothing else to install or configure.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

from server.process.config import ConfigError, ServerConfig, load_config
from server.protocol.errors import StoreInUse

__all__ = ["main", "run"]


#: Structured fields a log call may carry (``extra={"table": ...}``): JSON keys of their own.
LOG_FIELDS = ("table", "conn", "player", "node", "code", "epoch")


class JsonFormatter(logging.Formatter):
    """One JSON object a line, for log collectors; the structured fields of
    :data:`LOG_FIELDS` a call carried become keys of their own."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in LOG_FIELDS:
            value = record.__dict__.get(name)
            if value is not None:
                out[name] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False)


def setup_logging(config: ServerConfig) -> None:
    handler = logging.StreamHandler(sys.stderr)
    fmt = config.log_format
    if fmt == "auto":
        fmt = "text" if sys.stderr.isatty() else "json"
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(config.log_level.upper())
    logging.getLogger("websockets").setLevel(logging.WARNING)


#: The collector's thresholds for a serving process (CPython's are 700, 10, 10): a young
#: generation of 20,000 objects, so the futures, frames and messages of a step die before
#: a collection sees them, and a full collection after 20 of the middle one's.
GC_THRESHOLDS: tuple[int, int, int] = (20_000, 20, 20)


def tune_gc() -> None:
    """Keep the cyclic collector's pauses out of the round trips (issue 23: a full
    collection of a process with 1,200 connections took 245 ms, and at a busy table every
    command in flight waited for it). Everything made while starting (modules, the
    tables, the store) is frozen (``gc.freeze``: never scanned again, still freed when
    no longer referenced), and the collections run less often
    (:data:`GC_THRESHOLDS`): each young one is longer, and far fewer objects live long
    enough to be scanned by a full one. docs/architecture.md §10."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


async def run(config: ServerConfig, ready: asyncio.Event | None = None) -> None:
    from server.process.assemble import assemble
    from server.store import store_for

    options = {"min_replicas": config.redis_min_replicas} if config.clustered else {}
    server = assemble(config, store_for(config.store_url, **options))
    await server.start()
    tune_gc()
    loop = asyncio.get_running_loop()
    logging.getLogger("chemmy.server").info(
        "event loop: %s (%s.%s)",
        config.event_loop,
        type(loop).__module__,
        type(loop).__qualname__,
    )
    print(
        f"chemmy-server listening on ws://{config.host}:{server.port}", file=sys.stderr, flush=True
    )
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if ready is not None:
        ready.set()
    await stop.wait()
    logging.getLogger("chemmy.server").info("draining")
    await server.drain()
    await server.stop()


def loop_factory(name: str) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The event loop ``--event-loop`` names: uvloop's (libuv), or None for asyncio's."""
    if name == "uvloop":
        import uvloop

        return uvloop.new_event_loop
    return None


def main(argv: list[str] | None = None) -> int:
    import os

    try:
        config = load_config(argv, os.environ)
    except ConfigError as exc:
        print(f"chemmy-server: error: {exc}", file=sys.stderr)
        return 2
    setup_logging(config)
    try:
        with asyncio.Runner(loop_factory=loop_factory(config.event_loop)) as runner:
            runner.run(run(config))
    except KeyboardInterrupt:
        pass
    except StoreInUse as exc:
        print(f"chemmy-server: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"chemmy-server: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
