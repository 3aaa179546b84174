"""What SIGINT means to the programs we start when we were started with it ignored."""

from __future__ import annotations

import signal

__all__ = ["keep_ignoring_sigint_but_not_in_children"]


def keep_ignoring_sigint_but_not_in_children() -> None:
    """Started with SIGINT ignored (a background job of a script, nohup, some CI runners), we
    keep ignoring Ctrl-C as the launching shell asked; SIGTERM and SIGHUP still stop a run
    cleanly (docs/cli.md). But an ignored signal stays ignored in every program we exec, and
    the workloads stop tcpdump and trafgen with SIGINT: a handler that does nothing ignores it
    here just the same, and exec resets a handled signal to the default in the child."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, _ignore)


def _ignore(_signum: int, _frame: object) -> None:
    """Ctrl-C while started with SIGINT ignored: nothing, as the launching shell asked."""
