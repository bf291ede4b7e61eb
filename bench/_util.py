"""Helpers for the benchmarks: /proc readings, percentiles, the machine, the docs section.

No third-party dependency (psutil is not assumed): CPU time and memory come from
``/proc/PID/stat`` and ``/proc/PID/status``. Processes are started with the test kit's
launcher (``tests.kit.launch``).
"""

from __future__ import annotations

import math
import os
import platform
import re
import resource
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def raise_nofile(want: int = 1 << 20) -> int:
    """Raise this process's open-file limit as far as the hard limit allows (children
    inherit it). Returns the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = min(want, hard) if hard != resource.RLIM_INFINITY else want
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (``/proc/PID/stat`` utime + stime)."""
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def run_seconds(pid: int) -> float:
    """CPU time of every thread of a process so far, to the nanosecond (the scheduler's
    ``/proc/PID/task/TID/schedstat``): utime+stime count in ticks of 10 ms, too coarse
    for an idle process over a window of seconds. A thread that ended is not counted."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, IndexError, ValueError):
            continue  # (a thread that ended meanwhile)
    return total / 1e9


def schedstat_wait(text: str) -> float:
    """The seconds a task has waited on a run queue for a CPU so far: the second field
    (``run_delay``, ns) of its ``schedstat`` (the first is the time it ran, the third
    how many times it ran)."""
    return int(text.split()[1]) / 1e9


def cpu_wait_seconds(pid: int, tid: int | None = None) -> float:
    """How long thread ``tid`` of process ``pid`` (its first thread by default: a
    server's event loop) has waited for a CPU so far (:func:`schedstat_wait`); 0 when
    the thread is gone or the kernel keeps no schedstat."""
    try:
        return schedstat_wait(Path(f"/proc/{pid}/task/{tid or pid}/schedstat").read_text())
    except (OSError, IndexError, ValueError):
        return 0.0


def node_pid(name: bytes | str) -> int:
    """The pid in a process's name on the bus (``server.bus.redis.node_name``:
    ``<host>-<pid>-<hex>``, the host may hold dashes), as a table's lease holds it."""
    text = name.decode() if isinstance(name, bytes) else name
    return int(text.rsplit("-", 2)[1])


def rss_kib(pid: int) -> int:
    """Resident set size of a process (``/proc/PID/status`` VmRSS), KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100), nearest-rank: the smallest value with at least q% of
    the values at or below it."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, math.ceil(q * len(ordered) / 100 - 1e-9) - 1))
    return ordered[rank]


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{cpu}, {os.cpu_count()} cores; Python {platform.python_version()}, "
        f"Linux {platform.release()}"
    )


def loadavg() -> str:
    """The machine's load average over 1, 5 and 15 minutes (``/proc/loadavg``)."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def load_line(start: str) -> str:
    """What the doc says of the machine's load: ``start`` (:func:`loadavg` when the run
    began) and now."""
    return (
        f"Load average (1, 5, 15 min): {start} when the run started, {loadavg()} at its end "
        "(the two cores are shared with other work)."
    )


def write_section(path: Path, section: str, body: str) -> None:
    """Put ``body`` (starting with the ``section`` heading) in the markdown file: replace
    that section if present, else append it. Every other section is kept as it is; the
    file is read just before it is written, since others append their own sections."""
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    pattern = re.compile(rf"^{re.escape(section)}\n.*?(?=^## |\Z)", re.S | re.M)
    block = body.rstrip() + "\n"
    if pattern.search(text):
        text = pattern.sub(lambda _m: block + "\n", text, count=1).rstrip() + "\n"
    else:
        text = text.rstrip() + "\n\n" + block
    path.write_text(text)


def write_benchmarks(section: str, body: str) -> None:
    """Write ``body`` as ``section`` of docs/benchmarks.md, and say so."""
    path = ROOT / "docs" / "benchmarks.md"
    write_section(path, section, body)
    print(f"\nwrote {path.relative_to(ROOT)}", file=sys.stderr)


__all__ = [
    "ROOT",
    "cpu_seconds",
    "load_line",
    "loadavg",
    "machine",
    "percentile",
    "raise_nofile",
    "rss_kib",
    "run_seconds",
    "write_benchmarks",
    "write_section",
]

if __name__ == "__main__":  # pragma: no cover
    sys.exit(
        "a helper module; run python -m bench.gateway (or bench.engine, bench.table, bench.store)"
    )
