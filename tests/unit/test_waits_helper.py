"""The tests' bounded waits (tests/waits.py): a child or thread that does not end fails the
test with a clear message and what the child said, instead of hanging the suite."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest
from waits import communicate, finish, join, readline

SAYS_THEN_SLEEPS = "import sys, time; print('hello', flush=True); time.sleep(60)"


def _child(code: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_finish_kills_a_child_past_its_bound_and_fails_with_its_output() -> None:
    child = _child(SAYS_THEN_SLEEPS)
    assert readline(child, 60) == "hello\n"
    with pytest.raises(pytest.fail.Exception, match=r"still running after 0\.2 s"):
        finish(child, 0.2)
    assert child.returncode is not None  # killed and reaped, not left behind


def test_communicate_fails_with_what_the_child_said_so_far() -> None:
    child = _child(SAYS_THEN_SLEEPS)
    with pytest.raises(pytest.fail.Exception, match=r"(?s)still running after 1 s.*hello"):
        communicate(child, 1)
    assert child.returncode is not None


def test_readline_without_a_line_fails_instead_of_blocking() -> None:
    child = _child("import time; time.sleep(60)")
    with pytest.raises(pytest.fail.Exception, match=r"wrote no line within 0\.2 s"):
        readline(child, 0.2)
    assert child.returncode is not None


def test_join_fails_naming_a_thread_that_does_not_end() -> None:
    release = threading.Event()
    thread = threading.Thread(target=release.wait, args=(60,), daemon=True, name="stuck")
    thread.start()
    try:
        with pytest.raises(pytest.fail.Exception,
                           match=r"the stand-in \(thread stuck\) did not end within 0\.1 s"):
            join(thread, 0.1, "the stand-in")
    finally:
        release.set()
    join(thread, 60, "the released stand-in")
    assert finish(_child("pass"), 60) == 0
