"""The two consoles every command prints through: ``console`` (stdout: results) and ``err``
(stderr: messages, warnings, errors).

Stored and user text reaches them only through virtbench.safetext (markup() in a markup string,
text() for a cell or a line): shown as written, control characters as escapes. Commands read
them as ``consoles.console`` and ``consoles.err`` when they print, so a test swaps them here, once.

Each is made when it is first read, not when this module is imported: importing rich costs a
command about 0.03 s of CPU, which one that prints nothing through rich (`run FILE --check`
into a pipe, virtbench.cli.check_report) does not pay; the failure reporting that every command
imports (virtbench.cli.failures) reads ``err`` only once something failed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from virtbench import safetext

if TYPE_CHECKING:
    from rich.console import Console

    console: Console
    err: Console

__all__ = ["console", "err"]


def __getattr__(name: str) -> Console:
    """``console`` or ``err``, made on first use and kept (a test's replacement stays put)."""
    if name not in ("console", "err"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    made = safetext.console(stderr=name == "err")
    globals()[name] = made
    return made
