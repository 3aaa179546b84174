"""A call in a forked child: its messages, its failure and Ctrl-C reach the parent."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import pytest

from virtbench.targets.forked import ForkedCall, Send


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
    assert call.wait() == 0
    assert [m["index"] for m in messages] == [0, 1, 2]
    assert {m["pid"] for m in messages} == {call.pid} != {os.getpid()}


def test_an_exception_in_the_child_is_reported_not_raised_here() -> None:
    def work(send: Send) -> None:
        send({"started": True})
        raise ValueError("bad host")

    call = ForkedCall(work)
    messages = _collect(call)
    assert call.wait() == 1
    assert messages[0] == {"started": True}
    assert messages[-1]["error"] == "ValueError: bad host"


@pytest.mark.parametrize("parent_sigint", ["handled", "ignored"])
def test_interrupt_raises_keyboard_interrupt_in_the_child_which_still_reports(
        parent_sigint: str) -> None:
    """Also when this process ignores SIGINT (a script's background job): the parent's
    interrupt is still the child's Ctrl-C."""
    found = signal.getsignal(signal.SIGINT)
    if parent_sigint == "ignored":
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        _interrupt_a_sleeping_child()
    finally:
        signal.signal(signal.SIGINT, found)


def _interrupt_a_sleeping_child() -> None:
    def work(send: Send) -> None:
        send({"ready": True})
        try:
            time.sleep(30)
        except KeyboardInterrupt:
            send({"interrupted": True})

    call = ForkedCall(work)
    messages = _collect(call)
    deadline = time.monotonic() + 10
    while not messages and time.monotonic() < deadline:
        time.sleep(0.01)
    call.interrupt()  # the child sleeps 30 s unless interrupted: the message says which
    assert call.wait() == 0
    assert messages == [{"ready": True}, {"interrupted": True}]
