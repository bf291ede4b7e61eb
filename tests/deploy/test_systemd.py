"""deploy/systemd: one templated unit per process (the instance is the port), hardened,
stopping after the drain; the cluster drop-in starts after Redis without being stopped
by it. Checked by parsing, and by ``systemd-analyze verify`` where systemd is there."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from deploy_files import DEPLOY, shared_config, unit, upstream_servers, yaml_docs

SYSTEMD = DEPLOY / "systemd"
TEMPLATE = SYSTEMD / "chemmy@.service"
CLUSTER = SYSTEMD / "chemmy@.service.d" / "cluster.conf"


def values(section: list[tuple[str, str]], key: str) -> list[str]:
    return [v for k, v in section if k == key]


def one(section: list[tuple[str, str]], key: str) -> str:
    (value,) = values(section, key)
    return value


def test_one_templated_unit_per_port() -> None:
    assert sorted(p.name for p in SYSTEMD.iterdir()) == ["chemmy@.service", "chemmy@.service.d"]
    service = unit(TEMPLATE)["Service"]
    command = one(service, "ExecStart").split()
    assert command[0].endswith("/chemmy-server")
    assert command[command.index("--port") + 1] == "%i"
    assert command[command.index("--host") + 1] == "127.0.0.1", "behind nginx only"
    environment = dict(v.split("=", 1) for v in values(service, "Environment"))
    assert environment["CHEMMY_CONFIG"] == "/etc/chemmy/chemmy.toml"
    # The upstream nginx uses on such a host is the instances' ports.
    ports = [a.split(":")[1] for a in upstream_servers(DEPLOY / "nginx" / "chemmy-upstream.conf")]
    text = TEMPLATE.read_text()
    assert all(f"chemmy@{port}" in text for port in ports), ports
    (prometheus,) = yaml_docs(DEPLOY / "prometheus" / "prometheus.yml")
    (host_job,) = [j for j in prometheus["scrape_configs"] if j["job_name"] == "chemmy"]
    assert host_job["static_configs"][0]["targets"] == [f"127.0.0.1:{p}" for p in ports]


def test_stops_after_the_drain_and_restarts_on_failure() -> None:
    service = unit(TEMPLATE)["Service"]
    assert one(service, "KillSignal") == "SIGTERM"
    assert float(one(service, "TimeoutStopSec")) > shared_config().drain_timeout
    assert one(service, "Restart") == "on-failure"
    assert unit(TEMPLATE)["Install"] == [("WantedBy", "multi-user.target")]


def test_hardened() -> None:
    service = dict(unit(TEMPLATE)["Service"])
    assert service["User"] not in ("", "root")
    expected = {
        "NoNewPrivileges": "true",
        "ProtectSystem": "strict",
        "ProtectHome": "true",
        "PrivateTmp": "true",
        "PrivateDevices": "true",
        "CapabilityBoundingSet": "",
        "RestrictSUIDSGID": "true",
        "RestrictNamespaces": "true",
        "LockPersonality": "true",
        "UMask": "0077",
    }
    assert {k: service.get(k) for k in expected} == expected
    assert set(service["RestrictAddressFamilies"].split()) == {"AF_INET", "AF_INET6", "AF_UNIX"}
    # The only place it writes: its state directory.
    assert service["StateDirectory"] == "chemmy"
    assert service["WorkingDirectory"] == "/var/lib/chemmy"


def test_cluster_drop_in_needs_redis_but_survives_its_restart() -> None:
    drop_in = unit(CLUSTER)
    assert values(drop_in["Unit"], "After") == ["redis-server.service"]
    assert values(drop_in["Unit"], "Wants") == ["redis-server.service"]
    assert not values(drop_in["Unit"], "Requires") and not values(drop_in["Unit"], "BindsTo")
    (store,) = values(drop_in["Service"], "Environment")
    key, _, url = store.partition("=")
    assert key == "CHEMMY_STORE"
    assert shared_config(CHEMMY_STORE=url).clustered


def test_systemd_accepts_the_unit(tmp_path: Path) -> None:
    """``systemd-analyze verify`` on an instance of the template, with a program that
    exists here in place of chemmy-server (it checks that the program exists)."""
    analyze = shutil.which("systemd-analyze")
    text = TEMPLATE.read_text()
    assert "ExecStart=/usr/local/bin/chemmy-server" in text
    if analyze is None:  # no systemd on this machine: the parsing tests above stand
        return
    instance = tmp_path / "chemmy@8765.service"
    instance.write_text(text.replace("/usr/local/bin/chemmy-server", "/bin/true"))
    done = subprocess.run(
        [analyze, "verify", str(instance)], capture_output=True, text=True, check=False
    )
    problems = [line for line in done.stderr.splitlines() if str(instance.name) in line]
    assert done.returncode == 0 and not problems, done.stderr
