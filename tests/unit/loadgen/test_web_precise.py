"""The precise selector: a timerfd ends epoll sleeps early; its events never reach asyncio."""

from __future__ import annotations

import asyncio
import select
import selectors
import socket
import time
import types

import pytest

from virtbench.loadgen import precise
from virtbench.loadgen.precise import SpinSelector, TimerFd, new_loop


def test_timerfd_becomes_readable_once_armed_time_passes() -> None:
    timer = TimerFd()
    try:
        assert select.select([timer.fd], [], [], 0)[0] == []
        timer.arm_at(time.monotonic() + 0.005)
        assert select.select([timer.fd], [], [], 5)[0] == [timer.fd]
        timer.clear()
        assert select.select([timer.fd], [], [], 0)[0] == []
    finally:
        timer.close()


def test_selector_returns_no_key_for_its_timer_and_timers_still_fire_in_order() -> None:
    selector = SpinSelector(0.0002)
    assert selector.timer is not None
    assert selector.select(0.002) == []  # woken by the timerfd, which is not a key
    selector.close()
    loop = new_loop(0.0002)
    fired: list[int] = []
    try:
        # One base time for every timer: with call_later, a preemption between two calls
        # (over 1 ms on a loaded machine) would reorder the timers, not the selector.
        base = loop.time()
        for i in range(5):
            loop.call_at(base + 0.001 * (5 - i), fired.append, i)
        loop.run_until_complete(asyncio.sleep(0.01))
    finally:
        loop.close()
    assert fired == [4, 3, 2, 1, 0]


def test_selector_sets_its_timer_once_for_the_same_next_timer(
        monkeypatch: pytest.MonkeyPatch) -> None:
    selector = SpinSelector(0.0002)
    assert selector.timer is not None
    armed: list[float] = []
    arm_at = selector.timer.arm_at

    def counting(monotonic_s: float) -> None:
        armed.append(monotonic_s)
        arm_at(monotonic_s)

    selector.timer.arm_at = counting  # type: ignore[method-assign]
    busy, other = socket.socketpair()
    try:
        other.send(b"x")  # always readable: every select returns at once, as under load
        selector.register(busy, selectors.EVENT_READ)
        # A clock that moves 1 µs per read: the loop's and the selector's reads of one timer
        # differ by microseconds, as on a quiet machine (a preemption between them, over the
        # spin's half on a loaded one, would set it again: harmless, but not this check).
        now = [time.monotonic()]

        def clock() -> float:
            now[0] += 1e-6
            return now[0]

        with monkeypatch.context() as patched:
            patched.setattr(precise, "time", types.SimpleNamespace(monotonic=clock))
            due = clock() + 5.0  # the loop's next timer, e.g. a request timeout
            for _ in range(50):
                assert len(selector.select(due - clock())) == 1
        assert len(armed) == 1  # set once, not once per select
        selector.unregister(busy)
        started = time.monotonic()
        assert selector.select(0.003) == []  # an earlier timer sets it again, and wakes it
        # Woken by the timer, not by the 5 s one above (a bound for a hang, not a speed).
        assert len(armed) == 2 and time.monotonic() - started < 4.0
    finally:
        selector.close()
        busy.close()
        other.close()
