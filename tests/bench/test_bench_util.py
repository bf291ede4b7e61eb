"""bench/_util.py: the section writer every benchmark shares, and the percentile."""

from __future__ import annotations

import os
from pathlib import Path

from bench._util import cpu_wait_seconds, percentile, schedstat_wait, write_section


def test_a_section_is_replaced_in_place_and_the_others_kept(tmp_path: Path) -> None:
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\n## One (a)\n\nold one\n\n## Two (b)\n\ntwo\n")
    write_section(doc, "## One (a)", "## One (a)\n\nnew one\n")
    text = doc.read_text()
    assert "old one" not in text
    assert text.index("new one") < text.index("## Two (b)")
    assert text.endswith("## Two (b)\n\ntwo\n")


def test_a_new_section_is_appended(tmp_path: Path) -> None:
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\n## One (a)\n\none\n")
    write_section(doc, "## Cluster (c)", "## Cluster (c)\n\nthree\n")
    write_section(doc, "## Cluster (c)", "## Cluster (c)\n\nthree again\n")
    text = doc.read_text()
    assert text.count("## Cluster (c)") == 1
    assert text.index("## One (a)") < text.index("## Cluster (c)")
    assert text.endswith("three again\n")


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(100, 0, -1)]  # 100 .. 1, unsorted on purpose
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99) == 99.0
    assert percentile(values, 100) == 100.0
    assert percentile([7.0], 99) == 7.0
    assert percentile([], 50) != percentile([], 50)  # nan: no samples


def test_a_threads_wait_for_a_cpu_is_schedstats_second_field_in_seconds() -> None:
    # (ran 12.5 s, waited 1.25 s, 4,242 times on a CPU)
    assert schedstat_wait("12500000000 1250000000 4242\n") == 1.25
    assert schedstat_wait("0 0 0") == 0.0
    # This thread's own figure is read from its schedstat, not the fallback's 0 (a kernel
    # that keeps none would make every run's wait read 0: the bench would say "quiet").
    stat = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/schedstat")
    mine = cpu_wait_seconds(os.getpid())
    assert mine <= schedstat_wait(stat.read_text())
    assert cpu_wait_seconds(os.getpid(), os.getpid()) >= mine
    assert cpu_wait_seconds(2**22 + 12345) == 0.0  # (no such process)
