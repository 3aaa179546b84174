"""How a command fails: one clear message and a documented exit code (docs/cli.md).

An expected failure (bad input, a failed run, a missing tool, an unusable store, a full disk) is
printed as one ``error:`` message, without a traceback unless ``--debug`` (or
``VIRTBENCH_DEBUG=1``) asks for it. Anything else is a bug in virtbench: its traceback is always
printed, followed by a request to report it, and the exit code is :data:`EXIT_INTERNAL`.
"""

from __future__ import annotations

import errno
import subprocess
import traceback
from dataclasses import dataclass
from typing import Any

import typer
from typer.core import TyperGroup

from virtbench import safetext
from virtbench.cli import consoles
from virtbench.errors import EXIT_BAD_INPUT, EXIT_FAILED, VirtbenchError

__all__ = ["EXIT_BAD_INPUT", "EXIT_FAILED", "EXIT_INTERNAL", "EXIT_INTERRUPTED",
           "ErrorReportingGroup", "Failure", "classify", "report", "report_bad_value"]

EXIT_INTERNAL = 3
"""A bug in virtbench (an exception no code path expected)."""
EXIT_INTERRUPTED = 130
"""Ctrl-C, SIGTERM or SIGHUP (128 + SIGINT, as shells report it)."""

# Errors of the disk or the device, not of what the user named: the command failed (1).
_ENVIRONMENT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO}


@dataclass(frozen=True)
class Failure:
    message: str
    exit_code: int


def classify(exc: BaseException) -> Failure | None:
    """The message and exit code of an expected failure; None when ``exc`` is a bug."""
    from virtbench.targets.target_contract import CommandFailed  # only once something failed

    if isinstance(exc, VirtbenchError):
        return Failure(str(exc), exc.exit_code)
    if isinstance(exc, CommandFailed):
        return Failure(str(exc), EXIT_FAILED)
    if isinstance(exc, subprocess.TimeoutExpired):
        return Failure(f"{_argv_text(exc.cmd)} did not finish within {exc.timeout:g} s",
                       EXIT_FAILED)
    if isinstance(exc, OSError):
        return _os_failure(exc)
    # The store says its own failures (locked, disk full, server gone) as StoreFailed, a
    # VirtbenchError; any other database error is a bug of ours.
    return None


def _argv_text(cmd: Any) -> str:
    return " ".join(map(str, cmd)) if isinstance(cmd, list | tuple) else str(cmd)


def _os_failure(exc: OSError) -> Failure:
    reason = exc.strerror or str(exc)
    where = f"{exc.filename}: " if exc.filename else ""
    if exc.errno in _ENVIRONMENT_ERRNOS:
        return Failure(f"{where}{reason}", EXIT_FAILED)
    if exc.filename:  # a path the user named (or one derived from it) cannot be used
        return Failure(f"{where}{reason}", EXIT_BAD_INPUT)
    return Failure(reason, EXIT_FAILED)


def _say(markup: str) -> None:
    """One message on stderr, not wrapped: paths and commands in it stay copyable."""
    consoles.err.print(markup, highlight=False, soft_wrap=True)


def report(exc: BaseException, debug: bool) -> int:
    """Print ``exc`` as the user should see it; return the process exit code."""
    if isinstance(exc, KeyboardInterrupt):
        if debug:
            traceback.print_exception(exc)
        _say(f"[yellow]interrupted[/] ({safetext.markup(exc) or 'SIGINT'})")
        return EXIT_INTERRUPTED
    failure = classify(exc)
    if failure is None:
        traceback.print_exception(exc)
        _say(f"[red]internal error[/] (a bug in virtbench): {type(exc).__name__}: "
             f"{safetext.markup(exc)}\nPlease report it with the traceback above.")
        return EXIT_INTERNAL
    if debug:
        traceback.print_exception(exc)
    # Not wrapped: paths and commands in the message stay copyable.
    # Shown as written (safetext.markup): brackets in a message (an IPv6 address, a list, a
    # command's stderr) are text, not rich markup; control characters show as escapes.
    _say(f"[red]error:[/] {safetext.markup(failure.message)}")
    return failure.exit_code


def report_bad_value(exc: typer.BadParameter) -> int:
    """An option or argument value its parser refused (``--port 70000``, ``--window inf``):
    bad input, one ``error:`` line like any other (not typer's usage panel); exit code 2."""
    _say(f"[red]error:[/] {safetext.markup(exc.format_message())}")
    return EXIT_BAD_INPUT


class ErrorReportingGroup(TyperGroup):
    """The top-level command group: turns every failure of a command into :func:`report`,
    and a refused option value into one ``error:`` line (:func:`report_bad_value`).

    Other usage errors (an unknown option, a missing argument) and explicit exits keep
    typer's own handling (exit code 2 with the usage, and 0/N).
    """

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except typer.BadParameter as exc:
            if type(exc) is not typer.BadParameter:  # MissingParameter: a usage error
                raise
            raise typer.Exit(report_bad_value(exc)) from exc
        except (typer.Exit, typer.Abort, typer.TyperException):
            raise
        except (Exception, KeyboardInterrupt) as exc:
            if isinstance(exc, BrokenPipeError):  # `virtbench report -f csv | head`: typer's
                raise
            raise typer.Exit(report(exc, bool(ctx.params.get("debug")))) from exc
