"""What a `virtbench` command costs before it does anything: CPU time of a fresh process, beside
the bare interpreter (`python3 -c pass`) measured in the same rounds, alternating.

Floors (issue 35): `--help` and `run FILE --check` of a CPU experiment at most 0.35 s of CPU
more than the bare interpreter; `runs` of a small SQLite store (two variants × 5 repetitions,
twice: the smallest a report is made of in earnest) at most 0.6 s more, `report` of it at most
1.5 s more (it may pay SciPy's import for its statistics, not matplotlib's for a terminal table).
The reference is the interpreter itself: nothing a user could pick starts a Python program for
less. CPU time (user + system of the child, from wait4) rather than wall time, since the
machine is shared; the median of ROUNDS rounds and its min–max are given. The tree is
byte-compiled first (only stale files), as an installed package is.

Run: .venv/bin/python benchmarks/cli_startup.py (in a checkout without a .venv: PYTHONPATH=src
ANY/.venv/bin/python benchmarks/cli_startup.py, which runs `python -m virtbench`)
"""

from __future__ import annotations

import compileall
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
from pathlib import Path

from _common import REPO, temp_dir
from record import record

ROUNDS = 7
_VENV = REPO / ".venv" / "bin"
# A checkout without a .venv of its own (a git worktree run with another checkout's interpreter
# and PYTHONPATH=src) starts the same entry point as `python -m virtbench`.
PYTHON = str(_VENV / "python") if (_VENV / "python").exists() else sys.executable
VIRTBENCH = ([str(_VENV / "virtbench")] if (_VENV / "virtbench").exists()
             else [PYTHON, "-m", "virtbench"])
CPU_SPEC = "name: cpu\nworkloads:\n  - {name: cpu.crc32c, params: {size_mib: 1}}\n"


def _cpu_s(argv: list[str]) -> float:
    """User + system CPU seconds of one fresh process (and anything it waited for)."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _pid, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}")
    return usage.ru_utime + usage.ru_stime


def _small_store(work: Path) -> Path:
    """A store with two complete runs of a CPU experiment of two variants × 5 repetitions: the
    smallest a report is made of in earnest (confidence intervals, a speedup and its interval,
    a significance test between the variants; `compare` has two runs)."""
    spec = work / "cpu.yaml"
    spec.write_text(CPU_SPEC.replace("size_mib: 1", "size_mib: 1, loops: 1")
                    + "repetitions: 5\nwarmup: 0\nvariants:\n  - {name: a}\n  - {name: b}\n")
    store = work / "small.db"
    for _ in range(2):
        subprocess.run([*VIRTBENCH, "run", str(spec), "--store", str(store), "--quiet"],
                       check=True, capture_output=True, timeout=600)
    return store


def _run_ids(store: Path) -> list[str]:
    """The store's run ids, oldest first."""
    with sqlite3.connect(store) as db:
        return [row[0] for row in db.execute("SELECT id FROM runs ORDER BY started_at")]


def main() -> None:
    # The start-up of a compiled tree, as an installed package's is: where
    # PYTHONDONTWRITEBYTECODE is set, a module changed since the install (a merge) would
    # otherwise be compiled again by every process measured (82 such modules cost `run FILE
    # --check` a seventh more instructions). Only stale byte-code is rewritten.
    compileall.compile_dir(str(REPO / "src" / "virtbench"), quiet=1)
    work = temp_dir()
    try:
        spec = work / "check.yaml"
        spec.write_text(CPU_SPEC)
        store = _small_store(work)
        commands = {
            "`virtbench --help`": ([*VIRTBENCH, "--help"], 0.35),
            "`virtbench run FILE --check` (cpu.crc32c)":
                ([*VIRTBENCH, "run", str(spec), "--check", "--store", str(work / "c.db")], 0.35),
            "`virtbench runs` (small SQLite store)":
                ([*VIRTBENCH, "runs", "--store", str(store)], 0.6),
            "`virtbench report` (small SQLite store)":
                ([*VIRTBENCH, "report", "--store", str(store)], 1.5),
            "`virtbench compare BASE NEW` (its two runs)":
                ([*VIRTBENCH, "compare", *_run_ids(store), "--store", str(store)], None),
        }
        bare: list[float] = []
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(ROUNDS):
            for name, (argv, _floor) in commands.items():
                bare.append(_cpu_s([PYTHON, "-c", "pass"]))
                times[name].append(_cpu_s(argv))
        bare_median = statistics.median(bare)
        rows = [f"| `python -c pass` (reference) | {bare_median:.3f} s "
                f"({min(bare):.3f}–{max(bare):.3f}) | — | — |"]
        for name, (_argv, floor) in commands.items():
            got = times[name]
            beyond = statistics.median(got) - bare_median
            verdict = ("none set here (decide_speed.py: ≤ 1.2 s wall at 2 × 100,000 samples)"
                       if floor is None
                       else f"≤ +{floor:g} s: {'meets' if beyond <= floor else 'misses'}")
            rows.append(f"| {name} | {statistics.median(got):.3f} s ({min(got):.3f}–"
                        f"{max(got):.3f}) | +{beyond:.3f} s | {verdict} |")
        load = os.getloadavg()[0]
        body = (
            f"CPU time (user + system) of a fresh process, median of {ROUNDS} rounds (min–max); "
            "each command alternates with the bare interpreter in the same round. Load average "
            f"(1 min) at the end: {load:.1f} on {os.cpu_count()} CPUs. The small store: two "
            "complete runs of cpu.crc32c, two variants × 5 repetitions each (intervals, a "
            "speedup with its interval and a significance test in every report).\n\n"
            "| command | CPU time | beyond the interpreter | floor |\n|---|---:|---:|---|\n"
            + "\n".join(rows) + "\n")
        print(body)
        record("cli: start-up", ".venv/bin/python benchmarks/cli_startup.py", body)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
