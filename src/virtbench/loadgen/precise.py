"""An asyncio event loop whose timers fire on time (tens of µs late, not up to a millisecond).

epoll sleeps in whole milliseconds and Python rounds a timeout up, so a plain loop wakes up to
~1 ms after a timer is due. This selector arms a ``timerfd`` (nanosecond resolution, same
CLOCK_MONOTONIC as the loop) to wake the epoll sleep ``spin_s`` before the next timer, then
polls without sleeping, still serving I/O, until the timer is due.

Spinning only the last ``spin_s`` (not the whole gap) matters twice on a shared machine: the
CPU stays free for the server under test, and a SCHED_FIFO generator that spins all the time
is throttled by the kernel for 50 ms every second (``sched_rt_runtime_us``), which makes a
burst of late sends. Without timerfd (not Linux) the selector spins for the last 1 ms.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import os
import select
import selectors
import time
from typing import Any

__all__ = ["SpinSelector", "TimerFd", "new_loop"]

_CLOCK_MONOTONIC = 1
_TFD_NONBLOCK = 0o4000
_TFD_CLOEXEC = 0o2000000
_TFD_TIMER_ABSTIME = 1
# Without a timerfd, epoll may wake up to ~1 ms late: spin at least this long.
_FALLBACK_SPIN_S = 0.0011


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


class TimerFd:
    """A one-shot CLOCK_MONOTONIC timerfd (Linux, through libc; Python 3.11 has no binding)."""

    def __init__(self) -> None:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        self._settime = libc.timerfd_settime
        self._settime.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.POINTER(_Itimerspec),
                                  ctypes.c_void_p]
        fd = libc.timerfd_create(_CLOCK_MONOTONIC, _TFD_NONBLOCK | _TFD_CLOEXEC)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "timerfd_create failed")
        self.fd: int = fd
        self._spec = _Itimerspec()

    def arm_at(self, monotonic_s: float) -> None:
        """Fire once at ``monotonic_s`` (time.monotonic() seconds)."""
        ns = max(1, int(monotonic_s * 1e9))
        self._spec.it_value.tv_sec, self._spec.it_value.tv_nsec = divmod(ns, 1_000_000_000)
        if self._settime(self.fd, _TFD_TIMER_ABSTIME, ctypes.byref(self._spec), None) != 0:
            raise OSError(ctypes.get_errno(), "timerfd_settime failed")

    def clear(self) -> None:
        with contextlib.suppress(BlockingIOError):
            os.read(self.fd, 8)

    def close(self) -> None:
        os.close(self.fd)


class SpinSelector(selectors.EpollSelector):
    def __init__(self, spin_s: float) -> None:
        super().__init__()
        self.timer: TimerFd | None
        try:
            self.timer = TimerFd()
        except (OSError, AttributeError):
            self.timer = None
        if self.timer is not None:
            # Registered with the raw epoll, not as a selector key: the selector ignores its
            # events (no key), it only ends the sleep.
            self._selector.register(self.timer.fd, select.EPOLLIN)  # type: ignore[attr-defined]
            self.spin_s = spin_s
        else:
            self.spin_s = max(spin_s, _FALLBACK_SPIN_S)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is None or timeout <= 0:
            return super().select(timeout)
        if timeout <= self.spin_s:
            return super().select(0)
        if self.timer is None:
            return super().select(timeout - self.spin_s)
        self.timer.arm_at(time.monotonic() + timeout - self.spin_s)
        ready = super().select(timeout)  # the timerfd ends the sleep early and precisely
        self.timer.clear()
        return ready

    def close(self) -> None:
        if self.timer is not None:
            self.timer.close()
            self.timer = None
        super().close()


def new_loop(spin_s: float) -> asyncio.AbstractEventLoop:
    """A new selector event loop; ``spin_s`` = 0 gives the standard behaviour."""
    selector: Any = SpinSelector(spin_s) if spin_s > 0 else selectors.EpollSelector()
    return asyncio.SelectorEventLoop(selector)
