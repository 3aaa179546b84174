"""A real SIGINT / SIGTERM to `virtbench run`: samples kept, run marked, resume completes.

Written for a busy machine: the test waits for conditions (samples in the store, the child's
exit), never for a fixed time, with bounds generous enough that only a hang reaches them; a
child that dies early ends the wait at once; every failure shows the child's stdout and stderr.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from waits import finish, kill

from virtbench.store import Store

pytestmark = pytest.mark.timeout(900)

SPEC = """\
name: interrupt-me
seed: 5
variants: [{name: a}, {name: b}]
workloads:
  - {name: exec.command, params: {argv: ["sleep", "0.05"]}}
repetitions: 40
warmup: 0
"""
# Bounds for a hang, not expectations: a fresh, busy machine may take a minute to import and
# collect facts before the first trial; each wait ends as soon as its condition holds.
HANG_S = 600.0


class Child:
    """`virtbench run` in a subprocess, its output in files (no pipe to fill, nothing lost)."""

    def __init__(self, tmp_path: Path, *args: str, name: str, sigint: Any = signal.SIG_DFL
                 ) -> None:
        """``sigint``: the disposition the child starts with: the default, as a foreground
        command gets it, or ignored, as a script's background job (and CI) gets it."""
        self.out, self.err = tmp_path / f"{name}.stdout", tmp_path / f"{name}.stderr"
        with self.out.open("w") as out, self.err.open("w") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "virtbench", "run", *args], stdout=out, stderr=err,
                stdin=subprocess.DEVNULL, env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)},
                preexec_fn=lambda: signal.signal(signal.SIGINT, sigint))

    def output(self) -> str:
        return (f"exit status {self.proc.poll()}\n--- stdout\n{self.out.read_text()}"
                f"--- stderr\n{self.err.read_text()}")

    def wait(self) -> int:
        return finish(self.proc, HANG_S, self.output)


def _stored_samples(db: Path) -> int:
    """Samples in the store, read-only: the test must never create or migrate the schema
    under the running child (two processes creating the same tables can crash it)."""
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
            return int(conn.execute("SELECT count(*) FROM samples").fetchone()[0])
    except sqlite3.OperationalError:  # no samples table yet: the child is still creating it
        return 0


def _wait_for_samples(db: Path, at_least: int, child: Child) -> None:
    deadline = time.monotonic() + HANG_S
    while _stored_samples(db) < at_least:
        if child.proc.poll() is not None:
            pytest.fail(f"virtbench run ended before storing {at_least} samples\n"
                        f"{child.output()}")
        if time.monotonic() > deadline:
            kill(child.proc)
            pytest.fail(f"virtbench run stored fewer than {at_least} samples in {HANG_S:.0f} s"
                        f"\n{child.output()}")
        time.sleep(0.1)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_keeps_samples_and_resume_finishes(tmp_path: Path, sig: signal.Signals) -> None:
    spec = tmp_path / "exp.yaml"
    spec.write_text(SPEC)
    db = tmp_path / "store.db"
    first = Child(tmp_path, str(spec), "--store", str(db), "--quiet", name="first")
    _wait_for_samples(db, 5, first)
    first.proc.send_signal(sig)
    assert first.wait() == 130, first.output()
    assert "resume" in first.err.read_text(), first.output()
    st = Store(str(db))
    run = st.runs()[-1]
    assert run.status == "interrupted", first.output()
    kept = st.sample_count(run.id)
    assert 5 <= kept < 80, first.output()
    resumed = Child(tmp_path, str(spec), "--store", str(db), "--quiet", "--resume", "latest",
                    name="resumed")
    assert resumed.wait() == 0, resumed.output()
    st = Store(str(db))
    assert st.run(run.id).status == "complete", resumed.output()
    samples = st.samples(run.id)
    assert len(samples) == 80, resumed.output()
    assert len({(s.variant, s.repetition) for s in samples}) == 80


def test_started_with_sigint_ignored_ignores_ctrl_c_and_stops_on_sigterm(tmp_path: Path) -> None:
    """A background job of a script: Ctrl-C is ignored as its shell asked, SIGTERM stops it
    cleanly (samples kept, exit 130), and the resumed run completes."""
    spec = tmp_path / "exp.yaml"
    spec.write_text(SPEC)
    db = tmp_path / "store.db"
    first = Child(tmp_path, str(spec), "--store", str(db), "--quiet", name="first",
                  sigint=signal.SIG_IGN)
    _wait_for_samples(db, 5, first)
    first.proc.send_signal(signal.SIGINT)
    seen = _stored_samples(db)
    _wait_for_samples(db, seen + 3, first)  # still measuring: the Ctrl-C was ignored
    first.proc.send_signal(signal.SIGTERM)
    assert first.wait() == 130, first.output()
    st = Store(str(db))
    run = st.runs()[-1]
    assert run.status == "interrupted", first.output()
    resumed = Child(tmp_path, str(spec), "--store", str(db), "--quiet", "--resume", "latest",
                    name="resumed", sigint=signal.SIG_IGN)
    assert resumed.wait() == 0, resumed.output()
    assert Store(str(db)).sample_count(run.id) == 80, resumed.output()
