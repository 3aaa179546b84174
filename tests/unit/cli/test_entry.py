"""The `virtbench` entry point: a plain parse runs without the app, and prints what the app prints.

The start-up cost itself is a benchmark (benchmarks/net_capture_speed.py); here, what makes it:
which modules a parse imports (the app's: test_root.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from virtbench.cli.entry import PlainParse, plain_parse

if TYPE_CHECKING:  # the fixture's result (a conftest is not imported at run time)
    from unit.cli.conftest import Started  # its name for mypy (pyproject.toml)

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
HEAVY = ("scipy", "sqlalchemy", "pydantic", "rich", "typer", "matplotlib", "jinja2")


@pytest.mark.parametrize(("args", "heavy"), [
    (["parse", "pcap", str(PCAP), "--json"], HEAVY),  # numpy: the compiled capture loops need it
    (["parse", "irtt", str(IRTT), "--json"], (*HEAVY, "numpy")),
])
def test_a_parse_imports_none_of_the_apps_libraries(started: Callable[..., Started],
                                                    args: list[str], heavy: tuple[str, ...]
                                                    ) -> None:
    out = started(*args)
    assert out.returncode == 0, out.stderr
    assert out.loaded(*heavy, "virtbench.cli.root", "virtbench.cli.parse") == []


_PLUGIN_SCAN = """
import os, sys
sys.argv = ["virtbench", "run", sys.argv[1], "--check", "--store", sys.argv[2]]
from virtbench.cli.entry import main
try:
    main()
except SystemExit:
    pass
from pydantic.plugin import _loader
print(repr(os.environ.get("PYDANTIC_DISABLE_PLUGINS")), _loader._plugins is None)
"""


@pytest.mark.parametrize(("preset", "expected"), [
    (None, "'__all__' True"),  # no scan: pydantic's plugin cache never filled
    ("", "'' False"),  # the user's value kept: pydantic scans the entry points for plugins
])
def test_the_app_spares_pydantic_its_plugin_scan_unless_told(
        tmp_path: Path, preset: str | None, expected: str) -> None:
    """virtbench uses no pydantic plugin (docs/decisions.md): the app's process tells pydantic
    so, and its first model skips reading every installed package's entry points."""
    spec = tmp_path / "cpu.yaml"
    spec.write_text("name: cpu\nworkloads:\n  - {name: cpu.crc32c, params: {size_mib: 1}}\n")
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    if preset is not None:
        env["PYDANTIC_DISABLE_PLUGINS"] = preset
    out = subprocess.run([sys.executable, "-c", _PLUGIN_SCAN, str(spec), str(tmp_path / "s.db")],
                         capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == expected
