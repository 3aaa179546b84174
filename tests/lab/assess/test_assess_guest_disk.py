"""`virtbench assess`'s disk what-if in a scratch guest (the guest lab, one private libvirtd, TCG):
a domain's writethrough disk and its io='threads' measured as found against cache=none
io=native in ONE guest redefined for the two variants, stored as a normal run, attached to the
findings as "measured (this run, in a guest)", and nothing left behind. Needs root, mmdebstrap,
QEMU. Effects are asserted as ratios, never as absolute speeds."""

from __future__ import annotations

import math
import os
import shutil
from pathlib import Path

import pytest
from images import cache_dir

from virtbench.assess.assessment import _attach
from virtbench.assess.findings import Finding, Gain
from virtbench.assess.guest_disk import (
    GUEST_EXPERIMENT,
    GUEST_WORKLOAD,
    guest_disk_for,
    guest_problems,
    run_guest_disk,
)
from virtbench.kvm.guest_host import qemu_process
from virtbench.store import Store

IMAGE = str(cache_dir("virtbench-guest/image"))

pytestmark = [pytest.mark.lab, pytest.mark.timeout(600), pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("mmdebstrap") is None
    or shutil.which("qemu-system-x86_64") is None, reason="needs root, mmdebstrap and QEMU")]


def _finding(rule: str, cache: str, io: str) -> Finding:
    return Finding(rule=rule, title=rule, severity="medium", evidence=[], source="doc",
                   gain=Gain("cited", f"{rule} helps", source="a guide"), measure=rule,
                   extra={"cache": cache, "io": io})


def test_the_disk_what_ifs_are_measured_in_one_scratch_guest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    labs = tmp_path / "labs"
    monkeypatch.setenv("VIRTBENCH_LAB_ROOT", str(labs))
    findings = [_finding("disk-cache", "writethrough", "threads"),
                _finding("disk-io", "none", "threads")]
    whatif = guest_disk_for(findings, IMAGE)
    assert whatif is not None and guest_problems(whatif) == []
    store = Store(str(tmp_path / "assess.db"))
    run_id, effects = run_guest_disk(store, whatif)
    assert store.run(run_id).experiment == GUEST_EXPERIMENT
    assert store.run(run_id).status == "complete"
    by_measure = {e.measure: e for e in effects}
    assert set(by_measure) == {"disk-cache", "disk-io"}
    for effect in effects:
        assert effect.workload == GUEST_WORKLOAD and effect.n == 3
        assert math.isfinite(effect.ci_low) and effect.ci_low <= effect.speedup
        assert "inside a scratch guest" in effect.what and "cache=writethrough" in effect.what
    # writethrough makes QEMU flush the host file per guest write (O_DSYNC), so the what-if
    # reads random-write IOPS; which way they differ is the machine's to say (under TCG the
    # emulation can hide it: BENCHMARKS.md, "guest: disk overhead and cache modes"), not an
    # assertion about virtbench.
    assert by_measure["disk-cache"].metric == "randwrite_iops"
    assert all(e.speedup > 0 and math.isfinite(e.speedup) for e in effects)
    _attach(findings, effects)
    for finding in findings:
        assert finding.gain is not None and finding.gain.basis == "measured"
        sources = [e.source for e in finding.evidence]
        assert "measured (this run, in a guest)" in sources
        assert "cited (not measured)" in sources
    # The guest (its domain is named after this process), its daemon and its session
    # directory with the disks are gone, and the lab's manifest says so.
    assert qemu_process(f"vbguest-{os.getpid()}") is None
    for manifest in labs.glob("vbguest-*.json"):
        assert "session" not in manifest.read_text()
