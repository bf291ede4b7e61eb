"""``chemmy play`` as a real terminal program, driven through tmux: the lobby appears,
Enter opens a table, ``q`` quits with status 0."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow  # a server subprocess, a browser or a terminal: seconds each

ROOT = Path(__file__).resolve().parents[2]
TMUX = shutil.which("tmux")


class Tmux:
    """One detached tmux server on its own socket, with one fixed-size session."""

    def __init__(self) -> None:
        # Never skipped: ./scripts/test installs tmux when the machine lacks it.
        assert TMUX is not None, "tmux is not installed (./scripts/test installs it)"
        self.socket = f"chemmy-test-{uuid.uuid4().hex[:8]}"
        self.base = [TMUX, "-L", self.socket, "-f", "/dev/null"]

    def run(self, *args: str) -> str:
        proc = subprocess.run([*self.base, *args], capture_output=True, text=True, timeout=10)
        return proc.stdout

    def start(self, command: str, *, width: int = 120, height: int = 40) -> None:
        subprocess.run(
            [
                *self.base,
                "new-session",
                "-d",
                "-s",
                "play",
                "-x",
                str(width),
                "-y",
                str(height),
                command,
            ],
            check=True,
            timeout=10,
        )

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "play")

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", "play", *keys)

    def wait_for(self, *texts: str, timeout: float = 20.0) -> str:
        end = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < end:
            screen = self.screen()
            if all(t in screen for t in texts):
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{texts} not on the screen:\n{screen}")

    def kill(self) -> None:
        subprocess.run([*self.base, "kill-server"], capture_output=True, timeout=10)


def test_play_in_a_real_terminal(chemmy_server: Any) -> None:
    tmux = Tmux()
    env = f"-u COLUMNS -u LINES PYTHONPATH={ROOT} TERM=xterm-256color"
    command = (
        f"cd {ROOT} && env {env} {sys.executable} -m client_cli play --url {chemmy_server.url} "
        "--guest --name Tmux; echo EXITED $?; sleep 30"
    )
    try:
        tmux.start(f"bash -c '{command}'")
        screen = tmux.wait_for("CHEMMY", "choose a table", "Lobby only", "100.00-10,000.00")
        assert "guest Tmux" in tmux.wait_for("guest Tmux")
        assert "Quit" in screen
        tmux.keys("Enter")  # the first table
        tmux.wait_for("SEATS", "ROADS", "Bead plate", "PLAYER (p)", "● connected")
        tmux.keys("?")
        tmux.wait_for("Chemmy: the rules in short")
        tmux.keys("Escape")
        tmux.wait_for("SEATS")
        tmux.keys("q")
        tmux.wait_for("EXITED 0")
    finally:
        tmux.kill()
