"""End to end on real libvirt + QEMU (TCG): tune a tiny guest to require ssse3, sse4.1, sse4.2
and aes, see the flags inside it, roll back, see them gone."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import libvirt
import pytest
from kvm_guest_image import GuestImage
from kvm_libvirtd import remove_domain

from virtbench.kvm.apply import DomainTuner, VerificationFailed
from virtbench.kvm.cpumodels import ModelCatalog
from virtbench.kvm.domxml import CpuChange, read_cpu
from virtbench.kvm.flag_probes import ConsoleLogProbe
from virtbench.kvm.guest_domain import direct_boot_domain_xml
from virtbench.kvm.hostcpu import read_host_cpu
from virtbench.kvm.state import JsonFileState
from virtbench.kvm.tuning_plan import make_plan
from virtbench.model import VirtbenchError

pytestmark = [pytest.mark.lab, pytest.mark.timeout(1500)]

# sse4.2 alone crashes busybox under TCG (glibc's SSE4.2 string code needs SSSE3's PALIGNR).
FLAGS = ("ssse3", "sse4.1", "sse4.2", "aes")


@pytest.fixture(scope="module")
def guest(private_libvirtd: str, guest_image: GuestImage,
          tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One guest for the module (a TCG boot is seconds of the suite's CPU): each test ends with
    the domain's original CPU running again and asserts it, as a fresh guest would start."""
    conn = libvirt.open(private_libvirtd)
    name = f"vbkvm-e2e-{uuid.uuid4().hex[:6]}"
    log = tmp_path_factory.mktemp("e2e-guest") / "console.log"
    dom = conn.defineXML(direct_boot_domain_xml(name, kernel=guest_image.kernel,
                                                initrd=guest_image.initrd, console_log=log))
    dom.create()
    yield conn, name, log
    remove_domain(conn, name)  # never leave the domain behind, whatever happened
    conn.close()


def test_tune_verify_rollback_in_real_guest(guest: Any, tmp_path: Path) -> None:
    conn, name, log = guest
    probe = ConsoleLogProbe(log)
    before = probe.wait_flags(120)
    assert "sse2" in before
    assert not set(FLAGS) & before, "qemu64 should hide these flags"

    state = JsonFileState(tmp_path / "state")
    tuner = DomainTuner(conn, name, state, shutdown_timeout=0, boot_timeout=120)
    host = read_host_cpu(conn, "qemu")
    plan = make_plan(name, tuner.base_xml(), CpuChange(require=FLAGS), host,
                     ModelCatalog(conn))
    assert "+    <feature policy='require' name='aes'/>" in plan.diff
    result = tuner.apply(plan.after_xml, probe=probe, expect_present=FLAGS)
    assert result.guest_flags is not None
    assert set(FLAGS) <= result.guest_flags
    # Transient apply: the stored definition is untouched, the running one is tuned.
    dom = conn.lookupByName(name)
    assert read_cpu(dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE)).required() == []
    assert state.load(tuner.key) is not None

    assert tuner.rollback()
    after = probe.wait_flags(120)
    assert not set(FLAGS) & after
    assert dom.isActive()
    assert state.load(tuner.key) is None


def test_failed_verification_rolls_back(guest: Any, tmp_path: Path) -> None:
    """Require a flag TCG cannot emulate (QEMU 7.2 TCG drops sha-ni with a warning):
    verification fails and the original comes back by itself."""
    conn, name, log = guest
    probe = ConsoleLogProbe(log)
    probe.wait_flags(120)
    state = JsonFileState(tmp_path / "state")
    tuner = DomainTuner(conn, name, state, shutdown_timeout=0, boot_timeout=60)
    host = read_host_cpu(conn, "qemu")
    if "sha-ni" not in host.flags:
        pytest.skip("host CPU has no sha-ni")
    plan = make_plan(name, tuner.base_xml(), CpuChange(require=("sha-ni",)), host,
                     ModelCatalog(conn))
    with pytest.raises(VerificationFailed, match="sha-ni"):
        tuner.apply(plan.after_xml, probe=probe, expect_present=("sha-ni",))
    assert state.load(tuner.key) is None
    dom = conn.lookupByName(name)
    assert dom.isActive()
    assert "sha-ni" not in probe.wait_flags(120)


def test_lab_variants_then_down_restores(guest: Any, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from virtbench.labs.kvm import KvmGuestLab
    from virtbench.services import GuestMachine
    from virtbench.targets.local import LocalTarget

    conn, name, log = guest
    monkeypatch.setenv("VIRTBENCH_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("VIRTBENCH_LAB_ROOT", str(tmp_path / "labs"))
    params = KvmGuestLab.Params(domain=name, connect=conn.getURI(), console_log=str(log),
                                shutdown_timeout_s=0, boot_timeout_s=120)
    lab = KvmGuestLab(params, tmp_path, LocalTarget())
    assert lab.check() == []
    original = conn.lookupByName(name).XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE)
    lab.up()
    try:
        state = lab.enter("default", {})
        assert state.notes["verified_by"] == "already running this configuration"
        # the accelerator, for --profile (TCG here: no guest kernel frames)
        assert state.services.get(GuestMachine) == GuestMachine(name, "qemu")
        state = lab.enter("nehalem-aes", {"cpu_model": "Nehalem", "cpu_require": ["aes"]})
        assert "model=Nehalem" in state.notes["guest_cpu"]
        flags = ConsoleLogProbe(log).wait_flags(120)
        assert {"sse4.2", "aes"} <= flags
        with pytest.raises(VirtbenchError, match="unknown CPU flag"):
            lab.enter("bogus", {"cpu_require": ["no-such-flag"]})
    finally:
        lab.down()
    dom = conn.lookupByName(name)
    assert dom.isActive()
    assert read_cpu(dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE)) == read_cpu(original)
    assert not set(FLAGS) & ConsoleLogProbe(log).wait_flags(120)
    assert list((tmp_path / "labs").glob("vbkvm-*.json")) == []
