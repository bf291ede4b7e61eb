"""deploy/kubernetes, parsed and checked against Kubernetes' own schemas
(``kubernetes-validate``, strict) and against each other: the ports, probes, the grace
period against the drain, the Secret and the ConfigMap the Deployment uses, Redis as an
external dependency, the Ingress's WebSocket timeouts."""

from __future__ import annotations

import ipaddress
import re
import tomllib
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
from deploy_files import DEPLOY, shared_config, yaml_docs

K8S = DEPLOY / "kubernetes"
VERSION = "1.30"  # the oldest Kubernetes these manifests are for


def manifests() -> dict[str, dict[str, Any]]:
    """Every object, by ``Kind/name``."""
    found = {}
    for path in sorted(K8S.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        for doc in yaml_docs(path):
            found[f"{doc['kind']}/{doc['metadata']['name']}"] = doc
    return found


@pytest.fixture(scope="module")
def objects() -> dict[str, dict[str, Any]]:
    return manifests()


@pytest.fixture(scope="module")
def pod(objects: dict[str, dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = objects["Deployment/chemmy"]["spec"]["template"]["spec"]
    return spec


@pytest.fixture(scope="module")
def container(pod: dict[str, Any]) -> dict[str, Any]:
    (only,) = pod["containers"]
    return dict(only)


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_every_object_is_valid_kubernetes(objects: dict[str, dict[str, Any]]) -> None:
    for name, obj in objects.items():
        assert kubernetes_validate.validate(obj, VERSION, strict=True), name


def test_kustomization_lists_every_file() -> None:
    (kustomization,) = yaml_docs(K8S / "kustomization.yaml")
    files = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert sorted(kustomization["resources"]) == sorted(files)
    assert kustomization["namespace"] == "chemmy"


def test_probes_and_ports(container: dict[str, Any], objects: dict[str, dict[str, Any]]) -> None:
    (port,) = container["ports"]
    env = env_of(container)
    assert env["CHEMMY_PORT"] == str(port["containerPort"]) and env["CHEMMY_HOST"] == "0.0.0.0"
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": port["name"]}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": port["name"]}
    assert container["startupProbe"]["httpGet"]["path"] == "/healthz"
    service = objects["Service/chemmy"]["spec"]
    (sport,) = service["ports"]
    assert sport["targetPort"] == port["name"]
    labels = objects["Deployment/chemmy"]["spec"]["template"]["metadata"]["labels"]
    assert service["selector"].items() <= labels.items()
    assert "sessionAffinity" not in service, "any pod serves any player"
    annotations = objects["Deployment/chemmy"]["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/port"] == str(port["containerPort"])
    assert annotations["prometheus.io/path"] == "/metrics"


def test_grace_period_outlasts_the_drain(pod: dict[str, Any], container: dict[str, Any]) -> None:
    settings = shared_config()
    pre_stop = container["lifecycle"]["preStop"]["exec"]["command"]
    assert pre_stop[0] == "sleep"
    assert pod["terminationGracePeriodSeconds"] > settings.drain_timeout + float(pre_stop[1])


def test_config_secret_and_redis(
    objects: dict[str, dict[str, Any]],
    pod: dict[str, Any],
    container: dict[str, Any],
    tmp_path: Path,
) -> None:
    env = env_of(container)
    # The JWT key comes from the Secret.
    ref = env["CHEMMY_JWT_SECRET"]["secretKeyRef"]
    secret = objects[f"Secret/{ref['name']}"]
    assert ref["key"] in secret["stringData"]
    assert len(secret["stringData"][ref["key"]].encode()) >= 32
    # The TOML comes from the ConfigMap, mounted where CHEMMY_CONFIG says.
    (config_volume,) = [v for v in pod["volumes"] if "configMap" in v]
    config_map = objects[f"ConfigMap/{config_volume['configMap']['name']}"]
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == config_volume["name"]]
    directory, _, key = env["CHEMMY_CONFIG"].rpartition("/")
    assert directory == mount["mountPath"] and key in config_map["data"]
    # ... and it is deploy/chemmy.toml, as the server reads it with the pod's variables.
    toml = config_map["data"][key]
    assert tomllib.loads(toml) == tomllib.loads((DEPLOY / "chemmy.toml").read_text())
    (tmp_path / key).write_text(toml)
    loaded = shared_config(
        tmp_path / key,
        CHEMMY_STORE=env["CHEMMY_STORE"],
        CHEMMY_JWT_SECRET=secret["stringData"][ref["key"]],
        CHEMMY_PLACEMENT=env["CHEMMY_PLACEMENT"],
    )
    assert loaded.clustered and loaded.auth_enabled
    # Its Ingress does not route by table: tables placed by hash, not by players.
    assert loaded.placement == "hash" and shared_config().placement == "players"
    # Redis is external, named by a Service the store URL uses.
    found = re.fullmatch(r"redis://([\w.-]+):(\d+)/\d+", env["CHEMMY_STORE"])
    assert found is not None
    redis = objects[f"Service/{found[1]}"]["spec"]
    assert redis["type"] == "ExternalName"
    assert [p["port"] for p in redis["ports"]] == [int(found[2])]


def test_pod_runs_unprivileged_with_resources(
    pod: dict[str, Any], container: dict[str, Any]
) -> None:
    assert pod["securityContext"]["runAsNonRoot"] is True
    security = container["securityContext"]
    assert security["allowPrivilegeEscalation"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["capabilities"]["drop"] == ["ALL"]
    requests = container["resources"]["requests"]
    assert {"cpu", "memory"} <= set(requests)
    assert "memory" in container["resources"]["limits"]


def test_rollout_and_disruptions_keep_players_served(objects: dict[str, dict[str, Any]]) -> None:
    deployment = objects["Deployment/chemmy"]["spec"]
    assert deployment["replicas"] >= 3
    assert deployment["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    pdb = objects["PodDisruptionBudget/chemmy"]["spec"]
    assert pdb["maxUnavailable"] == 1
    assert pdb["selector"]["matchLabels"] == deployment["selector"]["matchLabels"]


def test_ingress_carries_websockets_and_hides_metrics(
    objects: dict[str, dict[str, Any]], container: dict[str, Any]
) -> None:
    source = (DEPLOY.parent / "server" / "gateway" / "server.py").read_text()
    interval = int(re.findall(r"ping_interval=(\d+)", source)[0])
    timeout = int(re.findall(r"ping_timeout=(\d+)", source)[0])
    ingress = objects["Ingress/chemmy"]
    notes = ingress["metadata"]["annotations"]
    for name in ("proxy-read-timeout", "proxy-send-timeout"):
        assert int(notes[f"nginx.ingress.kubernetes.io/{name}"]) > interval + timeout
    assert "http_503" in notes["nginx.ingress.kubernetes.io/proxy-next-upstream"]
    (rule,) = ingress["spec"]["rules"]
    (path,) = rule["http"]["paths"]
    assert path["path"] == "/" and path["backend"]["service"]["name"] == "chemmy"
    assert path["backend"]["service"]["port"]["name"] == container["ports"][0]["name"]
    assert ingress["spec"]["tls"][0]["hosts"] == [rule["host"]]
    closed = objects["Ingress/chemmy-metrics-closed"]
    (metrics,) = closed["spec"]["rules"][0]["http"]["paths"]
    assert (metrics["path"], metrics["pathType"]) == ("/metrics", "Exact")
    allowed = closed["metadata"]["annotations"][
        "nginx.ingress.kubernetes.io/whitelist-source-range"
    ]
    assert allowed == "127.0.0.1/32"


def test_ingress_serves_the_operator_paths_to_private_networks_only(
    objects: dict[str, dict[str, Any]],
) -> None:
    """/operator/ (rounds, voids, transfers, limits) is the operator's, not the internet's
    (docs/operations.md), as in deploy/nginx: its own Ingress, private ranges only."""
    private = objects["Ingress/chemmy-operator-private"]
    (rule,) = private["spec"]["rules"]
    (path,) = rule["http"]["paths"]
    assert (path["path"], path["pathType"]) == ("/operator/", "Prefix")
    assert rule["host"] == objects["Ingress/chemmy"]["spec"]["rules"][0]["host"]
    allowed = private["metadata"]["annotations"][
        "nginx.ingress.kubernetes.io/whitelist-source-range"
    ].split(",")
    networks = [ipaddress.ip_network(n) for n in allowed]
    assert networks and all(n.is_private for n in networks)
