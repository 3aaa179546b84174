"""A call in a forked child: its messages, its failure and Ctrl-C reach the parent."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import pytest

from virtbench.targets.forked import ForkedCall, Send

WAIT_S = 60.0
"""Every wait here is bounded: a child still running then fails the test (wait gives None)."""


def _collect(call: ForkedCall) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    call.listen(messages.append)
    return messages


def test_messages_arrive_in_order_from_a_separate_process() -> None:
    def work(send: Send) -> None:
        for index in range(3):
            send({"index": index, "pid": os.getpid()})

    call = ForkedCall(work)
    messages = _collect(call)
    assert call.wait(WAIT_S) == 0
    assert [m["index"] for m in messages] == [0, 1, 2]
    assert {m["pid"] for m in messages} == {call.pid} != {os.getpid()}


def test_an_exception_in_the_child_is_reported_not_raised_here() -> None:
    def work(send: Send) -> None:
        send({"started": True})
        raise ValueError("bad host")

    call = ForkedCall(work)
    messages = _collect(call)
    assert call.wait(WAIT_S) == 1
    assert messages[0] == {"started": True}
    assert messages[-1]["error"] == "ValueError: bad host"


def _until_a_message(messages: list[dict[str, Any]]) -> None:
    """Waits (bounded) for the child's first message: on a busy machine the child may not
    have run yet, and what a test does next must find it running its work."""
    deadline = time.monotonic() + WAIT_S
    while not messages and time.monotonic() < deadline:
        time.sleep(0.01)
    assert messages, f"the child sent nothing in {WAIT_S} s"


def _sleep_until_interrupted(send: Send) -> None:
    """Says it is ready, then sleeps WAIT_S unless interrupted, and says which."""
    try:  # "ready" inside: an interrupt right after it is still caught here
        send({"ready": True})
        time.sleep(WAIT_S)
    except KeyboardInterrupt:
        send({"interrupted": True})


def test_interrupt_raises_keyboard_interrupt_in_the_child_which_still_reports() -> None:
    call = ForkedCall(_sleep_until_interrupted)
    messages = _collect(call)
    _until_a_message(messages)
    call.interrupt()
    assert call.wait(WAIT_S) == 0  # not WAIT_S of sleep: "interrupted" below says why it ended
    assert messages == [{"ready": True}, {"interrupted": True}]


@pytest.mark.parametrize("inherited", [signal.SIG_IGN, signal.default_int_handler],
                         ids=["ignored", "default"])
def test_interrupt_reaches_the_child_however_sigint_was_inherited(inherited: Any) -> None:
    """A background job (nohup, CI, ``cmd &``) starts with SIGINT ignored; the child must
    still stop on ``interrupt`` (the parent's SIGTERM-as-Ctrl-C passes it on that way)."""
    previous = signal.signal(signal.SIGINT, inherited)
    try:
        call = ForkedCall(_sleep_until_interrupted)
    finally:
        signal.signal(signal.SIGINT, previous)
    messages = _collect(call)
    _until_a_message(messages)
    call.interrupt()
    code = call.wait(WAIT_S)
    if code is None:
        call.kill_group()
        pytest.fail("the child ignored interrupt()")
    assert messages == [{"ready": True}, {"interrupted": True}]


def test_a_bounded_wait_returns_none_while_the_child_runs_and_kill_ends_it() -> None:
    def work(send: Send) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a child that will not stop when asked
        send({"ready": True})
        time.sleep(WAIT_S)

    call = ForkedCall(work)
    messages = _collect(call)
    _until_a_message(messages)  # killed before "ready" was sent, the child says nothing
    assert call.wait(0.05) is None
    assert call.returncode is None
    assert call.kill_group() == -signal.SIGKILL
    assert call.wait(0) == -signal.SIGKILL  # reaped once, the code is kept
    assert messages == [{"ready": True}]


def test_the_child_is_in_its_own_group_as_soon_as_it_exists() -> None:
    # Killed at once, before the child may have run at all (a busy machine): the group must
    # already exist, or the SIGKILL to it misses the child (seen once in a loaded suite run).
    def work(send: Send) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        time.sleep(WAIT_S)

    call = ForkedCall(work)
    assert os.getpgid(call.pid) == call.pid
    assert call.kill_group() == -signal.SIGKILL


def test_an_interrupt_right_after_the_fork_ends_the_child_and_is_reported() -> None:
    """The parent may pass Ctrl-C on before the child has run a line (a busy machine): the
    child still ends within the call, by its own report, never going on as a copy of the
    parent's program (which would exit with the parent's code, or not at all)."""
    for _ in range(20):
        call = ForkedCall(_sleep_until_interrupted)
        messages = _collect(call)
        call.interrupt()
        code = call.wait(WAIT_S)
        if code is None:
            call.kill_group()
            pytest.fail("the child ignored interrupt()")
        # Stopped in its work (before or after saying "ready"), or before it began.
        assert (code == 0 and messages[-1] == {"interrupted": True}) or (
            code == 1 and messages[-1]["error"].startswith("KeyboardInterrupt")), (code, messages)
