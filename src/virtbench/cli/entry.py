"""The `virtbench` command. A plain `virtbench parse TOOL FILE [--json] [--flow SPEC]` runs
straight away; everything else (other commands, --help, a usage error) goes to the app.

A process pays for what it imports: the app loads only the command it runs
(virtbench.cli.root), but typer, rich and pydantic (typer checks every option value with
pydantic) still cost about a third of a second of CPU here, which a parse does not need — and
`virtbench parse pcap` competes with tcpdump, whose whole run is a tenth of a second
(BENCHMARKS.md, capture analysis speed). The options stay declared once, by the app
(virtbench.cli.parse): a call this module does not recognise in full is the app's to read, so it
never reads one differently. Importing this module imports neither typer nor rich (the package's
``__init__`` imports nothing).
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from virtbench.errors import StreamClosed
from virtbench.targets.signals import keep_ignoring_sigint_but_not_in_children

__all__ = ["STDOUT_CLOSED", "PlainParse", "guard_standard_streams", "main", "plain_parse"]

# click's spelling of booleans (VIRTBENCH_DEBUG); any other value is the app's to reject.
_TRUE = {"1", "true", "t", "yes", "y", "on"}
_FALSE = {"", "0", "false", "f", "no", "n", "off"}


class PlainParse(NamedTuple):  # not a dataclass: `dataclasses` imports `inspect` (~10 ms)
    tool: str
    file: Path
    as_json: bool
    flow: str | None
    debug: bool


def main() -> None:
    keep_ignoring_sigint_but_not_in_children()
    guard_standard_streams()
    call = plain_parse(sys.argv[1:], os.environ.get("VIRTBENCH_DEBUG", ""))
    if call is None:
        # virtbench uses no pydantic plugin: without this, pydantic's first model scans the
        # entry points of every installed package for one (docs/decisions.md). A value the
        # user set is kept (an empty one turns the scan back on).
        os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
        from virtbench.cli.root import main as app

        try:
            app()
        except StreamClosed as exc:  # said outside a command: typer's own --help, say
            from virtbench.cli.failures import report

            sys.exit(report(exc, False))
        return
    sys.exit(_run(call))


STDOUT_CLOSED = ("standard output is closed: nothing can be written (redirect it to a file, "
                 "or give -o FILE where the command has it)")


class _ClosedOutput(io.TextIOBase):
    """Standard output when its descriptor was closed (``>&-``): the first write says so as
    an error (exit 1), instead of the output being lost without a word."""

    @property
    def encoding(self) -> str:  # type: ignore[override]  # rich and click ask
        return "utf-8"

    def write(self, text: str) -> int:
        raise StreamClosed(STDOUT_CLOSED)


def guard_standard_streams() -> None:
    """Standard streams that cannot fail a command with a traceback:

    - a closed descriptor 0, 1 or 2 gets /dev/null, so that no file the command opens (the
      SQLite store) takes its number and receives what a child process or a library writes
      there; closed standard output then fails the first write as :data:`STDOUT_CLOSED`,
      closed standard error discards (nothing could show a message), and closed standard input
      stays ``None`` for the readers to refuse (virtbench.inputs.files);
    - an output encoding that cannot show a character (``PYTHONIOENCODING=ascii``, or the C
      locale's ASCII with Python's locale coercion off, and µ, ±, a name) writes it as a
      backslash escape instead of raising ``UnicodeEncodeError``; an error handler the user
      chose (``ascii:ignore``) is kept. (Python's ``surrogateescape`` of the C locale is
      replaced too: what virtbench prints shows a lone surrogate as an escape already.)
    """
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            # the lowest free descriptor: this one (those below are open by now)
            os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
            if fd == 1:
                sys.stdout = _ClosedOutput()
            elif fd == 2:
                sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - for the whole process
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors in ("strict",
                                                                      "surrogateescape"):
            stream.reconfigure(errors="backslashreplace")


def plain_parse(args: Sequence[str], debug_env: str) -> PlainParse | None:
    """The parse these arguments ask for, or None unless they are exactly ``[--debug] parse
    TOOL FILE`` with ``--json`` and ``--flow SPEC`` (or ``--flow=SPEC``) at most once each."""
    if debug_env.strip().lower() not in _TRUE | _FALSE:
        return None
    debug = debug_env.strip().lower() in _TRUE
    rest = list(args)
    if rest[:1] == ["--debug"]:
        debug, rest = True, rest[1:]
    if rest[:1] != ["parse"]:
        return None
    positional: list[str] = []
    as_json, flow = False, None
    i = 1
    while i < len(rest):
        arg = rest[i]
        if arg == "--json" and not as_json:
            as_json = True
        elif arg == "--flow" and flow is None and i + 1 < len(rest):
            flow = rest[i + 1]
            i += 1
        elif arg.startswith("--flow=") and flow is None:
            flow = arg.removeprefix("--flow=")
        elif arg == "-" or not arg.startswith("-"):
            positional.append(arg)
        else:  # --help, an unknown option, a repeated one: the app says what it means
            return None
        i += 1
    if len(positional) != 2:
        return None
    return PlainParse(positional[0], Path(positional[1]), as_json, flow, debug)


def _run(call: PlainParse) -> int:
    """The exit code, failures reported as the app reports them (virtbench.cli.failures)."""
    try:
        from virtbench.cli.parsing import parse_command

        parse_command(call.tool, call.file, call.as_json, call.flow)
    except BrokenPipeError:  # `virtbench parse ... | head`: as click does, quietly
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - stdout for the rest of the exit
        return 1
    except (Exception, KeyboardInterrupt) as exc:
        from virtbench.cli.failures import report

        return report(exc, call.debug)
    return 0
