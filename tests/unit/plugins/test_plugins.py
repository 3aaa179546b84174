"""Meta-tests: every built-in plugin honours the contract (like datasette's hook tests)."""

from __future__ import annotations

import json

from virtbench.labs.lab_contract import Lab
from virtbench.plugins import all_labs, all_parsers, all_workloads
from virtbench.workloads.workload_contract import Workload


def test_every_workload_declares_its_contract() -> None:
    workloads = all_workloads()
    assert {"cpu.crc32c", "cpu.aes", "media.x265", "exec.command"} <= set(workloads)
    for name, cls in workloads.items():
        assert cls.name == name and cls.description, name
        assert cls.metrics, f"{name} declares no metrics"
        names = [m.name for m in cls.metrics]
        assert len(names) == len(set(names)), f"{name} declares a metric twice"
        for metric in cls.metrics:
            assert metric.unit and metric.description, f"{name}.{metric.name}"
        for tool in cls.tools:
            assert tool.binary and tool.package, name
        for field_name, field in cls.Params.model_fields.items():
            assert field.description, f"{name}: param {field_name} has no description"


def test_every_declared_knob_has_a_meaning_and_says_what_it_accepts() -> None:
    plugins: dict[str, type[Workload] | type[Lab]] = {**all_workloads(), **all_labs()}
    declaring = {name for name, cls in plugins.items() if cls.knobs}
    assert {"cpu.crc32c", "cpu.aes", "media.x265", "vnf-router", "vswitch", "storage", "web",
            "kvm-guest"} <= declaring
    for name, cls in plugins.items():
        names = [knob.name for knob in cls.knobs]
        assert len(names) == len(set(names)), f"{name} declares a knob twice"
        for knob in cls.knobs:
            assert knob.meaning.strip() and "\n" not in knob.meaning, f"{name}.{knob.name}"
            assert knob.accepts and knob.accepts != "any value", f"{name}.{knob.name}"
    # The listing a user reads: `virtbench labs --json` / `workloads --json` show every knob.
    from typer.testing import CliRunner

    from virtbench.cli.root import app

    for command, found in (("labs", all_labs()), ("workloads", all_workloads())):
        result = CliRunner().invoke(app, [command, "--json"])
        assert result.exit_code == 0, result.output
        listed = {entry["name"]: entry["knobs"] for entry in json.loads(result.output)}
        for name, cls in found.items():
            assert {k: v["meaning"] for k, v in listed[name].items()} == {
                knob.name: knob.meaning for knob in cls.knobs}, name
    output = CliRunner().invoke(app, ["labs", "--json"]).output
    labs = {lab["name"]: lab for lab in json.loads(output)}
    assert labs["vnf-router"]["knobs"]["neighbours"]["values"] == "int ≥ 0"


def test_a_knob_checks_values_by_type_choices_and_parser() -> None:
    from pydantic import NonNegativeInt

    from virtbench.contract import Knob, parsed_by
    from virtbench.workloads.cpu.features import CPU_FEATURES_KNOB

    count = Knob("n", "a count", NonNegativeInt)
    assert count.problem(2) is None
    assert count.problem(-1) == "Input should be greater than or equal to 0"
    assert count.problem(True) is not None and count.problem("2") is not None  # strict
    switch = Knob("switch", "a switch", choices=("ovs", "linux-bridge"))
    assert switch.problem("ovs") is None and switch.problem("vpp") == (
        "must be one of ovs | linux-bridge")
    assert CPU_FEATURES_KNOB.problem(["aes", "SSE4_2"]) is None
    assert CPU_FEATURES_KNOB.problem("host") is None
    assert "unknown CPU feature 'aex'" in (CPU_FEATURES_KNOB.problem(["aex"]) or "")

    def even(value: int) -> None:
        if value % 2:
            raise ValueError("must be even")

    assert Knob("e", "even", parsed_by(even, int)).problem(3) == "must be even"
    assert Knob("e", "even", parsed_by(even, int)).accepts == "int"


def test_every_workload_with_defaults_has_a_primary_metric() -> None:
    for name, cls in all_workloads().items():
        if all(not f.is_required() for f in cls.Params.model_fields.values()):
            assert cls().primary_metrics(), f"{name} has no primary metric"


def test_labs_and_parsers_are_discovered() -> None:
    assert "host" in all_labs()
    for tool, parser in all_parsers().items():
        assert parser.tool == tool and parser.metrics and parser.description


def test_labs_command_lists_every_param_with_its_default() -> None:
    import json

    from typer.testing import CliRunner

    from virtbench.cli.root import app

    result = CliRunner().invoke(app, ["labs", "--json"])
    assert result.exit_code == 0, result.output
    labs = {lab["name"]: lab for lab in json.loads(result.output)}
    assert set(labs) == set(all_labs())
    for name, cls in all_labs().items():
        assert set(labs[name]["params"]) == set(cls.Params.model_fields), name
        for param in labs[name]["params"].values():
            assert param["description"], name
    vswitch = labs["vswitch"]["params"]
    assert vswitch["vhost_user_ports"]["default"] == []  # a default factory, shown all the same
    assert labs["kvm-guest"]["params"]["domain"]["default"] == "(required)"


def test_missing_tools_name_the_package_to_install() -> None:
    from virtbench.contract import Tool, missing_tools
    from virtbench.workloads.net.qos_transfer import QosTransfer

    found = {"iperf3": "/usr/bin/iperf3", "irtt": "/usr/bin/irtt"}
    problems = missing_tools("lab x", found.get, [Tool("iperf3", "iperf3"), Tool("wrk", "wrk")])
    assert problems == ["lab x: 'wrk' not found; install the Debian package 'wrk' "
                        "(apt-get install wrk)"]

    class Host:
        which = staticmethod(found.get)

        @staticmethod
        def describe() -> str:
            return "h"

    dumpcap = QosTransfer(QosTransfer.Params(capture_tool="dumpcap"))
    assert dumpcap.check(Host()) == [  # type: ignore[arg-type]
        "net.qos-transfer: 'dumpcap' not found on h; install the Debian package "
        "'wireshark-common' (apt-get install wireshark-common)"]
    assert QosTransfer(QosTransfer.Params(capture=False)).check(Host()) == []  # type: ignore[arg-type]
