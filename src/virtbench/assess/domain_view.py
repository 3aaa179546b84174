"""Build a :class:`DomainView` from libvirt: the domain's XML, the guest's effective CPU flags
and what the hypervisor on its host can offer."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from virtbench.assess.domain_rules import DomainView
from virtbench.kvm.cpumodels import ModelCatalog
from virtbench.kvm.domxml import domain_type
from virtbench.kvm.flag_inventory import read_guest_cpu
from virtbench.kvm.hostcpu import HostCpu, read_host_cpu
from virtbench.model import VirtbenchError
from virtbench.targets.libvirt_connection import libvirt_module

__all__ = ["read_domain_view"]


def read_domain_view(conn: Any, name: str) -> tuple[DomainView, HostCpu, ModelCatalog, str]:
    """The view, the host CPU, libvirt's model catalog and the XML a tune starts from (the
    live XML of a running domain, else its definition)."""
    libvirt = libvirt_module()
    try:
        dom = conn.lookupByName(name)
    except libvirt.libvirtError as exc:
        raise VirtbenchError(f"no domain named '{name}' on {conn.getURI()}") from exc
    xml = dom.XMLDesc(0)
    virttype = domain_type(xml)
    host = read_host_cpu(conn, virttype if virttype in ("kvm", "qemu") else None)
    catalog = ModelCatalog(conn, host.arch or "x86_64")
    guest = read_guest_cpu(dom, host, catalog)
    cells = ET.fromstring(conn.getCapabilities()).find("host/topology/cells")
    # What the hypervisor can give a guest: host-model (under TCG: what QEMU emulates),
    # else the host's own flags.
    offered = host.host_model_flags or host.flags
    view = DomainView(name=name, xml=xml, uri=conn.getURI(), virttype=virttype,
                      guest_flags=guest.flags, offered_flags=offered,
                      host_numa_nodes=int(cells.get("num", "1")) if cells is not None else 1,
                      cpu_summary=guest.config.summary(), notes=guest.notes + host.notes)
    base = dom.XMLDesc(libvirt.VIR_DOMAIN_XML_MIGRATABLE) if dom.isActive() else \
        dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE)
    return view, host, catalog, base
