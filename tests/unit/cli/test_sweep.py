"""Every command of the real app, fed hostile arguments and option values: never a traceback,
never exit 3 (a bug), only the exit codes docs/cli.md documents, and any JSON it prints is
strict JSON (no NaN or Infinity). The commands are found by walking the app, so a new command
or option is swept without editing this file."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from virtbench.cli.root import app
from virtbench.store import Store

# Commands that would start something long-lived or measure for minutes with valid defaults:
# only their help here.
_STARTS_SOMETHING = {("serve",), ("kvm", "sandbox", "up"), ("assess",), ("run",),
                     ("preflight",)}  # preflight --window 70000 would watch for 19 hours
HOSTILE = ["../../x", "[/]", "[bold]x", "\x1b]0;pwned\x07", "=cmd|' /C calc'!A0", "nan", "inf",
           "-1", "70000", "", "é" * 3, "x" * 5000, "a\r\nb"]


# typer carries its own copy of click: commands and parameters are told apart by what they
# have, not by click's classes. Groups are walked as click lists them (list_commands and
# get_command); a command or group loaded on first use (virtbench.cli.lazy) stands for the real
# one, whose options are swept: it is loaded here.
def _leaves(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    for name in sorted(group.list_commands(None)):
        command = group.get_command(None, name)
        if hasattr(command, "real"):
            command = command.real()
        if hasattr(command, "commands"):
            yield from _leaves(command, (*path, name))
        else:
            yield (*path, name), command


COMMANDS = list(_leaves(typer.main.get_command(app)))
# Every group's commands are swept, the lazily loaded ones included (a walk that missed them
# once swept 16 commands instead of 25).
assert {path[0] for path, _command in COMMANDS} >= {"kvm", "hosts", "lab", "calibrate"}


def _value_options(command: Any) -> list[str]:
    return [next(o for o in p.opts if o.startswith("--")) for p in command.params
            if p.param_type_name == "option" and not p.is_flag
            and any(o.startswith("--") for o in p.opts)]


def _arguments(command: Any) -> int:
    return sum(1 for p in command.params if p.param_type_name == "argument")


def _cases(path: tuple[str, ...], command: Any) -> list[list[str]]:
    cases = [[*path, "--help"]]
    positionals = _arguments(command)
    if path in _STARTS_SOMETHING:  # their option values: tests/unit/cli/test_options.py
        return cases
    cases.append(list(path))
    for value in HOSTILE:
        if positionals:
            cases.append([*path, *([value] * positionals)])
    for option in _value_options(command):
        filler = ["nope"] * positionals
        cases += [[*path, *filler, option, v] for v in HOSTILE[:10]]
    return cases


def _strict(text: str) -> Any:
    def refuse(constant: str) -> Any:
        raise ValueError(f"not strict JSON: {constant}")
    return json.loads(text, parse_constant=refuse)


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A store with one run as the default store; the working folder three levels deep, so a
    hostile relative path like ../../x stays inside tmp_path."""
    work = tmp_path / "a" / "b" / "c"
    work.mkdir(parents=True)
    store = tmp_path / "store.db"
    st = Store(str(store))
    st.close()
    monkeypatch.chdir(work)
    monkeypatch.setenv("VIRTBENCH_STORE", str(store))
    monkeypatch.setenv("VIRTBENCH_LAB_ROOT", str(tmp_path / "labs"))
    monkeypatch.setenv("VIRTBENCH_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("LIBVIRT_DEFAULT_URI", "test:///default")
    return tmp_path


@pytest.mark.timeout(600)  # several hundred in-process invocations
def test_every_command_refuses_hostile_input_cleanly(sandbox: Path) -> None:
    runner = CliRunner()
    problems: list[str] = []
    count = 0
    for path, command in COMMANDS:
        for args in _cases(path, command):
            count += 1
            result = runner.invoke(app, args, catch_exceptions=True)
            shown = f"{args!r}: exit {result.exit_code}"
            output = result.stdout + result.stderr
            if result.exit_code not in (0, 1, 2):
                problems.append(f"{shown}\n{output[-800:]}")
            elif "Traceback" in output:
                problems.append(f"{shown}: a traceback\n{output[-800:]}")
            elif result.exception is not None and not isinstance(result.exception, SystemExit):
                problems.append(f"{shown}: {type(result.exception).__name__}")
            elif result.exit_code == 0 and result.stdout.lstrip()[:1] in ("{", "["):
                try:
                    _strict(result.stdout)
                except ValueError as exc:
                    problems.append(f"{shown}: {exc}")
    print(f"CLI sweep: {count} invocations over {len(COMMANDS)} commands")
    assert not problems, f"{len(problems)} of {count}:\n" + "\n".join(problems[:15])
    assert count > 600
    assert not (sandbox.parent / "x").exists()  # ../../x stayed inside tmp_path
