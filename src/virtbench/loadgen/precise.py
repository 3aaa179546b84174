"""An asyncio event loop whose timers fire on time (tens of µs, not up to a millisecond late).

epoll sleeps in whole milliseconds and Python rounds a timeout up, so a plain loop wakes up to
~1 ms after a timer is due. This selector sleeps until ``spin_s`` before the next timer and then
polls without sleeping, still serving I/O, until the timer is due.
"""

from __future__ import annotations

import asyncio
import selectors
from typing import Any

__all__ = ["SpinSelector", "new_loop"]


class SpinSelector(selectors.EpollSelector):
    def __init__(self, spin_s: float) -> None:
        super().__init__()
        self.spin_s = spin_s

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is not None and timeout > 0 and self.spin_s > 0:
            timeout = 0.0 if timeout <= self.spin_s else timeout - self.spin_s
        return super().select(timeout)


def new_loop(spin_s: float) -> asyncio.AbstractEventLoop:
    """A new selector event loop; ``spin_s`` = 0 gives the standard behaviour."""
    selector: Any = SpinSelector(spin_s) if spin_s > 0 else selectors.EpollSelector()
    return asyncio.SelectorEventLoop(selector)
