"""Files a user hands to a command: read (also from stdin) and parsed, with an error that names
the file when either fails. Decompression is virtbench.compressed's, called by the parsers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from virtbench.model import VirtbenchError

__all__ = ["parse_input", "read_input_bytes"]

In = TypeVar("In")
T = TypeVar("T")


def read_input_bytes(path: Path, kind: str = "tool output") -> bytes:
    """The bytes of ``path`` ('-' is stdin), as saved, within the parsers' bound (256 MiB,
    compressed or not: virtbench.inputs.files refuses what is not a file and cuts a stream)."""
    from virtbench.inputs.files import read_input
    from virtbench.parsers.parser_contract import MAX_OUTPUT_BYTES

    return read_input(path, kind, MAX_OUTPUT_BYTES)


def parse_input(parse: Callable[[In], T], data: In, what: str, source: Path) -> T:
    """``parse(data)``; any failure is the input's fault, reported with the file's name.

    A parser rejects input it does not understand with ParseError; a parser that trips over
    input it did not foresee (a KeyError on a missing field) is still reporting a file it
    cannot read, so that is also bad input (``--debug`` shows where it tripped).
    """
    try:
        return parse(data)
    except (VirtbenchError, ValueError, KeyError, TypeError, IndexError, AttributeError
            ) as exc:
        reason = str(exc) if isinstance(exc, VirtbenchError | ValueError) else (
            f"{type(exc).__name__}: {exc}")
        raise VirtbenchError(f"{source}: not readable as {what} output: {reason}") from exc
