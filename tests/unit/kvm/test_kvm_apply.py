"""The apply/rollback state machine against libvirt's test driver (a real libvirt connection).

The guest probe is a fake: the test driver runs no guests, so there is nothing inside to read.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

libvirt = pytest.importorskip("libvirt")

from virtbench.kvm.apply import DomainTuner, VerificationFailed  # noqa: E402
from virtbench.kvm.domxml import CpuChange, edit_cpu, read_cpu  # noqa: E402
from virtbench.kvm.sandbox_libvirtd import remove_domain  # noqa: E402
from virtbench.kvm.state import JsonFileState, StoreState  # noqa: E402
from virtbench.targets.libvirt_connection import libvirt_module  # noqa: E402

XML = """<domain type='test'>
  <name>{name}</name>
  <memory unit='KiB'>65536</memory>
  <vcpu>1</vcpu>
  <os>
    <type arch='x86_64'>hvm</type>
  </os>
  <cpu mode='custom' match='exact' check='none'>
    <model fallback='allow'>qemu64</model>
  </cpu>
  <devices/>
</domain>
"""


class FakeProbe:
    """Answers with the flags the test says the guest sees, or fails as told."""

    def __init__(self, flags: set[str] | None = None, error: BaseException | None = None):
        self.flags = frozenset(flags or set())
        self.error = error
        self.calls = 0

    def describe(self) -> str:
        return "fake probe"

    def wait_flags(self, timeout: float) -> frozenset[str]:
        self.calls += 1
        if self.error is not None:
            raise self.error
        return self.flags


@pytest.fixture
def conn() -> Iterator[Any]:
    libvirt_module()  # silences libvirt's stderr error printing
    c = libvirt.open("test:///default")
    yield c
    c.close()


@pytest.fixture
def domain(conn: Any) -> Iterator[str]:
    """A persistent, running domain with a unique name (the test driver is per process)."""
    name = f"vbkvm-unit-{uuid.uuid4().hex[:8]}"
    dom = conn.defineXML(XML.format(name=name))
    dom.create()
    yield name
    remove_domain(conn, name)


@pytest.fixture(params=["json-files", "result-store"])
def state(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """Both places an original can be saved: JSON files and the virtbench result store."""
    if request.param == "json-files":
        return JsonFileState(tmp_path / "state")
    return StoreState(str(tmp_path / "state.db"))


def tuned(conn: Any, name: str, **change: Any) -> str:
    dom = conn.lookupByName(name)
    return edit_cpu(dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE), CpuChange(**change))


def live_cpu(conn: Any, name: str) -> Any:
    return read_cpu(conn.lookupByName(name).XMLDesc(0))


def defined_cpu(conn: Any, name: str) -> Any:
    return read_cpu(conn.lookupByName(name).XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE))


def test_transient_apply_then_rollback(conn: Any, domain: str, state: JsonFileState) -> None:
    other = conn.lookupByName("test").XMLDesc(0)
    tuner = DomainTuner(conn, domain, state, shutdown_timeout=0)
    probe = FakeProbe({"aes", "sse4.2", "sse2"})
    result = tuner.apply(tuned(conn, domain, require=("aes", "sse4.2")), probe=probe,
                         expect_present=("aes", "sse4.2"))
    assert result.verified_by == "fake probe" and probe.calls == 1
    assert live_cpu(conn, domain).required() == ["aes", "sse4.2"]
    assert defined_cpu(conn, domain).required() == []  # the definition is untouched
    saved = state.load(tuner.key)
    assert saved is not None and saved["phase"] == "applied" and saved["active"] is True

    assert tuner.rollback() is True
    assert live_cpu(conn, domain).required() == []
    assert conn.lookupByName(domain).isActive()
    assert state.load(tuner.key) is None
    assert tuner.rollback() is False  # nothing left to restore
    assert conn.lookupByName("test").XMLDesc(0) == other  # a domain nobody named


def test_rollback_of_a_domain_back_on_its_original_cpu_does_not_restart_it(
        conn: Any, domain: str, state: JsonFileState) -> None:
    """A run whose last block was the original CPU (the lab restarted the domain with it):
    the rollback at its end forgets the saved original without a second restart (a TCG boot
    of the guest); one still on the tuned CPU is restarted as before."""
    tuner = DomainTuner(conn, domain, state, shutdown_timeout=0)
    tuner.apply(tuned(conn, domain, require=("aes",)))
    tuner.apply(tuner.base_xml())  # the original's block, after the tuned one
    running = conn.lookupByName(domain).ID()
    assert tuner.rollback() is True
    assert conn.lookupByName(domain).ID() == running  # not stopped, not started again
    assert live_cpu(conn, domain).required() == [] and defined_cpu(conn, domain).required() == []
    assert state.load(tuner.key) is None
    tuner.apply(tuned(conn, domain, require=("aes",)))
    running = conn.lookupByName(domain).ID()
    assert tuner.rollback() is True
    assert conn.lookupByName(domain).ID() != running  # restarted with the original CPU
    assert live_cpu(conn, domain).required() == []


def test_persistent_apply_changes_definition_and_rollback_restores(
    conn: Any, domain: str, state: JsonFileState
) -> None:
    tuner = DomainTuner(conn, domain, state, shutdown_timeout=0)
    tuner.apply(tuned(conn, domain, model="Nehalem"), persistent=True)
    assert defined_cpu(conn, domain).model == "Nehalem"
    tuner.rollback()
    assert defined_cpu(conn, domain).model == "qemu64"
    assert conn.lookupByName(domain).isActive()


def test_verification_failure_rolls_back(conn: Any, domain: str, state: JsonFileState) -> None:
    tuner = DomainTuner(conn, domain, state, shutdown_timeout=0)
    with pytest.raises(VerificationFailed, match=r"missing aes \(aes\)"):
        tuner.apply(tuned(conn, domain, require=("aes",)), probe=FakeProbe({"sse2"}),
                    expect_present=("aes",), persistent=True)
    assert defined_cpu(conn, domain).required() == []
    assert live_cpu(conn, domain).required() == []
    assert state.load(tuner.key) is None


def test_disabled_flag_still_visible_fails(conn: Any, domain: str, state: JsonFileState) -> None:
    tuner = DomainTuner(conn, domain, state, shutdown_timeout=0)
    with pytest.raises(VerificationFailed, match="still visible sse2"):
        tuner.apply(tuned(conn, domain, disable=("sse2",)), probe=FakeProbe({"sse2"}),
                    expect_absent=("sse2",))
    assert live_cpu(conn, domain).disabled() == []


def test_ctrl_c_while_waiting_rolls_back_and_propagates(
    conn: Any, domain: str, state: JsonFileState
) -> None:
    tuner = DomainTuner(conn, domain, state, shutdown_timeout=0)
    with pytest.raises(KeyboardInterrupt):
        tuner.apply(tuned(conn, domain, require=("aes",)),
                    probe=FakeProbe(error=KeyboardInterrupt()))
    assert live_cpu(conn, domain).required() == []
    assert state.load(tuner.key) is None


def test_libvirt_refusal_rolls_back(conn: Any, domain: str, state: JsonFileState) -> None:
    tuner = DomainTuner(conn, domain, state, shutdown_timeout=0)
    # Same UUID under another name: libvirt refuses to create it after we stopped the domain.
    broken = tuned(conn, domain, require=("aes",)).replace(f"<name>{domain}</name>",
                                                           "<name>vbkvm-clash</name>")
    with pytest.raises(libvirt.libvirtError):
        tuner.apply(broken)
    assert conn.lookupByName(domain).isActive()
    assert live_cpu(conn, domain).required() == []


def test_shut_off_domain_is_left_shut_off(conn: Any, domain: str, state: JsonFileState) -> None:
    conn.lookupByName(domain).destroy()
    tuner = DomainTuner(conn, domain, state, shutdown_timeout=0)
    tuner.apply(tuned(conn, domain, require=("aes",)))
    assert conn.lookupByName(domain).isActive()
    tuner.rollback()
    assert not conn.lookupByName(domain).isActive()


def test_second_tune_keeps_first_original(conn: Any, domain: str, state: JsonFileState) -> None:
    tuner = DomainTuner(conn, domain, state, shutdown_timeout=0)
    tuner.apply(tuned(conn, domain, require=("aes",)), persistent=True)
    tuner.apply(tuned(conn, domain, require=("ssse3",)), persistent=True)
    saved = state.load(tuner.key)
    assert saved is not None and read_cpu(saved["inactive_xml"]).required() == []
    tuner.rollback()
    assert defined_cpu(conn, domain).required() == []


def test_transient_only_domain(conn: Any, state: JsonFileState) -> None:
    name = f"vbkvm-unit-{uuid.uuid4().hex[:8]}"
    conn.createXML(XML.format(name=name), 0)
    try:
        tuner = DomainTuner(conn, name, state, shutdown_timeout=0)
        tuner.apply(tuned(conn, name, require=("aes",)))
        assert live_cpu(conn, name).required() == ["aes"]
        tuner.rollback()
        assert live_cpu(conn, name).required() == []
    finally:
        conn.lookupByName(name).destroy()


def test_unknown_domain_is_an_error(conn: Any, state: JsonFileState) -> None:
    from virtbench.model import VirtbenchError

    with pytest.raises(VirtbenchError, match="no domain named 'vbkvm-nope'"):
        DomainTuner(conn, "vbkvm-nope", state)


def test_state_files_are_private(tmp_path: Path) -> None:
    state = JsonFileState(tmp_path / "state")
    state.save("kvm-original:test:///default:abc", {"x": 1})
    (path,) = list(state.directory.glob("*.json"))
    assert path.stat().st_mode & 0o777 == 0o600
    assert state.keys("kvm-original:") == ["kvm-original:test:///default:abc"]
