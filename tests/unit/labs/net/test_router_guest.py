"""The vnf-guests lab's checks before anything starts (labs.net.router_guest), without a guest:
a neighbour count refused naming the knob and its bound (the lab param, the host's memory), a
router whose forwarding reads back anything but 1 refused, the wiring a capacity search
through the router guest uses (its ingress MAC published, since no namespace holds it), and
a lab with nothing created removing nothing. The guests boot in
tests/lab/guest/test_router_guest.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from virtbench.labs.net.router_guest import (
    SIDES,
    VnfGuestsLab,
    VnfGuestsParams,
    forwarding_problem,
    neighbour_problems,
)
from virtbench.services import PacketPath, Services
from virtbench.targets.local import LocalTarget
from virtbench.workloads.net.packet_rate import PacketRateParams, lab_path


@pytest.fixture
def lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> VnfGuestsLab:
    monkeypatch.setenv("VIRTBENCH_LAB_ROOT", str(tmp_path / "labs"))
    return VnfGuestsLab(VnfGuestsParams(max_neighbours=2), tmp_path, LocalTarget())


@pytest.mark.parametrize(("count", "needle"), [
    (-1, "knob neighbours must be an integer ≥ 0, got -1"),
    (True, "knob neighbours must be an integer ≥ 0, got True"),
    ("2", "got '2'"),
    (3, "knob neighbours = 3 exceeds the lab param max_neighbours = 2"),
])
def test_refused_before_boot(lab: VnfGuestsLab, count: object, needle: str) -> None:
    problems = lab.check_variant("v", {"neighbours": count})
    assert any(p.startswith("variant v: ") and needle in p for p in problems), problems


def test_a_sane_count_passes(lab: VnfGuestsLab) -> None:
    assert lab.check_variant("v", {"neighbours": 2}) == []
    assert lab.check_variant("v", {}) == []


def test_memory_bounds_the_guests_still_to_boot() -> None:
    # 3 guests of 640 MiB need 1920 MiB; with the router and one neighbour running, 640 more.
    [problem] = neighbour_problems(2, 4, 640, 1000)
    assert "3 more guest(s) × 640 MiB (param memory_mib) = 1920 MiB" in problem
    assert "1000 MiB available" in problem
    assert neighbour_problems(2, 4, 640, 1000, booted=2) == []
    assert neighbour_problems(1, 4, 640, 0, booted=3) == []  # fewer: nothing boots


@pytest.mark.parametrize(("value", "mode", "needle"), [
    ("0\n", "set", "the lab set it to 1, yet it reads back 0"),
    ("0", "image", "param router_forwarding: image, so the image must enable it itself; it "
                   "reads 0"),
    ("", "image", "it reads nothing"),
])
def test_a_router_that_does_not_forward_is_refused(value: str, mode: str, needle: str) -> None:
    problem = forwarding_problem(value, mode)
    assert problem is not None and needle in problem
    assert "a router image must forward between its NICs" in problem


def test_forwarding_on_passes() -> None:
    assert forwarding_problem("1\n", "image") is None


def test_the_search_reaches_the_router_guest_by_its_published_mac(lab: VnfGuestsLab) -> None:
    left, right = SIDES
    published = PacketPath(sender_ns=lab.ns["snd"], sender_iface=lab.taps["left"],
                           receiver_ns=lab.ns["rcv"], receiver_iface=lab.taps["right"],
                           receiver_ip=right.end_ip, next_hop_ns="", next_hop_iface="",
                           next_hop_mac=left.mac)
    path = lab_path(PacketRateParams(), Services("vnf-guests", (published,)))
    assert (path.next_hop_mac, path.receiver_ip) == (left.mac, "10.78.2.2")


def test_run_check_says_emulated_and_counts_vcpus() -> None:
    cores = os.cpu_count() or 1
    notes = VnfGuestsLab.plan_notes(VnfGuestsParams(), {"n0": {"neighbours": 0},
                                                        "nmax": {"neighbours": cores}})
    assert notes[0].startswith("the guests run on a private libvirtd, emulated (TCG)")
    assert any(f"{cores + 1} busy vCPUs on {cores} host CPUs" in n for n in notes)
    assert len(VnfGuestsLab.plan_notes(VnfGuestsParams(), {"n0": {"neighbours": 0}})) == 1


def test_names_carry_the_lab_prefix(lab: VnfGuestsLab) -> None:
    assert all(ns.startswith(lab.prefix) for ns in lab.ns.values())
    assert all(tap.startswith("vbr") and lab.lab_id in tap and len(tap) <= 15
               for tap in lab.taps.values())
    assert lab.domain("rtr").startswith("vbvnf-") and lab.lab_id in lab.domain("rtr")


def test_down_with_nothing_created_removes_nothing(lab: VnfGuestsLab) -> None:
    lab.down()
    assert lab.manifest is None and lab.router is None and lab.neighbours == []
