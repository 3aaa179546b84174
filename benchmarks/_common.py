"""Helpers shared by benchmark scripts."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from virtbench.labs.lab_contract import LabState
    from virtbench.labs.net.guest_switch import VSwitchGuestsLab

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))


def virtbench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(REPO / ".venv" / "bin" / "virtbench"), *args], check=True,
                          capture_output=True, text=True)


def temp_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="vb-bench-"))


@contextlib.contextmanager
def linux_bridge_lab(workdir: Path) -> Iterator[LabState]:
    """The vswitch lab on the Linux bridge without background traffic, torn down on exit."""
    from virtbench.labs.net.vswitch import VSwitchLab
    from virtbench.targets.local import LocalTarget

    lab = VSwitchLab(None, workdir, LocalTarget())
    try:
        lab.up()
        yield lab.enter("bench", {"switch": "linux-bridge", "background_mbps": 0})
    finally:
        lab.down()


GUEST_SWITCHES = ("linux-bridge", "ovs", "ovs-dpdk")


@contextlib.contextmanager
def guest_switch_lab(offloads: bool = True) -> Iterator[tuple[VSwitchGuestsLab, Path]]:
    """The vswitch-guests lab (guests from the repository's image cache, OVS-DPDK's PMD
    sleeping up to 500 us when idle; ``offloads`` its param) and its scratch directory, both
    removed on exit."""
    from virtbench.labs.net.guest_switch import VSwitchGuestsLab, VSwitchGuestsParams
    from virtbench.targets.local import LocalTarget

    root = Path(tempfile.mkdtemp(prefix="vbgsw-bench-"))
    os.environ["VIRTBENCH_LAB_ROOT"] = str(root / "labs")
    lab = VSwitchGuestsLab(VSwitchGuestsParams(
        image_cache=str(REPO / ".cache" / "virtbench-guest" / "net-image"),
        dpdk_pmd_max_sleep_us=500, offloads=offloads), root, LocalTarget())
    try:
        lab.up()
        yield lab, root
    finally:
        lab.down()
        shutil.rmtree(root, ignore_errors=True)


REPORT_FORMATS = (("terminal table", ["-f", "table"]), ("JSON", ["-f", "json", "-o", "r.json"]),
                  ("CSV", ["-f", "csv", "-o", "r.csv"]),
                  ("HTML with charts", ["-f", "html", "-o", "r.html"]))
REPORT_FLOOR_S = 2.0


def _wall_and_cpu(argv: list[str], cwd: Path) -> tuple[float, float]:
    """The wall time of ``argv`` and its CPU time (user + system, its children included)."""
    import resource
    import time

    def used() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    cpu, start = used(), time.perf_counter()
    subprocess.run(argv, check=True, cwd=cwd, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - start, used() - cpu


def report_formats_table(db: str, workdir: Path, rounds: int = 5) -> str:
    """Markdown: `virtbench report` of ``db`` in every format, each a fresh process, against
    the reference (the sqlite3 command reading every sample's group and value: the least a
    report must read), in alternating rounds whose order rotates; median, min–max of the wall
    time, and the median CPU time (user + system): on a machine shared with other work the
    wall time grows with the load, the CPU time less (a helper to read a loaded run with)."""
    import os
    import statistics

    reference = ["sqlite3", db, "SELECT variant, workload_id, metric, value FROM samples"]
    commands = [("reference: `sqlite3` reads every sample", reference)] + [
        (label, [str(REPO / ".venv/bin/virtbench"), "report", "--store", db, *args])
        for label, args in REPORT_FORMATS]
    times: dict[str, list[float]] = {label: [] for label, _ in commands}
    cpu: dict[str, list[float]] = {label: [] for label, _ in commands}
    load_before = os.getloadavg()[0]
    for i in range(rounds):
        for label, argv in commands[i % len(commands):] + commands[:i % len(commands)]:
            wall, used = _wall_and_cpu(argv, workdir)
            times[label].append(wall)
            cpu[label].append(used)
    load_after = os.getloadavg()[0]
    ref = statistics.median(times[commands[0][0]])
    rows = []
    for label, _argv in commands:
        median = statistics.median(times[label])
        verdict = "" if label.startswith("reference") else (
            "MET" if median <= REPORT_FLOOR_S else "MISSED")
        rows.append(f"| {label} | {median:.2f} s ({min(times[label]):.2f}–"
                    f"{max(times[label]):.2f}) | {median / ref:.1f}× | "
                    f"{statistics.median(cpu[label]):.2f} s | {verdict} |")
    return (f"{rounds} rounds, the order rotating each round; load average (1 min) of the "
            f"shared 2-core machine {load_before:.1f} before, {load_after:.1f} after (the "
            "reference takes the same load: compare the ratios across runs). CPU: user + "
            "system time of the process (its children included), median.\n\n"
            "| command (fresh process) | wall, median (min–max) | ÷ reference | CPU, median | "
            f"wall ≤ {REPORT_FLOOR_S:g} s |\n|---|---|---|---|---|\n" + "\n".join(rows) + "\n")
