"""The grammar of run ids, run references and stored names: one rule wherever they enter
(the store's own API, `virtbench import`, CLI arguments, `virtbench serve` URLs).

A run id becomes part of file names (exports, downloads), URLs and HTTP headers, so it is kept
to letters, digits, ``.``, ``_`` and ``-``, starts with a letter or digit (never ``.`` or
``..``) and is at most 32 characters (the column's width). A run *reference* (what a user
types: an id, an id prefix, an experiment name or ``latest``) uses the experiment-name grammar
of the spec (``^[A-Za-z0-9._-]+$``, at most 200 characters).
"""

from __future__ import annotations

import re

from virtbench.model import VirtbenchError

__all__ = ["NAME_PATTERN", "RUN_ID_MAX", "RUN_ID_PATTERN", "check_run_id", "check_run_ref",
           "has_control"]

RUN_ID_MAX = 32
RUN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$"
NAME_PATTERN = r"^[A-Za-z0-9._-]{1,200}$"
"""The spec's grammar of experiment names (spec/models.py), reused for run references."""
_RUN_ID = re.compile(RUN_ID_PATTERN)
_NAME = re.compile(NAME_PATTERN)


def check_run_id(value: str, what: str = "run id") -> str:
    """``value`` if it is a valid run id, else a VirtbenchError (exit 2) naming ``what``."""
    if not isinstance(value, str) or not _RUN_ID.fullmatch(value):
        raise VirtbenchError(f"{what} {_shown(value)} is not a run id (1-{RUN_ID_MAX} letters, "
                             "digits, '.', '_' or '-', starting with a letter or digit)")
    return value


def check_run_ref(value: str, what: str = "run") -> str:
    """``value`` if it can name a run (id, id prefix, experiment name or 'latest'), else a
    VirtbenchError (exit 2)."""
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise VirtbenchError(f"{what} {_shown(value)} is neither a run id nor an experiment "
                             "name (letters, digits, '.', '_' or '-', at most 200)")
    return value


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_CONTROL_BUT_WHITESPACE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def has_control(text: str, *, allow_whitespace: bool = False) -> bool:
    """True when ``text`` holds a control character (C0, DEL, C1: ESC drives a terminal, CR/LF
    split a header); with ``allow_whitespace`` tab, newline and carriage return are allowed."""
    pattern = _CONTROL_BUT_WHITESPACE if allow_whitespace else _CONTROL
    return pattern.search(text) is not None


def _shown(value: object) -> str:
    """The offending value, quoted, control characters visible, cut at 60 characters."""
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:57] + "..."
