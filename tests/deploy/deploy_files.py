"""Reading deploy/'s files for the tests: YAML documents, the nginx upstream servers,
systemd units, and the settings every process shares (deploy/chemmy.toml, read by the
server's own config loader)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from server.process.config import ServerConfig, load_config
from tests.kit.launch import ROOT

DEPLOY = ROOT / "deploy"

__all__ = ["DEPLOY", "shared_config", "unit", "upstream_blocks", "upstream_servers", "yaml_docs"]


def yaml_docs(path: Path) -> list[dict[str, Any]]:
    """Every document of a YAML file (each must be a mapping)."""
    with path.open() as file:
        docs = [doc for doc in yaml.safe_load_all(file) if doc is not None]
    assert docs and all(isinstance(d, dict) for d in docs), path
    return docs


def upstream_blocks(path: Path) -> dict[str, list[str]]:
    """Each ``upstream NAME { ... }`` block of an nginx file: its ``server HOST:PORT``
    addresses, in order."""
    blocks = re.findall(r"^upstream\s+(\S+)\s*\{(.*?)^\}", path.read_text(), re.M | re.S)
    return {name: re.findall(r"^\s*server\s+(\S+?)[\s;]", body, re.M) for name, body in blocks}


def upstream_servers(path: Path) -> list[str]:
    """The ``server HOST:PORT`` addresses of an nginx upstream file, the same in each of
    its blocks (the lobby's and the tables', deploy/nginx/chemmy.conf)."""
    blocks = upstream_blocks(path)
    assert blocks, path
    (servers, *others) = blocks.values()
    assert all(other == servers for other in others), f"{path}: the blocks differ: {blocks}"
    return servers


def unit(path: Path) -> dict[str, list[tuple[str, str]]]:
    """A systemd unit: section -> [(key, value)] in order (keys may repeat)."""
    sections: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] | None = None
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], [])
            continue
        assert current is not None, f"{path}: {raw!r} outside a section"
        key, sep, value = line.partition("=")
        assert sep, f"{path}: {raw!r}"
        current.append((key.strip(), value.strip()))
    return sections


def shared_config(path: Path = DEPLOY / "chemmy.toml", **env: str) -> ServerConfig:
    """A TOML settings file (deploy/chemmy.toml by default) as chemmy-server reads it,
    with the ``CHEMMY_*`` variables ``env``."""
    return load_config([], {"CHEMMY_CONFIG": str(path), **env})
