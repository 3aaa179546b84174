"""Commands loaded on first use (virtbench.cli.lazy): listed from their name and help, loaded
once, when run or asked for their help, and then the real command in every respect."""

from __future__ import annotations

from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner

from virtbench.cli.lazy import LazyCommand, LazyGroup, LazyRootGroup, command_of, group_of

loads: list[str] = []


def _commands() -> typer.Typer:
    loads.append("commands")
    commands = typer.Typer()

    @commands.command()
    def greet(name: Annotated[str, typer.Argument()], loud: bool = False) -> None:
        """Say hello.

        To NAME."""
        typer.echo(f"hello {name.upper() if loud else name}")

    @commands.command("fail")
    def failing() -> None:
        """Fail as a command does."""
        raise OSError(28, "No space left on device")

    return commands


def _group() -> typer.Typer:
    loads.append("group")
    group = typer.Typer(help="One command, still a group.")

    @group.command()
    def only() -> None:
        typer.echo("only")

    return group


class _Root(LazyRootGroup):
    lazy = (LazyCommand("greet", "Say hello.", _commands),
            LazyCommand("fail", "Fail as a command does.", _commands),
            LazyGroup("things", "One command, still a group.", _group))


app = typer.Typer(cls=_Root, add_completion=False)


@app.callback()
def _options(debug: bool = False) -> None:
    """The test app."""


@pytest.fixture(autouse=True)
def _fresh() -> None:
    loads.clear()
    for command in _Root.lazy:
        command._real = None


def test_the_help_lists_every_command_and_loads_none() -> None:
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0, result.output
    assert [line.split()[1] for line in result.output.splitlines()
            if line.startswith("│ ") and line.split()[1] in ("greet", "fail", "things")] == [
                "greet", "fail", "things"]
    assert "Say hello." in result.output and loads == []


def test_running_a_command_loads_its_module_once() -> None:
    runner = CliRunner()
    assert runner.invoke(app, ["greet", "ann", "--loud"]).output == "hello ANN\n"
    assert runner.invoke(app, ["greet", "bob"]).output == "hello bob\n"
    assert loads == ["commands"]
    assert "To NAME." in runner.invoke(app, ["greet", "--help"]).output  # the real help


def test_a_lazy_command_fails_as_the_app_reports_failures() -> None:
    result = CliRunner().invoke(app, ["fail"])
    assert result.exit_code == 1 and "error: No space left on device" in result.output


def test_a_single_command_app_is_still_a_group() -> None:
    assert CliRunner().invoke(app, ["things", "only"]).output == "only\n"
    assert group_of(_group()).list_commands(None) == ["only"]  # type: ignore[arg-type]


def test_command_of_builds_the_named_command() -> None:
    assert command_of(_commands(), "fail").help == "Fail as a command does."
    with pytest.raises(LookupError):
        command_of(_commands(), "nothing")
