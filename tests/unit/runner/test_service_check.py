"""A workload whose lab does not provide the services it needs is refused before anything runs,
with the workload, the lab and the missing kind named (the real plugins, a fake target)."""

from __future__ import annotations

from pathlib import Path

import pytest

from virtbench.model import VirtbenchError
from virtbench.runner import Runner, RunRecord, build_plan, check_experiment
from virtbench.spec import parse_experiment
from virtbench.store import Store
from virtbench.targets.fake import FakeTarget
from virtbench.targets.local import LocalTarget
from virtbench.targets.target_contract import Target

pytestmark = pytest.mark.usefixtures("no_processes")


def _problems(lab: str, workloads: str, target: Target | None = None) -> list[str]:
    text = f"name: x\nlab: {lab}\nvariants: [{{name: a}}]\nworkloads: {workloads}\n"
    return [p for p in check_experiment(parse_experiment(text), target=target or FakeTarget())
            if " needs a " in p]


def test_a_web_workload_on_the_storage_lab_is_refused() -> None:
    assert _problems("{kind: storage}", "[{name: web.load}]") == [
        "workload web.load needs a WebStack; lab storage provides FilesystemService, "
        "ResourceLimits"]


def test_each_workload_is_named_once() -> None:
    problems = _problems("{kind: web}", "[{name: net.qos-transfer, id: a}, "
                                        "{name: net.qos-transfer, id: b}, {name: storage.fio}]")
    assert problems == ["workload net.qos-transfer needs a ClientServerPath; lab web provides "
                        "WebStack"]


def test_what_the_lab_provides_is_accepted() -> None:
    # the namespace labs build on this machine only: a local target (which runs nothing here)
    assert _problems("{kind: vswitch}", "[{name: net.qos-transfer}, {name: net.qos-probe}, "
                                        "{name: net.packet-rate}]", LocalTarget()) == []
    assert _problems("{kind: vnf-router}", "[{name: net.router-throughput}, "
                                           "{name: net.packet-rate}]", LocalTarget()) == []
    assert _problems("{kind: web}", "[{name: web.load}]") == []


def test_a_lab_without_services_suits_workloads_that_need_none() -> None:
    # storage.fio reads a FilesystemService when there is one, else writes where it is told
    assert _problems("{kind: host}", "[{name: storage.fio}, {name: cpu.crc32c}]") == []
    assert _problems("{kind: host}", "[{name: net.router-throughput}]") == [
        "workload net.router-throughput needs a RouterPath; lab host provides nothing"]


def test_params_that_replace_the_labs_service_lift_the_need() -> None:
    assert _problems("{kind: host}", "[{name: web.load, params: {urls: "
                                     "['http://127.0.0.1:9/x']}}]") == []
    assert _problems("{kind: host}", "[{name: web.load, params: {cache_state: cold, urls: "
                                     "['http://127.0.0.1:9/x']}}]") == [
        "workload web.load needs a WebStack; lab host provides nothing"]
    assert _problems("{kind: host}", "[{name: net.packet-rate, params: {sender_ns: a, "
                                     "sender_iface: a0, receiver_ns: b, receiver_iface: b0}}]"
                     ) == []


def test_a_searched_workload_needs_what_its_workload_needs() -> None:
    search = ("search: {load: rate_pps, duration: duration_s, unit: frames/s, lower: 1000, "
              "upper: 2000, precision: 0.1, durations_s: [1], integer: true, "
              "pass_if: [{metric: loss_ratio, max: 0}]}")
    assert _problems("{kind: storage}", f"[{{name: net.packet-rate, {search}}}]") == [
        "workload net.packet-rate needs a PacketPath; lab storage provides FilesystemService, "
        "ResourceLimits"]


def test_a_part_the_labs_params_turn_off_is_named_as_such() -> None:
    assert _problems("{kind: assess-probes, params: {disk: true}}",
                     "[{name: probe.iperf3}, {name: probe.fio, params: {vary: disk_cache}}]"
                     ) == ["workload probe.iperf3 needs a VethPair; lab assess-probes provides "
                           "one only with other params (with these it provides ScratchDisk)"]


def test_the_runner_refuses_before_the_lab_is_built(tmp_path: Path) -> None:
    text = "name: x\nlab: {kind: storage}\nvariants: [{name: a}]\nworkloads: [{name: web.load}]\n"
    store = Store(str(tmp_path / "s.db"))
    target = FakeTarget()
    with pytest.raises(VirtbenchError, match=r"cannot run; fix these first:\n  workload web.load "
                                             r"needs a WebStack; lab storage provides"):
        Runner(build_plan(parse_experiment(text)), RunRecord.new(store, text), workdir=tmp_path,
               target=target).run()
    assert store.runs() == []
    assert target.calls == []  # no lab up, no trial
