"""The suite passes however it is started: the Ctrl-C tests run in a pytest launched as a
script's background job (SIGINT inherited as ignored, stdin closed, a session of its own), as
cron, nohup and CI start it. Before tests/conftest.py installed the Ctrl-C handler such a
pytest waited forever in the fleet's thread test (issue: "suite")."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CTRL_C_TESTS = ["tests/unit/fleet/test_host_threads.py", "tests/unit/targets/test_forked.py"]


def _as_a_background_job() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.timeout(300)  # a pytest of its own: start-up and collection on a busy machine
def test_ctrl_c_tests_pass_in_a_pytest_started_with_sigint_ignored(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "timeout=40",
         "--basetemp", str(tmp_path / "pytest"), *CTRL_C_TESTS],
        cwd=REPO, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=240,
        start_new_session=True, preexec_fn=_as_a_background_job)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout and "failed" not in proc.stdout
