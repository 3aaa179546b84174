"""Every command of the real app, fed hostile arguments and option values, with a SQLite and
with a PostgreSQL store: never a traceback, never exit 3 (a bug), only the exit codes
docs/cli.md documents, and any JSON it prints is strict JSON (no NaN or Infinity). The commands
are found by walking the app, so a new command or option is swept without editing this file.
Then, as real processes, what no in-process call can do: closed standard streams, an ASCII
output encoding, argument bytes that are not UTF-8, a store that is a symlink loop."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner
from waits import communicate

from virtbench.cli.root import app
from virtbench.model import Better, Measurement, Metric
from virtbench.store import Store, TrialRecord

IPERF3 = Path(__file__).resolve().parents[2] / "data" / "iperf3" / "iperf3.12-tcp-loopback.json"

# Commands that would start something long-lived or measure for minutes with valid defaults:
# only their help here.
_STARTS_SOMETHING = {("serve",), ("kvm", "sandbox", "up"), ("assess",), ("run",),
                     ("preflight",)}  # preflight --window 70000 would watch for 19 hours
HOSTILE = ["../../x", "[/]", "[bold]x", "\x1b]0;pwned\x07", "=cmd|' /C calc'!A0", "nan", "inf",
           "-1", "70000", "", "é" * 3, "x" * 5000, "a\r\nb"]
# Text no terminal types, and digits int() reads but a person does not: an undecodable byte
# of the command line (``$'\xff'``, which Python hands over as a lone surrogate), a NUL (an
# experiment file's or a result file's ``\u0000``), a superscript, Arabic-Indic digits,
# full-width digits and a digit-grouping underscore.
UNTYPABLE = ["\udcff", "a\udcffb", "\ud800", "a\x00b", "²", "١٢", "１２", "1_000"]


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
    for value in HOSTILE + UNTYPABLE:
        if positionals:
            cases.append([*path, *([value] * positionals)])
    for option in _value_options(command):
        filler = ["nope"] * positionals
        cases += [[*path, *filler, option, v] for v in HOSTILE[:10] + UNTYPABLE]
    return cases


def _strict(text: str) -> Any:
    def refuse(constant: str) -> Any:
        raise ValueError(f"not strict JSON: {constant}")
    return json.loads(text, parse_constant=refuse)


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store: Store) -> Path:
    """An empty store as the default store, SQLite or PostgreSQL (the `store` fixture, which
    runs the test on each); the working folder three levels deep, so a hostile relative path
    like ../../x stays inside tmp_path."""
    work = tmp_path / "a" / "b" / "c"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    monkeypatch.setenv("VIRTBENCH_STORE", store.location)
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
    assert not problems, (f"{len(problems)} of {count}:\n"
                          + "\n".join(p.partition("\n")[0] for p in problems)  # every one
                          + "\n\n" + "\n".join(problems[:5]))
    assert count > 600
    assert not (sandbox.parent / "x").exists()  # ../../x stayed inside tmp_path


# ---- the same, as real processes: closed standard streams, an ASCII terminal, argv bytes ----

def _two_runs(location: str) -> list[str]:
    """Two small runs whose variant names are not ASCII (µ, ±, 名)."""
    st = Store(location)
    runs = []
    try:
        for scale in (1.0, 1.1):
            run_id = st.create_run(experiment="sweep", description="µs ± 名", spec_yaml="",
                                   spec_path="", seed=1, host="h", target="local",
                                   baseline="µ-one", version="test")
            st.add_variants(run_id, [("µ-one", {}), ("two±名", {})], "µ-one")
            st.add_workload(run_id, "w", "exec.command", 0, {}, [
                Metric("wall_time_s", "s", Better.LOWER, "time of one run", primary=True)])
            for order, (variant, rep) in enumerate((v, r) for v in ("µ-one", "two±名")
                                                   for r in range(3)):
                value = scale * (1 + order / 10)
                st.record_trial(run_id, TrialRecord(variant, "w", rep, order, False, "ok", "",
                                                    1.0, 1.0 + value, "local", None, {}),
                                [Measurement("wall_time_s", value)], {"wall_time_s": "s"})
            st.set_run_status(run_id, "complete", "fixed repetitions (3)")
            runs.append(run_id)
    finally:
        st.close()
    return runs


def _started(argv: list[str | bytes], redirect: str = "",
             env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """``virtbench ARGV`` as a process, its streams redirected by ``redirect`` (``>&-``)."""
    command: list[str | bytes] = [sys.executable, "-m", "virtbench", *argv]
    return subprocess.Popen(["sh", "-c", f'exec "$@" {redirect}', "sh", *command],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, **(env or {})})


def test_streams_encodings_and_argv_bytes_as_real_processes(tmp_path: Path) -> None:
    """Any standard stream closed, an output encoding that cannot show µ, an argument that is
    not UTF-8, a store that is a symlink loop: one line on stderr and a documented exit code,
    never a traceback (the in-process sweep above cannot close a descriptor). Started at once,
    waited for each: a dozen processes at the cost of the slowest."""
    location = str(tmp_path / "s.db")
    first, _second = _two_runs(location)
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    store = ["--store", location]
    closed_out = "standard output is closed"
    not_utf8 = "is the byte 0xff, which is not UTF-8"
    ascii_env = {"PYTHONIOENCODING": "ascii"}
    c_locale = {"LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}  # ASCII too
    # argv, redirection, environment, exit code, what stderr's one line says (exit 0: stdout)
    cases: list[tuple[list[str | bytes], str, dict[str, str] | None, int, str]] = [
        (["report", first, *store, "-f", "json"], ">&-", None, 1, closed_out),
        (["runs", *store], ">&-", None, 1, closed_out),  # a rich table
        (["history", "sweep", *store, "--json"], ">&-", None, 1, closed_out),
        (["workloads", "--json"], ">&-", None, 1, closed_out),
        (["parse", "iperf3", str(IPERF3), "--json"], ">&-", None, 1, closed_out),
        (["--help"], ">&-", None, 1, closed_out),
        (["report", "nope", *store], "2>&-", None, 2, ""),  # nothing can be said; exit 2
        (["report", first, *store], "", ascii_env, 0, "\\xb5-one"),
        (["runs", *store], "", ascii_env, 0, "\\u2026"),  # a cut cell's ellipsis
        (["report", first, *store], "", c_locale, 0, "\\xb5-one"),
        (["report", "µ", *store], "", ascii_env, 2, "run '\\xb5' is neither"),
        ([b"report", b"\xff", *store], "", None, 2, not_utf8),
        ([b"hosts", b"runs", b"\xff", *store], "", None, 2, not_utf8),
        ([b"run", b"--resume", b"\xff", b"x.yaml", *store], "", None, 2, not_utf8),
        (["runs", "--store", str(tmp_path / "a")], "", None, 2, "a symlink loop"),
    ]
    started = [(case, _started(case[0], case[1], case[2])) for case in cases]
    problems = []
    for (argv, redirect, env, code, said), proc in started:
        out, err = (b.decode("utf-8", "replace") for b in communicate(proc, 120))
        shown = f"{argv} {redirect} {env or ''}: exit {proc.returncode}"
        lines = err.strip().splitlines()
        if proc.returncode != code or "Traceback" in err:
            problems.append(f"{shown}, not {code}\n{err[-600:]}")
        elif code and said and not (len(lines) == 1 and lines[0].startswith("error: ")
                                    and said in lines[0]):
            problems.append(f"{shown}: not one error line saying {said!r}: {lines}")
        elif env in (ascii_env, c_locale) and not (out + err).isascii():
            problems.append(f"{shown}: output not ASCII")
        elif code == 0 and said not in out:  # what ASCII cannot show, as an escape
            problems.append(f"{shown}: {said!r} not in the output\n{out[-600:]}")
    assert not problems, "\n".join(problems)
