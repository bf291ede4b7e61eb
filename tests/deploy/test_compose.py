"""deploy/compose.yaml, parsed (no Docker engine here): Redis with AOF, three
chemmy-server processes on it, nginx in front with deploy/nginx's config; the ports,
paths and timeouts agree with the other deploy files and the server's settings."""

from __future__ import annotations

import re
from typing import Any

import pytest
from deploy_files import DEPLOY, shared_config, upstream_servers, yaml_docs

COMPOSE = DEPLOY / "compose.yaml"
SERVERS = ("chemmy-1", "chemmy-2", "chemmy-3")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    (doc,) = yaml_docs(COMPOSE)
    return doc


def seconds(text: str) -> float:
    found = re.fullmatch(r"(\d+)s", text)
    assert found is not None, text
    return float(found[1])


def mounts(service: dict[str, Any]) -> dict[str, str]:
    """Bind mounts: container path -> host path (relative to compose.yaml)."""
    out = {}
    for volume in service.get("volumes", []):
        source, target, *_mode = volume.split(":")
        out[target] = source
    return out


def test_services_and_what_they_are_built_from(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert set(services) == {"redis", "nginx", *SERVERS}
    for name in SERVERS:
        build = services[name]["build"]
        assert (COMPOSE.parent / build["context"] / build["dockerfile"]).resolve() == (
            DEPLOY / "Dockerfile"
        )
    images = [s["image"] for s in services.values()]
    assert all(re.search(r":\d+\.\d+\.\d+", image) for image in images), images
    # Only nginx is reachable from outside.
    assert [n for n, s in services.items() if "ports" in s] == ["nginx"]


def test_redis_keeps_every_write(compose: dict[str, Any]) -> None:
    redis = compose["services"]["redis"]
    (config,) = redis["configs"]
    assert compose["configs"][config["source"]]["file"] == "./redis.conf"
    assert redis["command"][:2] == ["redis-server", config["target"]]
    conf = (DEPLOY / "redis.conf").read_text()
    assert re.search(r"^appendonly yes$", conf, re.MULTILINE)
    assert re.search(r"^appendfsync always$", conf, re.MULTILINE)
    assert re.search(r"^maxmemory-policy noeviction$", conf, re.MULTILINE)
    data = redis["command"][redis["command"].index("--dir") + 1]
    assert any(v.endswith(f":{data}") for v in redis["volumes"])
    assert redis["healthcheck"]["test"][-2:] == ["redis-cli", "ping"]


def test_servers_share_redis_and_outlast_their_drain(compose: dict[str, Any]) -> None:
    services = compose["services"]
    settings = shared_config()
    for name in SERVERS:
        server = services[name]
        env = server["environment"]
        assert env["CHEMMY_STORE"] == "redis://redis:6379/0"
        assert server["depends_on"]["redis"]["condition"] == "service_healthy"
        (config,) = server["configs"]
        assert env["CHEMMY_CONFIG"] == config["target"]
        assert compose["configs"][config["source"]]["file"] == "./chemmy.toml"
        # The settings a process starts with: the TOML file and this environment.
        loaded = shared_config(
            **{k: v for k, v in env.items() if k in ("CHEMMY_STORE", "CHEMMY_HOST", "CHEMMY_PORT")}
        )
        assert loaded.clustered and loaded.host == "0.0.0.0"
        assert seconds(server["stop_grace_period"]) > settings.drain_timeout
        assert "/readyz" in " ".join(server["healthcheck"]["test"])
        assert f"127.0.0.1:{loaded.port}" in " ".join(server["healthcheck"]["test"])
        assert server["expose"] == [str(loaded.port)]


def test_nginx_runs_deploys_config_against_these_servers(compose: dict[str, Any]) -> None:
    nginx = compose["services"]["nginx"]
    bound = mounts(nginx)
    site = bound["/etc/nginx/conf.d/default.conf"]
    assert (COMPOSE.parent / site).resolve() == DEPLOY / "nginx" / "chemmy.conf"
    upstream = COMPOSE.parent / bound["/etc/nginx/conf.d/chemmy-upstream.conf"]
    assert upstream_servers(upstream) == [f"{name}:8765" for name in SERVERS]
    # The certificate is mounted where chemmy.conf reads it.
    conf = (DEPLOY / "nginx" / "chemmy.conf").read_text()
    for directive in ("ssl_certificate", "ssl_certificate_key"):
        (path,) = re.findall(rf"^\s*{directive}\s+(\S+);", conf, re.MULTILINE)
        assert path in bound, directive
    # Published ports are chemmy.conf's listen ports.
    listens = sorted(re.findall(r"^\s*listen\s+(\d+)", conf, re.MULTILINE))
    assert sorted(p.split(":")[1] for p in nginx["ports"]) == listens
    assert {f"{p}:{p}" for p in listens} == set(nginx["ports"])
    assert all(nginx["depends_on"][n]["condition"] == "service_healthy" for n in SERVERS)


def test_every_file_compose_names_exists(compose: dict[str, Any]) -> None:
    named = [c["file"] for c in compose["configs"].values()]
    named += [
        source
        for service in compose["services"].values()
        for source in mounts(service).values()
        if source.startswith(".")
    ]
    missing = [n for n in named if not (COMPOSE.parent / n).exists() and not n.startswith("./tls/")]
    assert missing == [], missing
    # The certificate is the operator's: the README says where to put it.
    assert "deploy/tls" in COMPOSE.read_text()
