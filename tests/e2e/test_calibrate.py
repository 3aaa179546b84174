"""`virtbench calibrate` end to end on a tiny real experiment (exec.command running `true`):
A/A runs of the baseline variant only, stored as normal runs tagged as calibration runs, a
noise profile that `compare` of two later runs of the same file then uses, and --budget."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from virtbench.store import Store

# A bound for a hang, not a speed: generous for a loaded 2-core machine.
pytestmark = pytest.mark.timeout(300)

SPEC = """\
name: e2e-calibrate
seed: 3
baseline: a
variants: [{name: a}, {name: b}]
workloads:
  - {name: exec.command, params: {argv: ["true"]}}
repetitions: 6
warmup: 0
"""
VIRTBENCH = [sys.executable, "-m", "virtbench.cli"]


def _virtbench(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # PYTHONPATH passes on: a worktree's sources tested with a shared virtualenv
    env = {"PATH": "/usr/bin:/bin", "XDG_CACHE_HOME": str(cwd / "cache"), "COLUMNS": "100",
           **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"}}
    return subprocess.run([*VIRTBENCH, *args], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=300)


def test_calibrate_stores_a_profile_that_compare_uses(tmp_path: Path) -> None:
    (tmp_path / "exp.yaml").write_text(SPEC)
    done = _virtbench("calibrate", "exp.yaml", "--runs", "3", "--detect", "5", "--json",
                      "--quiet", "--store", "store.db", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    profile = document["profile"]
    assert len(profile["run_ids"]) == 3 and profile["variant"] == "a"
    (row,) = document["rows"]
    assert row["metric"] == "wall_time_s" and row["unit"] == "s" and row["scale"] == "log"
    assert row["runs"] == 3 and row["values"] == 18 and row["within_sd_pct"] > 0
    assert [d["runs_per_side"] for d in row["detectable_pct"]] == [1, 2, 4]
    assert row["detect"]["pct"] == 5 and row["detect"]["runs_per_side_at_n"] >= 1
    assert "noise profile" in done.stderr and "calibration run 3/3" in done.stderr

    store = Store(str(tmp_path / "store.db"))
    for index, run_id in enumerate(profile["run_ids"], 1):
        info = store.run(run_id)
        assert info.status == "complete"
        assert info.description.startswith(f"calibration run {index}/3 (A/A")
        assert [name for name, _knobs, _base in store.variants(run_id)] == ["a"]
    store.close()

    ids = []
    for _ in range(2):  # two normal runs of the same file: compare finds the profile
        assert _virtbench("run", "exp.yaml", "--quiet", "--store", "store.db",
                          cwd=tmp_path).returncode == 0
        listed = _virtbench("report", "latest", "--store", "store.db", "-f", "json",
                            cwd=tmp_path)
        ids.append(json.loads(listed.stdout)["runs"][0]["id"])
    done = _virtbench("compare", *ids, "--store", "store.db", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    model = json.loads(done.stdout)["variance_model"]
    assert model["kind"] == "profile" and model["profile_runs"] == 3


def test_budget_stops_starting_runs(tmp_path: Path) -> None:
    (tmp_path / "exp.yaml").write_text(SPEC)
    done = _virtbench("calibrate", "exp.yaml", "--runs", "4", "--budget", "0.001", "--quiet",
                      "--store", "store.db", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    flat = " ".join(done.stderr.split())
    assert "--budget 0.001 s: stopped after 1 of 4 runs" in flat
    assert "a noise profile needs at least 2" in flat
