"""The app (virtbench.cli.root): every command is listed from its name and help alone and loaded
from its module when used, so `virtbench --help` imports no command module and a command
imports its own group's module, not the others'."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import typer
from typer.testing import CliRunner

from virtbench.cli.lazy import LazyCommand, LazyGroup
from virtbench.cli.root import app

if TYPE_CHECKING:  # the fixture's result (a conftest is not imported at run time)
    from unit.cli.conftest import Started  # its name for mypy (pyproject.toml)

ROOT: Any = typer.main.get_command(app)
LAZY = [ROOT.get_command(None, name) for name in ROOT.list_commands(None)]

# The modules that declare commands: none may load before its command is used.
COMMAND_MODULES = ("virtbench.cli.run", "virtbench.cli.host_commands", "virtbench.cli.results",
                   "virtbench.cli.catalog", "virtbench.cli.parse", "virtbench.cli.decide",
                   "virtbench.cli.calibrate", "virtbench.cli.serve", "virtbench.cli.lab_commands",
                   "virtbench.assess", "virtbench.kvm", "virtbench.fleet")
# Libraries some commands need and the app must not pay for before it knows which command runs
# (each costs a large part of a second of start-up); pydantic: typer checks an option's value
# with it, so it loads when a command parses options, never for the top-level help.
HEAVY = ("scipy", "numpy", "sqlalchemy", "matplotlib", "jinja2", "libvirt",
         "starlette", "uvicorn")


def test_the_top_level_help_lists_the_commands_in_their_order() -> None:
    assert ROOT.list_commands(None) == [
        "assess", "run", "preflight", "report", "runs", "facts", "workloads", "labs", "parse",
        "export", "import", "compare", "history", "calibrate", "serve", "lab", "kvm", "hosts"]
    assert all(isinstance(c, LazyCommand | LazyGroup) for c in LAZY)


@pytest.mark.parametrize("lazy", LAZY, ids=lambda c: c.name)
def test_a_lazy_command_says_what_the_command_says(lazy: LazyCommand | LazyGroup) -> None:
    """The help listed before a command is loaded is the first paragraph of its own (what the
    top-level help shows of it); a group's is its whole help, and its commands are its own."""
    real = lazy.real()
    if isinstance(lazy, LazyGroup):
        assert lazy.help == real.help
        assert lazy.list_commands(None) == real.list_commands(None)  # type: ignore[arg-type]
    else:
        assert lazy.short_help == inspect.cleandoc(real.help or "").split("\n\n")[0]
    assert real.name in (lazy.name, "")  # a group built from its app has no name of its own


def test_using_a_lazy_command_reaches_the_real_one(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["hosts", "--help"])
    assert result.exit_code == 0 and "playbook" in result.output
    result = runner.invoke(app, ["runs", "--store", str(tmp_path / "none.db")])
    assert result.exit_code == 2 and "none.db" in result.output  # the store's own error
    result = runner.invoke(app, ["runz"])
    assert result.exit_code == 2 and "Did you mean 'run', 'runs'?" in result.output


def test_the_top_level_help_imports_the_root_alone(started: Callable[..., Started]) -> None:
    """Typer and rich format the help; of virtbench, only the root and what the entry point
    and the error reporting need."""
    out = started("--help")
    assert out.returncode == 0, out.stderr
    assert out.loaded(*COMMAND_MODULES, *HEAVY, "pydantic", "ruamel", "virtbench.contract") == []
    assert {m for m in out.modules if m.startswith("virtbench")} <= {
        "virtbench", "virtbench.cli", "virtbench.cli.entry", "virtbench.cli.root",
        "virtbench.cli.lazy", "virtbench.cli.failures", "virtbench.cli.consoles",
        "virtbench.cli.option_values",
        "virtbench.errors", "virtbench.safetext", "virtbench.targets",
        "virtbench.targets.signals"}
    for name in ("kvm", "hosts", "run", "report", "compare", "assess"):
        assert f" {name} " in out.stdout, (name, out.stdout)


@pytest.mark.parametrize(("command", "module"), [
    ("run", "virtbench.cli.run"), ("report", "virtbench.cli.results"),
    ("compare", "virtbench.cli.decide"), ("kvm", "virtbench.kvm"),
    ("hosts", "virtbench.fleet"), ("assess", "virtbench.assess")])
def test_a_commands_help_imports_its_own_module(started: Callable[..., Started], command: str,
                                                module: str) -> None:
    out = started(command, "--help")
    assert out.returncode == 0, out.stderr
    assert out.loaded(*COMMAND_MODULES) == [module]
    assert out.loaded(*HEAVY) == []


def test_run_check_of_a_cpu_experiment_imports_what_it_checks(
        started: Callable[..., Started], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Nor the other workloads (the web load generator brings NumPy), the store, the runner's
    engine, the profiler, a table or a capacity search's algorithm (the experiment has no
    search: only the ``search:`` block's model is built): a CPU experiment's check imports the
    plugins it names (runner.plan). Nor the lab services' kinds: a CPU experiment's plugins
    publish and need none. Into a pipe it prints plain lines: no rich at all (a console is
    made only for a terminal, cli.check_report, or once something fails, cli.consoles), and
    it starts no process: no logging (targets.process logs only a process that outlived
    SIGKILL)."""
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE"):  # rich would take the pipe for a terminal
        monkeypatch.delenv(name, raising=False)
    spec = tmp_path / "cpu.yaml"
    spec.write_text("name: cpu\nworkloads:\n  - {name: cpu.crc32c, params: {size_mib: 1}}\n")
    out = started("run", str(spec), "--check", "--store", str(tmp_path / "s.db"))
    assert out.returncode == 0, out.stderr
    assert out.loaded(*COMMAND_MODULES) == ["virtbench.cli.run"]
    assert out.loaded(*HEAVY, "virtbench.loadgen",
                      "virtbench.profiling", "virtbench.workloads.web", "virtbench.store",
                      "virtbench.runner.engine", "virtbench.preflight", "virtbench.facts",
                      "virtbench.cli.progress", "virtbench.cli.reporting",
                      "rich.table", "rich.markdown", "virtbench.search.algorithm",
                      "virtbench.search.multi", "virtbench.search.goals",
                      "virtbench.search.consistency",
                      # the lab services' kinds (a dozen dataclasses): the contracts need only
                      # their base (virtbench.service_base)
                      "virtbench.services", "rich", "logging") == []
    assert out.stdout.startswith("cpu: 1 variants × 1 workloads; ")


def test_reading_runs_needs_no_pydantic(started: Callable[..., Started], tmp_path: Path) -> None:
    """typer checks option values with pydantic (0.15 s here); a command whose options are
    strings and paths does without it (virtbench.cli.option_values), and `runs` needs none else."""
    out = started("runs", "--store", str(tmp_path / "none.db"))
    assert out.returncode == 2 and "none.db" in out.stderr
    assert out.loaded("pydantic", "virtbench.cli.results") == ["virtbench.cli.results"]


def test_runs_imports_no_scipy_and_a_terminal_report_no_matplotlib(
        started: Callable[..., Started], tmp_path: Path) -> None:
    """`runs` reads the store and prints a table: no statistics, so no SciPy. A terminal report
    of two variants × 3 values computes intervals, a speedup and a significance test (SciPy's
    special functions and tests, imported when evaluated) but draws no chart: no matplotlib."""
    spec = tmp_path / "cpu.yaml"
    spec.write_text("name: cpu\nworkloads:\n  - {name: cpu.crc32c, params: {size_mib: 1, "
                    "loops: 1}}\nrepetitions: 3\nwarmup: 0\nvariants:\n  - {name: a}\n"
                    "  - {name: b}\n")
    store = str(tmp_path / "s.db")
    ran = started("run", str(spec), "--store", store, "--quiet")
    assert ran.returncode == 0, ran.stderr
    runs = started("runs", "--store", store)
    assert runs.returncode == 0 and " cpu " in runs.stdout, runs.stderr
    assert runs.loaded("scipy", "matplotlib", "virtbench.stats") == []
    report = started("report", "--store", store)
    assert report.returncode == 0 and "speedup" in report.stdout, report.stderr
    two_sample = "virtbench.stats.two_sample"
    assert report.loaded("matplotlib", two_sample) == [two_sample]


def test_comparing_two_files_needs_no_pydantic(started: Callable[..., Started],
                                               tmp_path: Path) -> None:
    """compare's number options have parsers of their own (cli.options.number_parser): typer's
    pydantic check would only call them; the check here calls them itself."""
    missing = [str(tmp_path / "base.json"), str(tmp_path / "new.json")]
    out = started("compare", *missing, "--fail-if-worse", "5", "--equivalence", "1")
    assert out.returncode == 2 and "base.json: no such file" in out.stderr
    assert out.loaded("pydantic", "virtbench.cli.decide") == ["virtbench.cli.decide"]
    refused = started("compare", *missing, "--fail-if-worse", "-1")
    assert refused.returncode == 2 and "--fail-if-worse" in refused.stderr
