"""A real SIGINT / SIGTERM to `virtbench run`: samples kept, run marked, resume completes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from virtbench.store import Store

SPEC = """\
name: interrupt-me
seed: 5
variants: [{name: a}, {name: b}]
workloads:
  - {name: exec.command, params: {argv: ["sleep", "0.05"]}}
repetitions: 40
warmup: 0
"""


def _virtbench() -> list[str]:
    return [sys.executable, "-m", "virtbench.cli"]


def _wait_for_samples(db: Path, at_least: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if db.exists():
            try:
                st = Store(str(db))
                runs = st.runs()
                if runs and st.sample_count(runs[-1].id) >= at_least:
                    return
            except Exception:
                pass
        time.sleep(0.1)
    raise AssertionError("the run stored no samples in time")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_keeps_samples_and_resume_finishes(tmp_path: Path, sig: signal.Signals) -> None:
    spec = tmp_path / "exp.yaml"
    spec.write_text(SPEC)
    db = tmp_path / "store.db"
    proc = subprocess.Popen([*_virtbench(), "run", str(spec), "--store", str(db), "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)})
    _wait_for_samples(db, 5)
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (proc.returncode, err)
    assert "resume" in err, (err, _out)
    st = Store(str(db))
    run = st.runs()[-1]
    assert run.status == "interrupted"
    kept = st.sample_count(run.id)
    assert 5 <= kept < 80
    done = subprocess.run([*_virtbench(), "run", str(spec), "--store", str(db), "--quiet",
                           "--resume", "latest"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    st = Store(str(db))
    assert st.run(run.id).status == "complete"
    samples = st.samples(run.id)
    assert len(samples) == 80
    assert len({(s.variant, s.repetition) for s in samples}) == 80
