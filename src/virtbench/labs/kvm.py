"""A lab whose variants are CPU configurations of one named libvirt domain.

``up`` saves the domain's original XML; ``enter`` applies a variant's ``<cpu>`` (relative to
the original, never stacked), restarts the guest and verifies the flags inside it; ``down``
restores the original — also after a failure or Ctrl-C (the runner calls ``down``; a crashed
run is repaired by ``virtbench lab clean`` or ``virtbench kvm rollback DOMAIN``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from virtbench.contract import MAX_SECONDS, Knob, Params, parsed_by
from virtbench.kvm.access import GuestAccess
from virtbench.kvm.apply import DomainTuner, GuestProbe
from virtbench.kvm.cpumodels import ModelCatalog
from virtbench.kvm.domxml import CPU_MODES, CpuChange, cpu_diff, domain_type
from virtbench.kvm.flag_probes import TargetProbe
from virtbench.kvm.flags import parse_flag_list
from virtbench.kvm.hostcpu import read_host_cpu
from virtbench.kvm.state import default_state
from virtbench.kvm.tuning_plan import make_plan
from virtbench.labs.lab_contract import Lab, LabState, Manifest, lab_root
from virtbench.model import VirtbenchError
from virtbench.services import GuestMachine
from virtbench.targets.libvirt_connection import default_uri, open_connection
from virtbench.targets.target_contract import Target

__all__ = ["LABS", "KvmGuestLab"]


class KvmGuestParams(Params):
    domain: str = Field(description="the libvirt domain to reconfigure (only this one is touched)")
    connect: str = Field(default_factory=default_uri, description="libvirt URI")
    ssh: str | None = Field(None, description="guest's [user@]host[:port]; workloads run over it")
    known_hosts: str | None = Field(None, description="known_hosts file holding the guest's key")
    identity_file: str | None = Field(None, description="private key for the guest")
    agent: bool = Field(False, description="run workloads through the QEMU guest agent")
    console_log: str | None = Field(
        None, description="serial log where the guest prints /proc/cpuinfo (verification only)")
    persistent: bool = Field(False, description="define + restart instead of destroy + create")
    shutdown_timeout_s: float = Field(60.0, ge=0, le=MAX_SECONDS,
                                      description="ACPI shutdown wait before destroy")
    boot_timeout_s: float = Field(300.0, ge=1, le=MAX_SECONDS,
                                  description="wait for the guest to answer")


class KvmGuestLab(Lab):
    name = "kvm-guest"
    description = ("CPU configurations (flags, named models, host-model, host-passthrough) of a "
                   "libvirt domain; workloads run inside the guest")
    Params = KvmGuestParams
    switch_cost = "expensive"
    provides = (GuestMachine,)
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("cpu_require", "flags the guest CPU must have (libvirt names, e.g. [aes, sse4.2])",
             parsed_by(parse_flag_list, str | list[str])),
        Knob("cpu_disable", "flags hidden from the guest (libvirt names)",
             parsed_by(parse_flag_list, str | list[str])),
        Knob("cpu_mode", "the guest CPU mode (default: the domain's own)", choices=CPU_MODES),
        Knob("cpu_model", "named CPU model for mode custom (e.g. qemu64, Nehalem)", str),
    )

    def __init__(self, params: BaseModel | None, workdir: Path, target: Target) -> None:
        super().__init__(params, workdir, target)
        self.conn: Any = None
        self.tuner: DomainTuner | None = None
        self.manifest: Manifest | None = None
        self.access = GuestAccess(ssh=self.params.ssh, known_hosts=self.params.known_hosts,
                                  identity_file=self.params.identity_file,
                                  agent=self.params.agent,
                                  console_log=Path(self.params.console_log)
                                  if self.params.console_log else None)
        self.guest_target: Target | None = None

    def check(self) -> list[str]:
        problems = super().check()
        conn: Any = None
        try:
            conn = open_connection(self.params.connect)
            conn.lookupByName(self.params.domain)
        except VirtbenchError as exc:
            problems.append(f"lab {self.name}: {exc}")
        except Exception as exc:  # libvirtError: the named domain does not exist
            problems.append(f"lab {self.name}: domain '{self.params.domain}': {exc}")
        finally:
            if conn is not None:
                conn.close()
        if self.access.describe() == "none":
            problems.append(f"lab {self.name}: no way into the guest; set ssh, agent or "
                            "console_log in the lab params")
        return problems

    def up(self) -> None:
        self.conn = open_connection(self.params.connect)
        self.tuner = DomainTuner(
            self.conn, self.params.domain, default_state(),
            shutdown_timeout=self.params.shutdown_timeout_s,
            boot_timeout=self.params.boot_timeout_s,
        )
        safe = "".join(c if c.isalnum() else "-" for c in self.params.domain)
        self.manifest = Manifest(lab_root() / f"vbkvm-{safe}.json", self.name)
        # Recorded before the first change, so `lab clean` can always restore it.
        self.manifest.add("domain", {"connect": self.conn.getURI(), "domain": self.params.domain})
        self.tuner.save_original()
        self.guest_target = self.access.target(self.conn, self.params.domain)

    def enter(self, variant: str, knobs: Mapping[str, Any]) -> LabState:
        if self.tuner is None:
            raise VirtbenchError(f"lab {self.name}: enter() before up()")
        change = CpuChange(
            mode=knobs.get("cpu_mode") or None,
            model=knobs.get("cpu_model") or None,
            require=tuple(parse_flag_list(knobs.get("cpu_require"))),
            disable=tuple(parse_flag_list(knobs.get("cpu_disable"))),
        )
        base = self.tuner.base_xml()
        expect_present: tuple[str, ...] = ()
        expect_absent: tuple[str, ...] = ()
        if change.is_empty():
            target_xml = base
            notes = {"guest_cpu": "the domain's original configuration"}
            warnings: list[str] = []
        else:
            virttype = domain_type(base)
            host = read_host_cpu(self.conn, virttype if virttype in ("kvm", "qemu") else None)
            plan = make_plan(self.params.domain, base, change, host,
                             ModelCatalog(self.conn, host.arch or "x86_64"))
            target_xml = plan.after_xml
            expect_present, expect_absent = plan.change.require, plan.change.disable
            notes = {"guest_cpu": plan.cpu.summary()}
            warnings = plan.warnings
        probe = self._probe()
        if self._running_with(target_xml):
            if probe is not None:
                probe.wait_flags(self.params.boot_timeout_s)
            notes["verified_by"] = "already running this configuration"
        else:
            # apply() restores the original by itself when anything fails.
            result = self.tuner.apply(target_xml, persistent=self.params.persistent,
                                      probe=probe, expect_present=expect_present,
                                      expect_absent=expect_absent)
            self.tuner.save_original()  # a failed apply forgets it; keep it for down()
            notes["verified_by"] = result.verified_by
        notes.update({f"warning_{i}": w for i, w in enumerate(warnings)})
        # the accelerator, for --profile (the guest kernel's frames are recorded under KVM)
        machine = GuestMachine(domain=self.params.domain, virt_type=domain_type(base))
        return LabState(target=self.guest_target, notes=notes, services=self.publish(machine))

    def _probe(self) -> GuestProbe | None:
        """Verification over the lab's own guest target (one SSH master for the whole run),
        else the serial log."""
        if self.guest_target is not None:
            return TargetProbe(self.guest_target)
        return self.access.probe(self.conn, self.params.domain)

    def _running_with(self, xml: str) -> bool:
        """True when the domain runs now with exactly the ``<cpu>`` of ``xml``."""
        import libvirt

        try:
            dom = self.conn.lookupByName(self.params.domain)
            if not dom.isActive():
                return False
            live = dom.XMLDesc(libvirt.VIR_DOMAIN_XML_MIGRATABLE)
        except libvirt.libvirtError:
            return False
        return not cpu_diff(live, xml)

    def down(self) -> None:
        try:
            if self.tuner is not None:
                saved = self.tuner.original()
                self.tuner.rollback()
                probe = self._probe()
                if saved is not None and saved["active"] and probe is not None:
                    # The original runs again; wait until it answers, so the guest is usable
                    # when the run ends (and the runner's closing facts describe it).
                    probe.wait_flags(self.params.boot_timeout_s)
        finally:
            close = getattr(self.guest_target, "close", None)
            if callable(close):
                close()
            if self.manifest is not None:
                self.manifest.delete()

    @classmethod
    def clean(cls, manifest: Manifest) -> list[str]:
        restored = []
        for item in manifest.items("domain"):
            conn = open_connection(item["connect"])
            tuner = DomainTuner(conn, item["domain"], default_state(), shutdown_timeout=0)
            if tuner.rollback():
                restored.append(f"restored original CPU of domain {item['domain']}")
        return restored


LABS = (KvmGuestLab,)
