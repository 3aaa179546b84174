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

    def clear(self) -> bool:
        """Consume an expiry; False when the timer has not fired (yet)."""
        try:
            os.read(self.fd, 8)
        except BlockingIOError:
            return False
        return True

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
        # When the timerfd is set to fire (monotonic s), 0 when it is not set or was consumed.
        # An event loop selects again and again for the same next timer (e.g. a request
        # timeout seconds away): setting and reading the timerfd on every call cost two system
        # calls through ctypes (~6 µs each here) and a caught BlockingIOError.
        self._armed_at = 0.0

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if self.timer is None:
            if timeout is not None and timeout > self.spin_s:
                return super().select(timeout - self.spin_s)
            return super().select(0 if timeout is not None and timeout > 0 else timeout)
        if timeout is not None and timeout > self.spin_s:
            wake = time.monotonic() + timeout - self.spin_s
            # Set again only for a wake-up clearly earlier (the same timer seen through two
            # clock reads differs by microseconds; the spin covers that). One set earlier
            # stays: waking early only costs one more turn of the loop.
            if not self._armed_at or wake < self._armed_at - self.spin_s / 2:
                self.timer.arm_at(wake)
                self._armed_at = wake
        elif timeout is not None and timeout > 0:
            timeout = 0
        ready = super().select(timeout)  # the timerfd ends a sleep early and precisely
        if self._armed_at and time.monotonic() >= self._armed_at and self.timer.clear():
            self._armed_at = 0.0  # consumed (a not yet readable one is read on a later turn)
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
