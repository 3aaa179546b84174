"""Noise preflight against a real CPU hog: stress-ng started here, stopped by its PID after."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from virtbench.cli.root import app
from virtbench.preflight import HostReader
from virtbench.preflight.ownership import RunProcesses, foreign_ticks

# A bound for a hang, not a speed: generous for a loaded 2-core machine.
pytestmark = pytest.mark.timeout(600)

SPEC = """\
name: preflight-strict
baseline: default
variants:
  - {name: default, knobs: {cpu_features: []}}
workloads:
  - {name: cpu.crc32c, params: {size_mib: 1, loops: 1}}
repetitions: 2
warmup: 0
"""


@pytest.fixture
def hog() -> Iterator[int]:
    if shutil.which("stress-ng") is None:
        pytest.skip("stress-ng is not installed (apt-get install stress-ng)")
    # Detached through a shell that exits at once: the hog is not our descendant, so it counts
    # as another process's load, as a neighbour's job would.
    out = subprocess.run(["sh", "-c", "setsid stress-ng --cpu 2 --timeout 120 "
                          ">/dev/null 2>&1 </dev/null & echo $!"],
                         check=True, capture_output=True, text=True, timeout=300)
    pid = int(out.stdout.strip())
    time.sleep(1.0)  # the workers fork and start spinning
    try:
        yield pid
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)  # setsid made it a group leader: its workers too
        for _ in range(100):
            if HostReader().process(pid) is None:
                break
            time.sleep(0.1)


def _descendants(pid: int) -> set[int]:
    procs = HostReader().processes()
    found, frontier = {pid}, [pid]
    while frontier:
        parent = frontier.pop()
        for info in procs.values():
            if info.ppid == parent and info.pid not in found:
                found.add(info.pid)
                frontier.append(info.pid)
    return found


def test_preflight_reports_the_hog_and_strict_refuses(hog: int, tmp_path: Path) -> None:
    # The hog's workers count as foreign load. Other jobs on a shared machine may be busier,
    # so the hog's own share is summed rather than expected among the top few.
    reader = HostReader()
    ours = RunProcesses(reader)
    before = reader.processes()
    time.sleep(1.0)
    after = reader.processes()
    hog_pids = _descendants(hog)
    used = foreign_ticks(before, after, ours.ours(after))
    hog_share = 100.0 * sum(t for info, t in used if info.pid in hog_pids) / reader.clock_ticks()
    assert hog_share > 15.0, [(i.comm, i.pid, t) for i, t in used[:8]]  # % of one CPU, ~1 s
    assert not hog_pids & ours.ours(after)  # detached: not this process's descendants

    env = {"VIRTBENCH_RUNS_DIR": str(tmp_path / "runs"), "XDG_CACHE_HOME": str(tmp_path)}
    result = CliRunner().invoke(app, ["preflight", "--json"], env=env)
    assert result.exit_code == 1, result.output
    checks = {c["name"]: c for c in json.loads(result.stdout)}
    assert checks["foreign_load"]["status"] == "fail"
    assert checks["foreign_load"]["number"] > 25.0

    spec = tmp_path / "exp.yaml"
    spec.write_text(SPEC)
    store = tmp_path / "store.db"
    result = CliRunner().invoke(app, ["run", str(spec), "--store", str(store), "--strict",
                                      "--quiet"], env=env)
    assert result.exit_code == 1, result.output
    assert "refusing to start" in result.output and "foreign_load" in result.output
    assert not store.exists() or "preflight-strict" not in store.read_bytes().decode("latin-1")


def test_short_trials_under_the_hog_are_marked_from_cheap_samples(hog: int,
                                                                   tmp_path: Path) -> None:
    # Real /proc, real trials of `true`: the per-trial notes see the hog (or a busier
    # neighbour) without scanning every process per trial.
    from virtbench.preflight import NoiseWatch, RunRegistry
    from virtbench.runner import Runner, RunRecord, build_plan
    from virtbench.spec import parse_experiment
    from virtbench.store import Store

    text = ("name: hog-trials\nworkloads: [{name: exec.command, params: {argv: [\"true\"]}}]\n"
            "repetitions: 300\nwarmup: 0\n")
    watch = NoiseWatch(registry=RunRegistry(tmp_path / "runs"), seconds=0.2,
                       between_seconds=0.2)
    store = Store(str(tmp_path / "store.db"))
    started = time.monotonic()
    with watch.registered("hog-trials"):
        outcome = Runner(build_plan(parse_experiment(text)), RunRecord.new(store, text),
                         workdir=tmp_path, noise=watch).run()
    seconds = time.monotonic() - started
    notes = [t["notes"] for t in store.trials(outcome.run_id)]
    late = notes[100:]  # past the first trials, whose windows are still short
    foreign = sorted(float(n["noise.foreign_cpu_pct"]) for n in late)
    assert foreign[len(foreign) // 2] > 25.0, foreign  # 2 hog workers on the host's CPUs
    assert all(float(n["noise.window_s"]) > 0 for n in late)
    # a full scan at the first trial, then at most one a second (the leftover stays high)
    assert watch.per_trial.full_scans <= 2 + seconds, (watch.per_trial.full_scans, seconds)
