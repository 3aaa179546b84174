"""Third-party plugins of every kind register through the one `virtbench.plugins` entry point."""

from __future__ import annotations

import pkgutil
import sys
from collections.abc import Iterator
from importlib import import_module
from pathlib import Path

import pytest

import virtbench
from virtbench import plugins, registry
from virtbench.model import VirtbenchError
from virtbench.plugins import (
    all_labs,
    all_sections,
    all_workloads,
    get_lab,
    get_parser,
    get_workload,
)

PLUGIN = '''
from virtbench.contract import Knob
from virtbench.labs.lab_contract import Lab, LabState
from virtbench.model import Better, Measurement, Metric
from virtbench.parsers.parser_contract import Parser
from virtbench.report.sections import SectionPlugin
from virtbench.workloads.workload_contract import TrialResult, Workload

ANSWER = Metric("answer", "1", Better.HIGHER, "the answer", primary=True)


class Answer(Workload):
    name = "thirdparty.answer"
    description = "always 42"
    metrics = (ANSWER,)
    knobs = (Knob("question", "what is asked", str),)

    def run(self, ctx):
        return TrialResult([Measurement("answer", 42.0)])


class Room(Lab):
    name = "thirdparty.room"
    description = "a room"

    def enter(self, variant, knobs):
        return LabState()


def register():
    return [Answer, Room, Parser("answer", "42", (ANSWER,), lambda text: []),
            SectionPlugin("thirdparty", lambda analysis: [])]
'''


def _install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str) -> None:
    (tmp_path / "vb_thirdparty.py").write_text(source)
    dist = tmp_path / "vb_thirdparty-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: vb-thirdparty\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        f"[{registry.ENTRY_POINT_GROUP}]\nanswer = vb_thirdparty:register\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry.clear_cache()


@pytest.fixture(autouse=True)
def _forget_plugins() -> Iterator[None]:
    yield
    sys.modules.pop("vb_thirdparty", None)
    registry.clear_cache()


def test_one_entry_point_registers_every_kind(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    _install(tmp_path, monkeypatch, PLUGIN)
    assert get_workload("thirdparty.answer")().metrics[0].name == "answer"
    assert "cpu.crc32c" in all_workloads()  # built-ins still there
    assert get_lab("thirdparty.room").description == "a room" and "host" in all_labs()
    assert get_parser("answer").description == "42" and get_parser("fio").tool == "fio"
    assert {"thirdparty", "net-qos"} <= set(all_sections())


def test_a_plugin_knob_is_accepted_and_checked(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from virtbench.spec import SpecError, parse_experiment

    _install(tmp_path, monkeypatch, PLUGIN)
    text = ("name: x\nvariants:\n  - {name: a, knobs: {question: why}}\n"
            "  - {name: b, knobs: {questoin: how}}\nworkloads: [{name: thirdparty.answer}]\n")
    with pytest.raises(SpecError, match=r"x.yaml:4: .*unknown knob 'questoin'; "
                                        r"did you mean 'question'\?"):
        parse_experiment(text, "x.yaml")


def test_a_plugin_of_no_known_kind_is_refused_by_name(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    _install(tmp_path, monkeypatch, "def register():\n    return [object]\n")
    with pytest.raises(VirtbenchError, match=r"entry point answer = vb_thirdparty:register "
                                             r"returned <class 'object'>, which is none of"):
        all_workloads()


def test_a_name_taken_twice_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = ("from virtbench.workloads.cpu.crc32c import Crc32cWorkload\n\n"
              "class Copy(Crc32cWorkload):\n    pass\n\n"
              "def register():\n    return [Copy]\n")
    _install(tmp_path, monkeypatch, source)
    with pytest.raises(VirtbenchError, match=r"two Workload plugins are named 'cpu\.crc32c'"):
        all_workloads()


def test_every_module_that_exports_plugins_is_listed() -> None:
    """Built-ins are an explicit list (virtbench.plugins): a new module that is not on it would
    be silently lost."""
    listed = {"WORKLOADS": plugins._builtin_workloads(), "LABS": plugins._builtin_labs(),
              "PARSERS": plugins._builtin_parsers(), "SECTIONS": plugins._builtin_sections()}
    exporting: dict[str, set[str]] = {export: set() for export in listed}
    for package in ("workloads", "labs", "parsers", "report.sections"):
        path = [str(Path(virtbench.__path__[0], *package.split(".")))]
        names = [f"virtbench.{package}"] + [
            info.name for info in pkgutil.walk_packages(path, f"virtbench.{package}.")
            if not info.name.rsplit(".", 1)[-1].startswith("_")]  # private: probe scripts
        for name in names:
            module = import_module(name)
            for export, found in exporting.items():
                if getattr(module, export, ()):
                    found.add(name)
    assert exporting == {export: {origin for _plugin, origin in builtins}
                         for export, builtins in listed.items()}


WORKLOAD_ONLY = PLUGIN.split("class Room")[0].replace(
    "from virtbench.labs.lab_contract import Lab, LabState\n", "").replace(
    "from virtbench.report.sections import SectionPlugin\n", "").replace(
    "from virtbench.parsers.parser_contract import Parser\n", "") + (
    "def register():\n    return [Answer]\n")


@pytest.mark.parametrize("third_party", [False, True])
def test_a_lookup_imports_only_the_kind_it_asks_for(third_party: bool, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Asking for workloads (what `run --check` of a CPU experiment does) imports no lab or
    report module and not SciPy's statistics, also with a third-party plugin installed: its
    kind is read from its own classes, not by importing every kind."""
    import os
    import subprocess

    env = dict(os.environ)
    if third_party:
        _install(tmp_path, monkeypatch, WORKLOAD_ONLY)
        env["PYTHONPATH"] = str(tmp_path)
    probe = ("import sys\n"
             "from virtbench.plugins import all_workloads\n"
             "print(sorted(all_workloads()))\n"
             "print(sorted({m.split('.')[1] for m in sys.modules if m.startswith('virtbench.')}))"
             "\nprint('scipy.stats' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=True, env=env)
    names, families, scipy_stats = done.stdout.splitlines()
    assert ("'thirdparty.answer'" in names) is third_party and "'cpu.crc32c'" in names
    assert "'workloads'" in families
    for other in ("'report'", "'labs'", "'runner'", "'spec'", "'analysis'"):
        assert other not in families, (other, families)
    assert scipy_stats == "False"


@pytest.mark.parametrize(("better", "message"), [
    ('"faster"', r"metric 'answer': field 'better' must be 'lower', 'higher' or 'none' "
                 r"\(no direction: a count that describes the trial\), got 'faster'"),
    ("None", r"metric 'answer': a primary metric needs a direction \(field 'better'"),
])
def test_a_plugin_metric_with_a_bad_direction_is_refused_by_name(
        better: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = PLUGIN.replace('Metric("answer", "1", Better.HIGHER,',
                            f'Metric("answer", "1", {better},')
    assert source != PLUGIN
    _install(tmp_path, monkeypatch, source)
    with pytest.raises(VirtbenchError, match=r"plugin entry point answer = vb_thirdparty:register "
                                             r"failed to load: VirtbenchError: " + message):
        all_workloads()


def test_a_plugin_metric_may_declare_no_direction(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    source = PLUGIN.replace("    metrics = (ANSWER,)", '    metrics = (ANSWER, Metric("asked", '
                            '"questions", None, "questions asked (describes the trial)"))')
    assert source != PLUGIN
    _install(tmp_path, monkeypatch, source)
    asked = get_workload("thirdparty.answer").metrics[1]
    assert asked.better is None and not asked.directed and asked.direction_text == "no direction"
