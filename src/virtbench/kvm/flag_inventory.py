"""Host vs guest CPU flags: the guest's effective flags, the diff, and what each missing flag
costs, plus what ``require`` means for migration."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from virtbench.kvm.cpumodels import ModelCatalog
from virtbench.kvm.domxml import DEFAULT_MODEL, CpuConfig, read_cpu
from virtbench.kvm.flags import FLAG_USES, linux_name, uses_of
from virtbench.kvm.hostcpu import HostCpu

__all__ = [
    "GuestCpu",
    "MissingFlag",
    "effective_flags",
    "migration_note",
    "missing_flags",
    "read_guest_cpu",
]


@dataclass
class GuestCpu:
    """A domain's CPU configuration and the flags it gives the guest (libvirt names)."""

    domain: str
    config: CpuConfig
    flags: frozenset[str]
    source: str
    """Which XML was resolved: 'live' (running, expanded by libvirt) or 'config'."""
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class MissingFlag:
    flag: str
    linux: str
    use: str


def effective_flags(config: CpuConfig, host: HostCpu, catalog: ModelCatalog
                    ) -> tuple[frozenset[str], list[str]]:
    """Flags a guest with ``config`` sees, resolved against libvirt's model definitions.

    Returns the flags and notes on how exact the answer is.
    """
    notes: list[str] = []
    if config.mode in ("default", "custom"):
        model = config.model or DEFAULT_MODEL
        if config.mode == "default":
            notes.append(f"no <cpu> model: QEMU's default {DEFAULT_MODEL} applies")
        base = set(catalog.features(model))
    elif config.mode == "host-model":
        if host.host_model is None:
            notes.append("host-model not available: resolved as the host's flags")
            base = set(host.flags)
        else:
            base = set(host.host_model_flags)
            notes.append(f"host-model resolves to {host.host_model.model} + "
                         f"{len(host.host_model.required())} extra flags on this host")
    elif config.mode == "host-passthrough":
        base = set(host.flags)
        if host.passthrough_supported is False:
            notes.append(f"host-passthrough is not supported for virttype {host.virttype}")
    else:
        base = set(host.host_model_flags or host.flags)
        notes.append("mode 'maximum': approximated by host-model (QEMU decides at start)")
    base |= set(config.required())
    base -= set(config.disabled())
    # Every QEMU/KVM guest sees the hypervisor bit.
    base.add("hypervisor")
    return frozenset(base), notes


def read_guest_cpu(dom: Any, host: HostCpu, catalog: ModelCatalog) -> GuestCpu:
    """Resolve a domain's effective flags; a running domain's live XML is used (libvirt has
    expanded host-model there)."""
    active = bool(dom.isActive())
    xml = dom.XMLDesc(0)
    config = read_cpu(xml)
    flags, notes = effective_flags(config, host, catalog)
    return GuestCpu(dom.name(), config, flags, "live" if active else "config", notes)


def missing_flags(host_flags: frozenset[str], guest_flags: frozenset[str]) -> list[MissingFlag]:
    """Flags the host has and the guest lacks; flags with a known user first."""
    missing = sorted(host_flags - guest_flags, key=lambda f: (f not in FLAG_USES, f))
    return [MissingFlag(f, linux_name(f), uses_of(f)) for f in missing]


def migration_note(config: CpuConfig) -> str:
    """What this CPU configuration means when the domain moves to another host."""
    required = ", ".join(config.required()) or "none"
    if config.mode == "host-passthrough":
        return ("host-passthrough: the guest sees this host's exact CPU; live migration only "
                "works to hosts with an identical CPU and microcode, and a cold start elsewhere "
                "changes what the guest sees.")
    if config.mode == "host-model":
        return ("host-model: libvirt picks the closest named model plus extra flags at each "
                "start; a running guest migrates with that expanded model, so the destination "
                "must have all of its flags.")
    if config.mode == "maximum":
        return "maximum: everything the hypervisor can offer; not migratable between unlike hosts."
    return (f"custom model {config.model or DEFAULT_MODEL}, required flags: {required}. "
            "'require' makes libvirt refuse to start or migrate the domain onto a host whose CPU "
            "lacks any of them (the migration fails instead of the guest crashing on an illegal "
            "instruction); choose the flags every host of the cluster has.")
