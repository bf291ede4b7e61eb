"""``scripts/cluster`` for real: Redis, three ``chemmy-server`` processes and nginx on
this machine; ``/readyz`` through nginx over TLS; a player through nginx; then SIGTERM
(as Ctrl-C would) stops everything it started, and nothing is left running."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from deploy_helpers import ROOT, cluster_script, tls_client_class

from tests.kit import scaled

pytestmark = pytest.mark.slow  # a server subprocess, a browser or a terminal: seconds each

READY = re.compile(r"chemmy cluster ready: (https://127\.0\.0\.1:(\d+)/)")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.xdist_group("elapsed")  # asserts how long it took: never beside another
async def test_scripts_cluster_starts_serves_and_stops(tmp_path: Path, nginx_program: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHEMMY_")}
    folder = tmp_path / "cluster"
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "scripts" / "cluster"), "--port", "0", "--http-port", "0",
         "--dir", str(folder), "--stop-timeout", str(scaled(3))],
        cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    out: list[str] = []
    err: list[str] = []
    ready = threading.Event()

    def pump(stream: object, lines: list[str]) -> None:
        for line in stream:  # type: ignore[attr-defined]
            lines.append(line.rstrip("\n"))
            if READY.search(line):
                ready.set()
        ready.set()

    pumps = [
        threading.Thread(target=pump, args=(proc.stdout, out), daemon=True),
        threading.Thread(target=pump, args=(proc.stderr, err), daemon=True),
    ]
    for thread in pumps:
        thread.start()
    children: list[int] = []
    try:
        assert await asyncio.to_thread(ready.wait, scaled(60)), "\n".join(out + err)
        children = [
            int(p)
            for p in subprocess.run(
                ["ps", "-o", "pid=", "--ppid", str(proc.pid)],
                capture_output=True, text=True, check=False,
            ).stdout.split()
        ]  # fmt: skip
        found = READY.search("\n".join(out))
        assert found is not None, "\n".join(out + err)
        url, port = found[1], int(found[2])
        script = cluster_script()
        ca = folder / "nginx" / "tls" / "ca.pem"
        tls = script.client_tls(ca)
        assert await asyncio.to_thread(script.http_status, url + "readyz", tls) == 200
        # Three servers, each its own port, all of them members of one cluster.
        line = next(x for x in out if "processes:" in x)
        listed = re.search(r"(\d+) chemmy-server on 127.0.0.1 ports ([\d, ]+)$", line)
        assert listed is not None, line
        ports = [int(p) for p in listed[2].split(", ")]
        assert int(listed[1]) == 3 and len(set(ports)) == 3
        for p in ports:
            assert (
                await asyncio.to_thread(script.http_status, f"http://127.0.0.1:{p}/readyz") == 200
            )
        # What the printed play line says works: a guest through nginx over TLS.
        assert f"chemmy play --guest --url wss://127.0.0.1:{port}/" in "\n".join(out)
        client = tls_client_class(tls)(f"wss://127.0.0.1:{port}/", "msgpack", label="guest")
        await client.open()
        reply = await client.hello(guest=True)
        assert reply["guest"] is True
        lobby = await client.call("tables")
        assert {t["table"] for t in lobby["tables"]} == {"t1", "t2", "t3"}
        await client.close()
        assert len(children) == 5, children  # redis, three servers, nginx

        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(proc.wait, scaled(60))
        for thread in pumps:
            thread.join(scaled(5))
        said = "\n".join(err)
        # nginx and Redis stop cleanly; each server drains and exits, or is killed after
        # --stop-timeout (a known problem of the cluster: docs/operations.md).
        assert "nginx exited with status 0" in said, said
        assert "redis exited with status 0" in said, said
        servers = re.findall(r"chemmy-(\d) (exited with status 0|killed)", said)
        assert sorted(n for n, _how in servers) == ["1", "2", "3"], said
        assert code == (0 if all(how != "killed" for _n, how in servers) else 1), said
        assert time.monotonic() - started < scaled(20)
        assert not [pid for pid in children if alive(pid)], "left running"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for thread in pumps:
            thread.join(scaled(5))
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        for pid in children:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_scripts_cluster_places_by_players_unless_told_otherwise() -> None:
    """deploy/nginx sends a table's connections to one process, so the script's servers
    place by players; a placement or a config file given (a flag after ``--``, or the
    environment) is the user's: a flag would outrank it, so none is added."""
    import importlib.machinery
    import importlib.util

    loader = importlib.machinery.SourceFileLoader(
        "scripts_cluster", str(ROOT / "scripts" / "cluster")
    )
    spec = importlib.util.spec_from_loader("scripts_cluster", loader)
    assert spec is not None
    script = importlib.util.module_from_spec(spec)
    loader.exec_module(script)
    assert script.placement_of([], {}) == ["--placement", "players"]
    assert script.placement_of(["--lease", "2"], {"HOME": "/"}) == ["--placement", "players"]
    for rest, env in (
        (["--placement", "hash"], {}),
        (["--placement=hash"], {}),
        (["--config", "my.toml"], {}),
        ([], {"CHEMMY_PLACEMENT": "hash"}),
        ([], {"CHEMMY_CONFIG": "my.toml"}),
    ):
        assert script.placement_of(rest, env) == [], (rest, env)
