"""`--help` shows a flag as a flag: `--check`, `--quiet -q`, `--debug/--no-debug`, never with a
value's type or metavar (typer 0.29 shows `--check <bool>`; virtbench.cli.option_values). Every
command and group of the real app is walked, as click lists them, the lazily loaded ones
included."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from virtbench.cli.root import app

runner = CliRunner()


def _walk(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, group
    for name in sorted(group.list_commands(None)):
        command = group.get_command(None, name)
        if hasattr(command, "real"):
            command = command.real()
        if hasattr(command, "commands"):
            yield from _walk(command, (*path, name))
        else:
            yield (*path, name), command


COMMANDS = list(_walk(typer.main.get_command(app)))
assert {path[0] for path, _ in COMMANDS if path} >= {"run", "kvm", "hosts", "lab", "report"}
assert any(len(path) == 3 for path, _ in COMMANDS)  # kvm sandbox up: a group's group's command


def _help(path: tuple[str, ...]) -> list[str]:
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"},
                           catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


def _row(lines: list[str], option: str) -> str:
    """The help table's row of ``option`` (the line on which it is named)."""
    pattern = re.compile(rf"(?<![\w-]){re.escape(option)}(?![\w-])")
    [row] = [line for line in lines if line.startswith("│") and pattern.search(line)][:1] or [""]
    return row


@pytest.mark.parametrize(("path", "command"), COMMANDS,
                         ids=[" ".join(path) or "virtbench" for path, _ in COMMANDS])
def test_no_flag_is_shown_with_a_value(path: tuple[str, ...], command: Any) -> None:
    lines = _help(path)
    flags = [p for p in command.params if p.param_type_name == "option" and p.is_flag
             and not p.hidden]
    help_option = command.get_help_option(typer.Context(command))
    for flag in [*flags, help_option]:
        names = [*flag.opts, *flag.secondary_opts]
        row = _row(lines, names[0])
        assert row, (path, names)
        assert all(re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", row) for n in names), (
            "a --x/--no-x pair and its short names are shown together", path, row)
        before_help = row.split(flag.help[:15])[0] if flag.help else row
        assert not re.search(r"<[^>]+>", before_help), (path, row)

def test_a_value_option_still_shows_its_type() -> None:
    """The check above can fail: an option that takes a value keeps its type in the same help."""
    row = _row(_help(("run",)), "--store")
    assert re.search(r"--store\s+-s\s+<str>", row), row
    assert re.search(r"--check\s{2,}validate", _row(_help(("run",)), "--check"))


def test_a_pair_of_flags_is_shown_as_the_pair(capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The app has no `--x/--no-x` option today: a group built as the app's are shows one."""
    from virtbench.cli.lazy import group_of

    paints = typer.Typer()

    @paints.command()
    def paint(color: bool = typer.Option(True, "--color/--no-color", help="in colour"),
              coats: int = 1) -> None:
        """Paint."""

    @paints.command()
    def dry() -> None:
        """Dry."""

    monkeypatch.setenv("COLUMNS", "200")
    with pytest.raises(SystemExit):
        group_of(paints).main(["paint", "--help"], prog_name="p")
    lines = capsys.readouterr().out.splitlines()
    assert re.search(r"--color\s+--no-color\s{2,}in colour", _row(lines, "--color"))
    assert re.search(r"--coats\s+<int>", _row(lines, "--coats"))
