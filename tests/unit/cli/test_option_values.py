"""Plain option values checked without pydantic (virtbench.cli.option_values): for every value, the
same result or the same refusal as typer's own check, and no pydantic for the plain ones."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import pytest
import typer

from virtbench.cli.lazy import command_of
from virtbench.cli.option_values import PlainValue, PlainValuesCommand, typers_check
from virtbench.cli.options import number_parser

commands = typer.Typer()


@commands.command()
def sample(
    text: Annotated[str, typer.Argument()],
    path: Annotated[Path, typer.Argument()],
    words: Annotated[list[str] | None, typer.Option("--word")] = None,
    flag: bool = False,
    maybe: Annotated[str | None, typer.Option()] = None,
    there: Annotated[Path | None, typer.Option(exists=True, dir_okay=False)] = None,
    count: Annotated[int, typer.Option(min=1)] = 1,
    ratio: Annotated[float, typer.Option(parser=number_parser(0))] = 2.0,
    limit: Annotated[float | None, typer.Option(parser=number_parser(1, low_open=True))] = None,
) -> None:
    """Every kind of parameter."""


COMMAND = command_of(commands, "sample")
PARAMS = {p.name: p for p in COMMAND.params}
HOSTILE = ["", "-", ".", "/", "x", "a/", "./x", "//x", "../../x", "[/]", "\x1b]0;t\x07", "é" * 3,
           "a\r\nb", "nan", "70000", "a\x00b"]


def _outcome(check: Any, param: Any, value: Any) -> tuple[str, Any]:
    try:
        return "value", check.coerce(value, param=param, ctx=None)
    except typer.BadParameter as exc:
        return "refused", exc.format_message()


def test_a_command_built_lazily_checks_its_plain_parameters_itself() -> None:
    assert isinstance(COMMAND, PlainValuesCommand)
    kinds = {name: getattr(p.get_runtime_param(), "kind", None) for name, p in PARAMS.items()}
    assert kinds == {"text": "str", "path": "path", "words": "list", "flag": "bool",
                     "maybe": "str", "there": "path", "count": None, "ratio": "parsed",
                     "limit": "parsed"}


@pytest.mark.parametrize("name", ["text", "path", "words", "flag", "maybe", "there", "ratio",
                                  "limit"])
def test_the_plain_check_says_what_typers_says(name: str, tmp_path: Path) -> None:
    param = PARAMS[name]
    plain, typers = param.get_runtime_param(), typers_check(param)
    assert isinstance(plain, PlainValue)
    assert not isinstance(typers, PlainValue)
    (tmp_path / "file").write_text("")
    values: list[Any] = [None, *HOSTILE, str(tmp_path), str(tmp_path / "file"), b"bytes",
                         True, False, 3, ["a", "b"], ("a", ""), [], ("a", 1), "0", "1", "2.5",
                         "-1", "1e400", "inf", " 3 ", 2.0, 0.5]
    for value in values:
        assert _outcome(plain, param, value) == _outcome(typers, param, value), (name, value)


PROBE = """
import sys
from typing import Annotated

import typer

from virtbench.cli.lazy import command_of

commands = typer.Typer()


@commands.command()
def plain(text: str, path: str, words: Annotated[list[str] | None, typer.Option("--word")] = None,
          flag: bool = False) -> None:
    pass


command = command_of(commands, "plain")
ctx = command.make_context("plain", ["t", sys.argv[1], "--word", "w", "--flag"])
print(ctx.params)
print("pydantic" in sys.modules)
command.params[0].get_runtime_param().coerce(3, param=command.params[0], ctx=None)
print("pydantic" in sys.modules)
"""


def test_plain_values_import_no_pydantic(tmp_path: Path) -> None:
    """A command line's strings; another value (an int here) gets typer's own check."""
    out = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        f"{{'words': ['w'], 'flag': True, 'text': 't', 'path': '{tmp_path}'}}",
        "False", "True"]


PATH_PROBE = """
import sys
from pathlib import Path
from typing import Annotated

import typer

from virtbench.cli.lazy import command_of

commands = typer.Typer()


@commands.command()
def write(output: Annotated[Path | None, typer.Option("--output", "-o")] = None) -> None:
    pass


command = command_of(commands, "write")
for given in sys.argv[1:]:
    print(command.make_context("write", ["-o", given]).params)
print("pydantic" in sys.modules)
"""


def test_a_path_given_to_a_plain_path_imports_no_pydantic(tmp_path: Path) -> None:
    """`report -o FILE`: an existing file, a new one, a directory: no pydantic for any."""
    (tmp_path / "old.html").write_text("")
    given = [str(tmp_path / "old.html"), str(tmp_path / "new.html"), str(tmp_path)]
    out = subprocess.run([sys.executable, "-c", PATH_PROBE, *given], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        *(f"{{'output': {Path(path)!r}}}" for path in given), "False"]
