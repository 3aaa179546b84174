"""What CPU the libvirt host has: /proc/cpuinfo, capabilities, domain capabilities (host-model)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from virtbench.kvm.cpumodels import ModelCatalog, known_features
from virtbench.kvm.domxml import CpuConfig
from virtbench.kvm.flags import canonical
from virtbench.targets.libvirt_connection import is_local, libvirt_module

__all__ = ["HostCpu", "cpuinfo_flags", "read_host_cpu"]


def cpuinfo_flags(text: str) -> frozenset[str]:
    """Flags of the first CPU in a /proc/cpuinfo text, in libvirt's spelling."""
    known = known_features()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return frozenset(known.get(c, c) for c in (canonical(f, known) for f in value.split()))
    return frozenset()


@dataclass
class HostCpu:
    """The host's CPU as libvirt and Linux see it. Flag names are libvirt's."""

    uri: str
    arch: str = ""
    model: str | None = None
    vendor: str | None = None
    caps_flags: frozenset[str] = frozenset()
    """From libvirt capabilities: the host model's features plus the extra listed ones."""
    cpuinfo: frozenset[str] | None = None
    """/proc/cpuinfo of this machine, when the libvirt daemon is local."""
    virttype: str = ""
    host_model: CpuConfig | None = None
    """The domain-capabilities host-model CPU for ``virttype`` (what mode=host-model gives)."""
    host_model_flags: frozenset[str] = frozenset()
    passthrough_supported: bool | None = None
    model_usable: dict[str, bool] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def flags(self) -> frozenset[str]:
        """The flags used to judge requests: libvirt's view, else /proc/cpuinfo."""
        if self.model:
            return self.caps_flags
        return self.cpuinfo or self.caps_flags

    @property
    def runs_in_guest(self) -> bool:
        """True when this machine's own CPU says it is a virtual machine."""
        return self.cpuinfo is not None and "hypervisor" in self.cpuinfo


def _domcaps(conn: Any, virttype: str) -> ET.Element | None:
    libvirt = libvirt_module()
    try:
        return ET.fromstring(conn.getDomainCapabilities(None, None, None, virttype, 0))
    except libvirt.libvirtError:
        return None


def read_host_cpu(conn: Any, virttype: str | None = None, cpuinfo_path: Path | None = None
                  ) -> HostCpu:
    """Gather the host CPU through ``conn``; ``virttype`` picks the domain capabilities
    (``kvm`` or ``qemu`` for TCG; default: kvm when offered, else qemu)."""
    uri = conn.getURI()
    host = HostCpu(uri=uri)
    caps = ET.fromstring(conn.getCapabilities())
    cpu = caps.find("host/cpu")
    if cpu is not None:
        host.arch = cpu.findtext("arch", "")
        host.model = cpu.findtext("model")
        host.vendor = cpu.findtext("vendor")
        listed = {f.get("name", "") for f in cpu.findall("feature")}
        from_model: frozenset[str] = frozenset()
        if host.model:
            try:
                from_model = ModelCatalog(conn, host.arch or "x86_64").features(host.model)
            except Exception as exc:
                host.notes.append(f"could not expand host model {host.model}: {exc}")
        host.caps_flags = frozenset(listed | from_model)
    path = cpuinfo_path or Path("/proc/cpuinfo")
    if is_local(uri) and path.exists():
        host.cpuinfo = cpuinfo_flags(path.read_text())
    offered = {d.get("type") for d in caps.iter("domain")}
    host.virttype = virttype or ("kvm" if "kvm" in offered else "qemu")
    dc = _domcaps(conn, host.virttype)
    if dc is None:
        host.notes.append(f"no domain capabilities for virttype '{host.virttype}' on {uri}")
        return host
    for mode in dc.findall("cpu/mode"):
        name = mode.get("name")
        if name == "host-passthrough":
            host.passthrough_supported = mode.get("supported") == "yes"
        elif name == "host-model" and mode.get("supported") == "yes":
            model = mode.findtext("model")
            feats = {f.get("name", ""): f.get("policy", "require") for f in mode.findall("feature")}
            host.host_model = CpuConfig(mode="host-model", model=model, features=feats)
            base: frozenset[str] = frozenset()
            if model:
                try:
                    base = ModelCatalog(conn, host.arch or "x86_64").features(model)
                except Exception as exc:
                    host.notes.append(f"could not expand host-model {model}: {exc}")
            required = {f for f, p in feats.items() if p in ("require", "force")}
            disabled = {f for f, p in feats.items() if p in ("disable", "forbid")}
            host.host_model_flags = frozenset((base | required) - disabled)
        elif name == "custom":
            host.model_usable = {
                (m.text or "").strip(): m.get("usable") == "yes" for m in mode.findall("model")
            }
    return host
