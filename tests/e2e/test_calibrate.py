"""`virtbench calibrate` end to end on a tiny real experiment (exec.command running `true`):
A/A runs of the baseline variant only, opened first and measured in interleaved blocks,
stored as normal runs tagged as calibration runs; a noise profile that `compare` of two later
runs of the same file then uses; --budget; Ctrl-C and --resume."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest
from waits import finish, kill

from virtbench.store import Store

# A bound for a hang, not a speed: generous for a loaded 2-core machine.
pytestmark = pytest.mark.timeout(300)
HANG_S = 240.0

SPEC = """\
name: e2e-calibrate
seed: 3
baseline: a
variants: [{name: a}, {name: b}]
workloads:
  - {name: exec.command, params: {argv: ["true"]}}
repetitions: 4
warmup: 0
"""
VIRTBENCH = [sys.executable, "-m", "virtbench.cli"]


def _env(cwd: Path) -> dict[str, str]:
    # PYTHONPATH passes on: a worktree's sources tested with a shared virtualenv
    return {"PATH": "/usr/bin:/bin", "XDG_CACHE_HOME": str(cwd / "cache"), "COLUMNS": "100",
            **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"}}


def _virtbench(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*VIRTBENCH, *args], cwd=cwd, capture_output=True, text=True,
                          env=_env(cwd), timeout=HANG_S)


def test_calibrate_interleaves_its_runs_and_stores_a_profile_that_compare_uses(
        tmp_path: Path) -> None:
    (tmp_path / "exp.yaml").write_text(SPEC)
    done = _virtbench("calibrate", "exp.yaml", "--runs", "3", "--block-rounds", "2",
                      "--detect", "5", "--json", "--quiet", "--store", "store.db", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    profile = document["profile"]
    assert len(profile["run_ids"]) == 3 and profile["variant"] == "a"
    (row,) = document["rows"]
    assert row["metric"] == "wall_time_s" and row["unit"] == "s" and row["scale"] == "log"
    assert row["runs"] == 3 and row["values"] == 12 and row["within_sd_pct"] > 0
    assert [d["runs_per_side"] for d in row["detectable_pct"]] == [1, 2, 4]
    assert row["detect"]["pct"] == 5 and row["detect"]["runs_per_side_at_n"] >= 1
    assert "noise profile" in done.stderr and "calibration block 2: runs" in done.stderr

    calibration = document["calibration"]
    blocks = calibration["blocks_run"]
    assert [b["block"] for b in blocks] == [1, 2]  # 4 repetitions, 2 rounds per block
    assert all(sorted(b["runs"]) == [1, 2, 3] for b in blocks)
    store = Store(str(tmp_path / "store.db"))
    trials = []
    for index, run_id in enumerate(profile["run_ids"], 1):
        info = store.run(run_id)
        assert info.status == "complete" and info.calibration == calibration["id"]
        assert info.description.startswith(f"calibration run {index}/3 (A/A")
        assert [name for name, _knobs, _base in store.variants(run_id)] == ["a"]
        trials += [(t["started_at"], index, t["repetition"]) for t in store.trials(run_id)]
    store.close()
    # In time, the trials go block by block, each run's two rounds in the block's order: the
    # runs interleave instead of following each other.
    timeline = [(index, repetition) for _t, index, repetition in sorted(trials)]
    expected = [(index, 2 * block + r) for block, b in enumerate(blocks) for index in b["runs"]
                for r in range(2)]
    assert timeline == expected

    ids = []
    for _ in range(2):  # two normal runs of the same file: compare finds the profile
        assert _virtbench("run", "exp.yaml", "--quiet", "--store", "store.db",
                          cwd=tmp_path).returncode == 0
        with closing(Store(str(tmp_path / "store.db"))) as store:
            ids.append(store.run("latest").id)
    done = _virtbench("compare", *ids, "--store", "store.db", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    model = json.loads(done.stdout)["variance_model"]
    assert model["kind"] == "profile" and model["profile_runs"] == 3


def test_budget_stops_starting_blocks_after_two_rounds_per_run(tmp_path: Path) -> None:
    (tmp_path / "exp.yaml").write_text(SPEC)
    done = _virtbench("calibrate", "exp.yaml", "--runs", "2", "--budget", "0.001", "--json",
                      "--quiet", "--store", "store.db", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    flat = " ".join(done.stderr.split())
    assert "--budget 0.001 s: stopped after 2 block(s)" in flat
    document = json.loads(done.stdout)
    assert document["stopped"].startswith("--budget 0.001 s: stopped after 2 block(s)")
    assert document["rows"][0]["values"] == 4  # two rounds of each of the two runs
    store = Store(str(tmp_path / "store.db"))
    for run_id in document["profile"]["run_ids"]:
        info = store.run(run_id)
        assert info.status == "complete" and "--budget 0.001 s" in info.stop_reason
    store.close()


def _stored_trials(db: Path) -> int:
    """Trials in the store, read-only: never create or migrate the schema under the child."""
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
            return int(conn.execute("SELECT count(*) FROM trials").fetchone()[0])
    except sqlite3.OperationalError:  # no trials table yet
        return 0


def test_ctrl_c_leaves_no_run_running_and_resume_completes_the_calibration(
        tmp_path: Path) -> None:
    (tmp_path / "exp.yaml").write_text(SPEC)
    db = tmp_path / "store.db"
    out, err = tmp_path / "calibrate.stdout", tmp_path / "calibrate.stderr"
    with out.open("w") as stdout, err.open("w") as stderr:
        child = subprocess.Popen(
            [*VIRTBENCH, "calibrate", "exp.yaml", "--runs", "2", "--store", "store.db"],
            cwd=tmp_path, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL,
            env=_env(tmp_path), preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))

    def output() -> str:
        return f"--- stdout\n{out.read_text()}--- stderr\n{err.read_text()}"
    try:
        deadline = time.monotonic() + HANG_S
        while _stored_trials(db) < 3:  # into the second block
            if child.poll() is not None:
                pytest.fail(f"calibrate ended before 3 trials\n{output()}")
            if time.monotonic() > deadline:
                pytest.fail(f"no 3 trials within {HANG_S:g} s\n{output()}")
            time.sleep(0.05)
        child.send_signal(signal.SIGINT)
        assert finish(child, HANG_S, output) == 130, output()
    finally:
        kill(child)
    store = Store(str(db))
    runs = store.runs()
    assert len(runs) == 2 and {r.recorded_status for r in runs} == {"interrupted"}, output()
    (calibration,) = {r.calibration for r in runs}
    assert calibration is not None
    assert all(f"--resume {calibration}" in r.stop_reason for r in runs)
    assert f"--resume {calibration}" in " ".join(err.read_text().split())
    store.close()

    done = _virtbench("calibrate", "exp.yaml", "--resume", "latest", "--json", "--quiet",
                      "--store", "store.db", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["calibration"]["id"] == calibration
    assert document["calibration"]["blocks_run"][0]["block"] >= 2  # numbering continues
    assert document["rows"][0]["values"] == 8
    store = Store(str(db))
    for r in store.runs():  # every trial once, the runs complete
        assert r.status == "complete"
        assert sorted(t["repetition"] for t in store.trials(r.id)
                      if t["status"] == "ok") == [0, 1, 2, 3]
    store.close()
