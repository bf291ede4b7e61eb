"""Redis with automatic failover in deploy/: deploy/sentinel.conf and deploy/redis-ha.conf,
the compose override (deploy/compose.ha.yaml) and the Kubernetes overlay
(deploy/kubernetes/sentinel/), parsed and checked against each other and against the
server's own reading of a ``redis+sentinel://`` URL (no Docker engine, no cluster)."""

from __future__ import annotations

import re
from typing import Any

import kubernetes_validate
import yaml
from deploy_files import DEPLOY, yaml_docs

from server.connect.redis import parse_sentinel_url

SENTINEL = DEPLOY / "kubernetes" / "sentinel"


def directives(text: str) -> dict[str, str]:
    """A Redis config's directives (the last of each name; ``sentinel X`` by ``X``)."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, _, value = line.partition(" ")
        if name == "sentinel":
            name, _, value = value.partition(" ")
            name = f"sentinel {name}"
        out[name] = value
    return out


def monitored(text: str) -> tuple[str, str, int, int]:
    service, host, port, quorum = directives(text)["sentinel monitor"].split()
    return service, host, int(port), int(quorum)


def test_the_sentinel_config_monitors_the_service_with_a_quorum_of_two() -> None:
    conf = directives((DEPLOY / "sentinel.conf").read_text())
    service, host, port, quorum = monitored((DEPLOY / "sentinel.conf").read_text())
    assert (service, host, port, quorum) == ("chemmy", "redis-0", 6379, 2)
    assert conf["port"] == "26379" and conf["sentinel resolve-hostnames"] == "yes"
    assert int(conf["sentinel down-after-milliseconds"].split()[1]) >= 1000
    ha = directives((DEPLOY / "redis-ha.conf").read_text())
    assert ha["min-replicas-to-write"] == "1" and ha["replica-serve-stale-data"] == "no"


def test_compose_runs_a_primary_two_replicas_and_three_sentinels() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.ha.yaml").read_text())
    services: dict[str, Any] = compose["services"]
    sentinels = sorted(s for s in services if s.startswith("sentinel-"))
    assert len(sentinels) == 3
    assert "redis-0" in services["redis"]["networks"]["default"]["aliases"]
    for name in ("redis-1", "redis-2"):
        command = services[name]["command"][-1]
        assert "--replicaof redis-0 6379" in command and "redis-ha.conf" in command, name
    assert "--replicaof" not in services["redis"]["command"][-1]
    for name in sentinels:
        entry = " ".join(services[name]["entrypoint"])
        assert "cp " in entry and "--sentinel" in entry  # a writable copy of its own
        assert services[name]["volumes"]
    for name in ("chemmy-1", "chemmy-2", "chemmy-3"):
        env = services[name]["environment"]
        target = parse_sentinel_url(env["CHEMMY_STORE"])
        assert sorted(h for h, _ in target.sentinels) == sentinels
        assert target.service == "chemmy" and env["CHEMMY_REDIS_MIN_REPLICAS"] == "1"
        assert set(services[name]["depends_on"]) == set(sentinels)
    assert compose["configs"]["sentinel-conf"]["file"] == "./sentinel.conf"


def overlay() -> dict[str, dict[str, Any]]:
    found = {}
    for path in sorted(SENTINEL.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        for doc in yaml_docs(path):
            found[f"{doc['kind']}/{doc['metadata']['name']}"] = doc
    return found


def test_the_kubernetes_overlay_is_valid_and_consistent() -> None:
    objects = overlay()
    for name, obj in objects.items():
        assert kubernetes_validate.validate(obj, "1.30", strict=True), name
    (kustomization,) = yaml_docs(SENTINEL / "kustomization.yaml")
    files = {p.name for p in SENTINEL.glob("*.yaml")} - {"kustomization.yaml"}
    assert sorted(kustomization["resources"]) == sorted(["../", *files])
    # The patch replaces the base Deployment's CHEMMY_STORE (env/3) with the sentinels.
    (base,) = [d for d in yaml_docs(DEPLOY / "kubernetes" / "deployment.yaml")]
    env = base["spec"]["template"]["spec"]["containers"][0]["env"]
    patch = next(p for p in kustomization["patches"] if p["target"]["kind"] == "Deployment")
    ops = yaml.safe_load(patch["patch"])
    replace = next(op for op in ops if op["op"] == "replace")
    index = int(replace["path"].rsplit("/", 1)[1])
    assert env[index]["name"] == replace["value"]["name"] == "CHEMMY_STORE"
    target = parse_sentinel_url(replace["value"]["value"])
    ((host, port),) = target.sentinels
    service = objects[f"Service/{host}"]["spec"]
    assert [p["port"] for p in service["ports"]] == [port]
    # The sentinels monitor redis-0 through the StatefulSet's headless Service.
    config = objects["ConfigMap/chemmy-redis-ha"]["data"]
    name, primary, _port, quorum = monitored(config["sentinel.conf"])
    assert name == target.service and quorum == 2
    statefulset = objects["StatefulSet/redis"]
    assert primary == f"redis-0.{statefulset['spec']['serviceName']}"
    assert statefulset["spec"]["replicas"] == 3
    # The data servers run deploy/'s settings.
    want = {**directives((DEPLOY / "redis.conf").read_text())}
    want.update(directives((DEPLOY / "redis-ha.conf").read_text()))
    got = directives(config["redis.conf"])
    for key in ("appendonly", "appendfsync", "maxmemory-policy", "min-replicas-to-write",
                "replica-serve-stale-data"):  # fmt: skip
        assert got[key] == want[key], key
    assert re.search(r"--replicaof", config["start-redis.sh"])
