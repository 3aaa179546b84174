"""A forked worker: answers from another process, its failures said, never a hang."""

from __future__ import annotations

import os
import time
from typing import Any

import pytest

from virtbench.targets.forked_worker import ForkedWorker, WorkerFailed

WAIT_S = 60.0
"""Bound of every wait here (a hang fails the test rather than blocking it)."""


def _nothing() -> None:
    pass


def _pid_and_double(request: Any) -> tuple[int, Any]:
    if request == "raise":
        raise ValueError("bad request")
    if request == "die":
        os._exit(3)
    if request == "sleep":
        time.sleep(WAIT_S)
    return os.getpid(), request * 2


def test_answers_come_from_the_worker_process_by_key() -> None:
    with ForkedWorker(_nothing, _pid_and_double) as worker:
        for key in range(3):
            worker.submit(key, key + 10)
        answers = [worker.answer(key, WAIT_S) for key in (2, 0, 1)]
    assert [value for _pid, value in answers] == [24, 20, 22]
    assert {pid for pid, _value in answers} == {worker.pid} != {os.getpid()}
    assert worker.returncode == 0  # an idle worker ends when its request pipe closes


def test_a_request_that_raises_is_said_and_the_worker_goes_on() -> None:
    with ForkedWorker(_nothing, _pid_and_double) as worker:
        worker.submit("a", "raise")
        worker.submit("b", 4)
        with pytest.raises(WorkerFailed, match="ValueError: bad request"):
            worker.answer("a", WAIT_S)
        assert worker.answer("b", WAIT_S)[1] == 8


def test_a_failing_prepare_is_said_for_every_request() -> None:
    def prepare() -> None:
        raise ImportError("no matplotlib here")

    with ForkedWorker(prepare, _pid_and_double) as worker:
        worker.submit(1, 1)
        with pytest.raises(WorkerFailed, match="ImportError: no matplotlib here"):
            worker.answer(1, WAIT_S)
    assert worker.returncode == 1


def test_a_worker_that_dies_fails_its_waits_at_once() -> None:
    with ForkedWorker(_nothing, _pid_and_double) as worker:
        worker.submit(1, "die")
        worker.submit(2, 5)
        started = time.monotonic()
        with pytest.raises(WorkerFailed, match="exited without answering"):
            worker.answer(1, WAIT_S)
        with pytest.raises(WorkerFailed, match="exited without answering"):
            worker.answer(2, WAIT_S)
        assert time.monotonic() - started < WAIT_S  # told by the pipe's end, not the bound
    assert worker.returncode == 3


def test_a_silent_worker_is_given_up_after_the_bound_and_killed_on_the_way_out() -> None:
    with pytest.raises(KeyboardInterrupt), ForkedWorker(_nothing, _pid_and_double) as worker:
        worker.submit(1, "sleep")
        with pytest.raises(WorkerFailed, match=r"no answer within 0\.2 s"):
            worker.answer(1, 0.2)
        raise KeyboardInterrupt  # as Ctrl-C: the worker, still sleeping, is killed at once
    assert worker.returncode == -9
    with pytest.raises(ProcessLookupError):
        os.kill(worker.pid, 0)
