"""The two consoles every command prints through: ``console`` (stdout: results) and ``err``
(stderr: messages, warnings, errors).

Stored and user text reaches them only through virtbench.safetext (markup() in a markup string,
text() for a cell or a line): shown as written, control characters as escapes. Commands read
them as ``consoles.console`` and ``consoles.err`` when they print, so a test swaps them here, once.
"""

from __future__ import annotations

from virtbench import safetext

__all__ = ["console", "err"]

console = safetext.console()
err = safetext.console(stderr=True)
