"""deploy/prometheus: the scrape example and the alert rules name metrics the server
really exports (server/process/metrics.py), with the suffixes Prometheus gives them."""

from __future__ import annotations

import re
from typing import Any

from deploy_files import DEPLOY, upstream_servers, yaml_docs

from server.process.metrics import Metrics

RULES = DEPLOY / "prometheus" / "chemmy-alerts.yml"


def exported() -> set[str]:
    """Every series name a server exports (labelled ones included, before any label)."""
    names = set()
    for family in Metrics().registry.collect():
        kind = family.type
        if kind == "counter":
            names |= {f"{family.name}_total", f"{family.name}_created"}
        elif kind == "histogram":
            names |= {f"{family.name}_{s}" for s in ("bucket", "sum", "count", "created")}
        else:
            names.add(family.name)
    return names


def rules() -> list[dict[str, Any]]:
    (doc,) = yaml_docs(RULES)
    return [rule for group in doc["groups"] for rule in group["rules"]]


def test_alerts_use_metrics_the_server_exports() -> None:
    known = exported()
    used = {name for rule in rules() for name in re.findall(r"\bchemmy_\w+", rule["expr"])}
    assert used and used <= known, used - known
    # The six the operations doc asks for are there.
    for metric in (
        "chemmy_fanout_seconds_bucket",
        "chemmy_refused_total",
        "chemmy_store_errors_total",
        "chemmy_bus_lag_seconds_bucket",
        "chemmy_loop_lag_seconds_bucket",
        "chemmy_lease_changes",
    ):
        assert metric in used, metric
    assert any('code="busy"' in rule["expr"] for rule in rules())


def test_every_alert_is_complete() -> None:
    names = [rule["alert"] for rule in rules()]
    assert len(names) == len(set(names))
    for rule in rules():
        assert rule["labels"]["severity"] in ("page", "warn", "info"), rule["alert"]
        assert rule["annotations"]["summary"], rule["alert"]
        assert rule["expr"].count("(") == rule["expr"].count(")"), rule["alert"]
        if "for" in rule:
            assert re.fullmatch(r"\d+[sm]", rule["for"]), rule["alert"]


def test_scrape_example_reaches_every_process_directly() -> None:
    (config,) = yaml_docs(DEPLOY / "prometheus" / "prometheus.yml")
    assert config["rule_files"] == [RULES.name]
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    compose = jobs["chemmy-compose"]["static_configs"][0]["targets"]
    assert compose == upstream_servers(DEPLOY / "compose" / "chemmy-upstream.conf")
    kubernetes = jobs["chemmy-kubernetes"]
    assert kubernetes["kubernetes_sd_configs"][0]["namespaces"]["names"] == ["chemmy"]
    assert all(job.get("metrics_path", "/metrics") == "/metrics" for job in jobs.values())
