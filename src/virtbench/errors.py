"""The errors a user can act on and the exit codes they give (re-exported by virtbench.model).

Kept apart from the value types so that a command that needs no dataclasses (a plain
`virtbench parse pcap`, whose whole run competes with tcpdump's) can raise them: importing
`dataclasses` pulls in `inspect`, about 10 ms of start-up here.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = ["EXIT_BAD_INPUT", "EXIT_FAILED", "RunFailed", "StreamClosed", "VirtbenchError"]

EXIT_FAILED = 1
"""Exit code: the input was fine, but the run or check it asked for failed."""
EXIT_BAD_INPUT = 2
"""Exit code: bad input or usage (a file, option, id or address the user gave)."""


class VirtbenchError(Exception):
    """An error a user can act on; the CLI prints its message without a traceback."""

    exit_code: ClassVar[int] = EXIT_BAD_INPUT


class RunFailed(VirtbenchError):
    """The input was valid, but what it asked for failed (a check found problems, a lab did
    not start, the store could not be written)."""

    exit_code = EXIT_FAILED


class StreamClosed(VirtbenchError):
    """A standard stream the command needs is closed (``>&-``, ``<&-``): it cannot read its
    input or write its output, through no fault of the arguments."""

    exit_code = EXIT_FAILED
