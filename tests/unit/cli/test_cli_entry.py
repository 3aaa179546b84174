"""The `virtbench` entry point: a plain parse runs without the app, and prints what the app prints.

The start-up cost itself is a benchmark (benchmarks/net_capture_speed.py); here, what makes it:
which modules a parse imports.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from virtbench.cli.entry import PlainParse, plain_parse

DATA = Path(__file__).parents[2] / "data"
PCAP = DATA / "pcap" / "two_flows_us.pcap"
IRTT = DATA / "irtt" / "irtt0.9-tstamp-none-loopback.json.gz"


@pytest.mark.parametrize(("args", "env", "expected"), [
    (["parse", "fio", "out.json"], "", PlainParse("fio", Path("out.json"), False, None, False)),
    (["--debug", "parse", "pcap", "c.pcap", "--json", "--flow", "udp"], "",
     PlainParse("pcap", Path("c.pcap"), True, "udp", True)),
    (["parse", "--flow=tcp:5201", "pcap", "-"], "yes",
     PlainParse("pcap", Path("-"), False, "tcp:5201", True)),
    (["parse", "irtt", "x.json.gz"], "0", PlainParse("irtt", Path("x.json.gz"), False, None,
                                                     False)),
])
def test_a_plain_parse_is_recognised(args: list[str], env: str, expected: PlainParse) -> None:
    assert plain_parse(args, env) == expected


@pytest.mark.parametrize(("args", "env"), [
    ([], ""), (["--help"], ""), (["report"], ""), (["parse"], ""), (["parse", "--help"], ""),
    (["parse", "fio"], ""), (["parse", "fio", "a", "b"], ""), (["parse", "fio", "a", "-x"], ""),
    (["parse", "fio", "a", "--json", "--json"], ""),
    (["parse", "pcap", "a", "--flow", "udp", "--flow", "tcp"], ""),
    (["parse", "pcap", "a", "--flow"], ""), (["parse", "fio", "a", "--debug"], ""),
    (["parse", "fio", "a"], "maybe"),
])
def test_anything_else_is_the_apps_to_read(args: list[str], env: str) -> None:
    assert plain_parse(args, env) is None


def _entry(*args: str, module: str = "virtbench") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("args", [("pcap", str(PCAP), "--json", "--flow", "udp"),
                                  ("irtt", str(IRTT), "--json"), ("irtt", str(IRTT))])
def test_the_entry_prints_what_the_app_prints(args: tuple[str, ...]) -> None:
    fast, app = _entry("parse", *args), _entry("parse", *args, module="virtbench.cli")
    assert fast.returncode == app.returncode == 0, fast.stderr + app.stderr
    assert fast.stderr == app.stderr
    if "--json" in args:
        assert json.loads(fast.stdout) == json.loads(app.stdout)
    else:
        assert fast.stdout == app.stdout


def test_a_failure_is_reported_as_the_app_reports_it(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.json")
    fast, app = _entry("parse", "fio", missing), _entry("parse", "fio", missing,
                                                        module="virtbench.cli")
    assert fast.returncode == app.returncode == 2
    assert fast.stderr == app.stderr and fast.stderr.startswith("error:")


def test_help_and_usage_errors_are_the_apps() -> None:
    assert "--flow" in _entry("parse", "--help").stdout
    usage = _entry("parse", "pcap", str(PCAP), "--jsn")
    assert usage.returncode == 2 and "--jsn" in usage.stderr


# What start-up costs is what a parse imports: the app's libraries take seconds here.
HEAVY = ("scipy", "sqlalchemy", "pydantic", "rich", "typer", "numba", "matplotlib", "jinja2")
PROBE = """
import json, sys
args, candidates = json.loads(sys.argv[1]), json.loads(sys.argv[2])
sys.argv = ["virtbench", *args]
from virtbench.cli.entry import main
try:
    main()
finally:
    print(json.dumps([m for m in candidates if m in sys.modules]), file=sys.stderr)
"""


@pytest.mark.parametrize(("args", "heavy"), [
    (["parse", "pcap", str(PCAP), "--json"], HEAVY),  # numpy: the compiled capture loops need it
    (["parse", "irtt", str(IRTT), "--json"], (*HEAVY, "numpy")),
])
def test_a_parse_imports_none_of_the_apps_libraries(args: list[str], heavy: tuple[str, ...]
                                                    ) -> None:
    out = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args), json.dumps(heavy)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    loaded = json.loads(out.stderr.strip().splitlines()[-1])
    assert loaded == []


# The app itself (help, and commands that need no statistics or store) must not pay for the
# libraries only some commands use: each costs a large part of a second of start-up.
APP_HEAVY = ("scipy", "numpy", "sqlalchemy", "matplotlib", "jinja2", "numba", "libvirt")


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"], ["report", "--help"],
                                  ["kvm", "--help"], ["hosts", "--help"], ["assess", "--help"]])
def test_the_apps_help_imports_no_heavy_library(args: list[str]) -> None:
    out = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args), json.dumps(APP_HEAVY)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stderr.strip().splitlines()[-1]) == []


def test_run_check_of_a_cpu_experiment_imports_no_statistics(tmp_path: Path) -> None:
    """Nor the other workloads (the web load generator brings NumPy), the store or the
    profiler: a CPU experiment's check imports the plugins it names (runner.plan)."""
    spec = tmp_path / "cpu.yaml"
    spec.write_text("name: cpu\nworkloads:\n  - {name: cpu.crc32c, params: {size_mib: 1}}\n")
    args = ["run", str(spec), "--check", "--store", str(tmp_path / "s.db")]
    out = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args),
                          json.dumps((*APP_HEAVY, "virtbench.loadgen", "virtbench.profiling",
                                      "virtbench.workloads.web", "virtbench.store"))],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stderr.strip().splitlines()[-1]) == []


def test_the_top_level_help_loads_no_command_group() -> None:
    """`virtbench --help` lists kvm and hosts from their names and help alone: neither group's
    module (libvirt helpers, the fleet's drivers) nor pydantic is imported."""
    groups = ("virtbench.kvm.cli", "virtbench.fleet", "virtbench.contract", "pydantic")
    out = subprocess.run([sys.executable, "-c", PROBE, json.dumps(["--help"]),
                          json.dumps(groups)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stderr.strip().splitlines()[-1]) == []
    listed = out.stdout
    for name in ("kvm", "hosts", "run", "report", "compare", "assess"):
        assert f" {name} " in listed, (name, listed)


def test_a_lazy_group_says_what_the_group_says() -> None:
    """The help shown for a group before it is loaded is the group's own, and using the group
    reaches its real commands."""
    from typer.testing import CliRunner

    from virtbench.cli.lazy import LazyRootGroup
    from virtbench.cli.root import app

    for group in LazyRootGroup.lazy_groups:
        real = group.real()
        assert group.help == real.help, group.name
        assert group.list_commands(None) == real.list_commands(None)  # type: ignore[arg-type]
    result = CliRunner().invoke(app, ["hosts", "--help"])
    assert result.exit_code == 0 and "playbook" in result.output
