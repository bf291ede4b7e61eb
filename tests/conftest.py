"""Fixtures every test folder may use: a real Redis (tests/kit/redis.py).

- ``redis_server``: one ``redis-server`` for the whole session (AOF on, a temp dir, a
  free port), stopped at the end;
- ``redis_url``: that server emptied for this test (``FLUSHALL``), as a URL; started
  again first if an earlier test stopped it;
- ``make_redis``: ``make_redis()`` starts a private server for a test that stops, kills
  or restarts Redis mid-test (so the shared one is never taken away); stopped at the end.

They never touch a Redis they did not start.

And the per-test timeout (pytest-timeout; ``timeout`` in pyproject.toml, 300 s) is
scaled by ``CHEMMY_TESTS_TIMEOUT_FACTOR`` like every other wait, unless given for the
run (``--timeout`` or ``PYTEST_TIMEOUT``).

Parallel workers (pytest-xdist, ``-n``; ``./scripts/test`` passes ``-n auto``):

- ``-n auto`` is :func:`workers` (three on two cores for the whole suite, which mostly
  waits on server subprocesses, Redis, a browser and table timers; one per core for the
  quick loop), or ``PYTEST_XDIST_AUTO_NUM_WORKERS``;
- the tests of a file that share a module-scoped fixture (a server, a wallet, a
  cluster) run on one worker, in their order (``--dist loadgroup``, each such file an
  ``xdist_group`` of its own name); a file whose tests share none is spread test by
  test; a test that asserts how long something took, from above, is marked
  ``@pytest.mark.xdist_group("elapsed")``: those run one after another on one worker,
  never beside each other;
- the group ``elapsed`` is handed out first, then the groups holding ``slow`` tests, the
  most first, then the rest in the order of the files, so the run does not end waiting
  on one long file.

Each worker collects the whole suite (2,800 tests in 200 files) before it runs one: the
test modules' rewritten asserts are cached in ``__pycache__`` (pytest's own cache, read
back by every later worker and run), even when ``PYTHONDONTWRITEBYTECODE`` is set, as it is
on this machine: rewriting them all again costs each worker seven seconds of CPU, a
quarter of the quick loop's.

Each worker is a session of its own: its own ``redis_server`` (so ``FLUSHALL`` empties
only its own), its own browser (tests/web), its own temp folder.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kit.redis import RedisServer
from tests.kit.timing import TIMEOUT_FACTOR

#: The fixture scopes a file's tests share, which keep them on one worker.
SHARED_SCOPES = frozenset({"module", "package", "class"})


@pytest.hookimpl(trylast=True)  # after pytest-timeout has read its settings
def pytest_configure(config: pytest.Config) -> None:
    sys.dont_write_bytecode = False  # pytest's cache of rewritten test modules (above)
    timeout = getattr(config, "_env_timeout", None)
    given = config.getoption("timeout", None) is not None or os.environ.get("PYTEST_TIMEOUT")
    if timeout and not given:
        config._env_timeout = timeout * TIMEOUT_FACTOR  # type: ignore[attr-defined]
    if getattr(config.option, "dist", "no") == "load":  # -n without --dist
        config.option.dist = "loadgroup"
        # The groups in the collection's order (pytest_collection_modifyitems), not by size.
        config.option.loadscopereorder = False
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and workerinput.get("chemmy_dist") == "loadgroup":
        # A worker reads the command line, not the change above: it names the groups in
        # the test ids (what xdist does for --dist loadgroup) when told so.
        config.option.loadgroup = True


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Tell a worker how the tests are distributed (see :func:`pytest_configure`)."""
    node.workerinput["chemmy_dist"] = node.config.option.dist


def workers(config: pytest.Config) -> int:
    """The workers ``-n auto`` starts, measured on two cores: for the whole suite, half
    as many again as the cores this process may use (it mostly waits, but its browsers,
    server processes and the workers' own collection, ten seconds of CPU each, fill the
    cores: three workers beat two, and four only add contention); for the quick loop
    (``-m "not slow"``: tests that compute rather than wait), one per core."""
    cores = max(1, len(os.sched_getaffinity(0)))
    if "not slow" in (config.getoption("markexpr", "") or ""):
        return cores
    return max(2, cores + cores // 2)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist reads it
    return workers(config)


@pytest.hookimpl(tryfirst=True)  # before xdist names the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each file whose tests share a module-scoped fixture is an ``xdist_group`` (unless
    a test names its own); under xdist, the groups with a slow test come first."""
    shared = {item.path for item in items if SHARED_SCOPES & _scopes(item)}
    root = config.rootpath
    for item in items:
        if item.path in shared and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(str(item.path.relative_to(root))))
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # The longest first, so that no worker starts a long one as the others finish: a
        # group's length guessed from its slow tests, then from all its tests.
        slow: Counter[str] = Counter()
        size: Counter[str] = Counter()
        for item in items:
            size[_group(item)] += 1
            slow[_group(item)] += bool(item.get_closest_marker("slow"))
        # stable: the order kept within each
        items.sort(
            key=lambda item: (
                _group(item) != "elapsed",
                -slow[_group(item)],
                -size[_group(item)] if slow[_group(item)] else 0,
            )
        )


def _scopes(item: pytest.Item) -> set[str]:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return set()
    return {defs[-1].scope for defs in info.name2fixturedefs.values() if defs}


def _group(item: pytest.Item) -> str:
    """The unit xdist hands to one worker: the test's group, or the test itself."""
    mark = item.get_closest_marker("xdist_group")
    return item.nodeid if mark is None else str(mark.args[0] if mark.args else "default")


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    redis_server.start()
    redis_server.flush()
    return redis_server.url()


@pytest.fixture
def make_redis(tmp_path: Path) -> Iterator[Callable[..., RedisServer]]:
    made: list[RedisServer] = []

    def make(**options: str) -> RedisServer:
        server = RedisServer(tmp_path / f"redis-{len(made)}", **options)
        made.append(server)
        server.start()
        return server

    try:
        yield make
    finally:
        for server in made:
            server.stop()
