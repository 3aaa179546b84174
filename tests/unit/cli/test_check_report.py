"""`run --check`'s account of the plan: a lab's word on what the figures will mean (the guest
lab under TCG) is printed beside the trials, from the lab's class and params alone."""

from __future__ import annotations

from pathlib import Path

from virtbench.cli.check_report import plan_lines
from virtbench.runner import build_plan
from virtbench.runner.estimate import estimate
from virtbench.runner.trial_times import TrialTimes
from virtbench.spec import load_resolved

REPO = Path(__file__).resolve().parents[3]


def _lines(name: str, tmp_path: Path) -> list[str]:
    plan = build_plan(load_resolved(REPO / "examples" / name)[0])
    return plan_lines(plan, estimate(plan, TrialTimes({}, tmp_path / "times.json")))


def test_emulated_guest_named_with_what_it_makes_meaningless(tmp_path: Path) -> None:
    lab = [line for line in _lines("storage-guests.yaml", tmp_path) if line.startswith("lab ")]
    assert lab[0].startswith("lab guest: the guest will be emulated (a private libvirtd: TCG")
    assert "CPU-bound figures" in lab[0] and "remain meaningful" in lab[0]
    assert lab[1:] == ["lab guest: the variants differ in vcpus: meaningless under emulation "
                       "(the emulated vCPUs, not the knob, set the figures)"]
    cache = _lines("storage-guests-cache.yaml", tmp_path)
    assert any(line.startswith("lab guest: the variants differ in cache, io: meaningful")
               for line in cache)


def test_a_lab_without_notes_adds_no_line(tmp_path: Path) -> None:
    assert not [line for line in _lines("quick.yaml", tmp_path) if line.startswith("lab ")]
