"""Rules on a libvirt domain's XML (and the host CPU it runs on).

Pure: a :class:`DomainView` is built from libvirt by :mod:`virtbench.assess.domain_view`, and
the unit tests build one from libvirt's test driver. Each rule's change is the libvirt XML
edit plus its CloudStack / OpenStack equivalent where one exists.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from virtbench.assess.findings import Change, Evidence, Finding, Gain
from virtbench.assess.rules import Rule
from virtbench.kvm.flags import uses_of

__all__ = ["DOMAIN_RULES", "WANTED_FLAGS", "DomainView"]

# Flags common software dispatches on (libvirt names), in the order a request lists them.
WANTED_FLAGS = ("ssse3", "sse4.1", "sse4.2", "popcnt", "aes", "pclmuldq", "avx", "avx2",
                "sha-ni", "vaes")
_PLAIN_MODELS = ("qemu64", "qemu32", "kvm64", "kvm32")
_EMULATED_BUSES = ("ide", "sata", "usb", "fdc")
_EMULATED_NICS = ("rtl8139", "e1000", "e1000e", "ne2k_pci", "pcnet")

LIBVIRT_DOMAIN_DOC = "https://libvirt.org/formatdomain.html"
KVM_TUNING_DOC = ("Red Hat, Virtualization Tuning and Optimization Guide (RHEL 7), "
                  "https://access.redhat.com/documentation/en-us/red_hat_enterprise_linux/7/"
                  "html/virtualization_tuning_and_optimization_guide")


@dataclass
class DomainView:
    """What the domain rules read: the domain XML and the host it runs on."""

    name: str
    xml: str
    uri: str = ""
    virttype: str = "kvm"
    guest_flags: frozenset[str] = frozenset()
    """Flags the guest's CPU configuration gives it (libvirt names)."""
    offered_flags: frozenset[str] = frozenset()
    """Flags this hypervisor can give a guest on this host (host-model under TCG)."""
    host_numa_nodes: int = 1
    cpu_summary: str = ""
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.root = ET.fromstring(self.xml)

    def vcpus(self) -> int:
        return int((self.root.findtext("vcpu") or "1").strip() or 1)

    def disks(self) -> list[ET.Element]:
        return [d for d in self.root.findall("devices/disk")
                if d.get("device", "disk") == "disk"]

    def connect_option(self) -> str:
        return f" --connect '{self.uri}'" if self.uri else ""


def _target(disk: ET.Element) -> str:
    target = disk.find("target")
    return target.get("dev", "?") if target is not None else "?"


def check_cpu_flags(view: DomainView) -> Finding | None:
    missing = [f for f in WANTED_FLAGS if f in view.offered_flags and f not in view.guest_flags]
    if not missing:
        return None
    high = any(f in missing for f in ("aes", "sse4.2"))
    cpu = view.root.find("cpu")
    mode = cpu.get("mode", "custom") if cpu is not None else "default"
    command = (f"virtbench kvm tune {view.name} --require {','.join(missing)}"
               f"{view.connect_option()}")
    return Finding(
        rule="cpu-flags", title="guest CPU lacks flags the host offers and software uses",
        severity="high" if high else "medium",
        evidence=[Evidence("domain XML <cpu>", view.cpu_summary or mode),
                  *[Evidence(f"flag {f} (host has, guest lacks)", uses_of(f) or f)
                    for f in missing]],
        source=f"study 000 (docs/cpu-features.md); {LIBVIRT_DOMAIN_DOC}#cpu-model-and-topology",
        changes=[Change("virtbench", command),
                 Change("virtbench", f"{command} --apply --ssh USER@GUEST   "
                                     f"(undo: virtbench kvm rollback {view.name})")],
        cost=("'require' pins the domain to hosts that have these flags: libvirt refuses to "
              "start or migrate it elsewhere. The alternative, mode host-passthrough, gives "
              "every flag but blocks live migration to unlike hosts."),
        gain=Gain("cited", "AES-NI and SSE4.2 make AES and CRC32C several times faster "
                           "(study 000); measured below when the host can mask them",
                  source="study 000"),
        measure="cpu-flags",
        extra={"require": missing},
    )


def check_disk_bus(view: DomainView) -> Finding | None:
    emulated = []
    for disk in view.disks():
        target = disk.find("target")
        bus = target.get("bus", "") if target is not None else ""
        if bus in _EMULATED_BUSES:
            emulated.append((_target(disk), bus))
    if not emulated:
        return None
    dev, bus = emulated[0]
    return Finding(
        rule="disk-bus", title="disk on an emulated bus instead of virtio",
        severity="high",
        evidence=[Evidence("domain XML <disk><target>", f"dev={d} bus={b}") for d, b in emulated],
        source=LIBVIRT_DOMAIN_DOC + "#hard-drives-floppy-disks-cdroms; " + KVM_TUNING_DOC,
        changes=[Change("libvirt-xml", f"-      <target dev='{dev}' bus='{bus}'/>\n"
                                       "+      <target dev='vda' bus='virtio'/>\n"
                                       "(and drop the disk's <address> line)"),
                 Change("openstack", "image property: hw_disk_bus=virtio"),
                 Change("cloudstack", "pick a guest OS type with paravirtual (virtio) disks")],
        cost="the guest needs virtio-blk drivers (built into Linux; virtio-win on Windows); the "
             "device name changes (hda/sda → vda): mount by UUID or label first",
        gain=Gain("cited", "virtio-blk avoids emulating an IDE/SATA controller on every I/O",
                  source=KVM_TUNING_DOC),
    )


def check_disk_cache(view: DomainView) -> Finding | None:
    bad = []
    for disk in view.disks():
        driver = disk.find("driver")
        cache = driver.get("cache", "default") if driver is not None else "default"
        if cache in ("writethrough", "directsync"):
            bad.append((_target(disk), cache, driver.get("io", "") if driver is not None else ""))
    if not bad:
        return None
    cache = bad[0][1]
    return Finding(
        rule="disk-cache", title=f"disk cache mode {cache}: every write waits for the host disk",
        severity="medium",
        evidence=[Evidence("domain XML <disk><driver>", f"dev={d} cache={c} io={i or 'default'}")
                  for d, c, i in bad],
        source=LIBVIRT_DOMAIN_DOC + "#hard-drives-floppy-disks-cdroms; " + KVM_TUNING_DOC,
        changes=[Change("libvirt-xml", f"-      <driver name='qemu' type='…' cache='{cache}'/>\n"
                                       "+      <driver name='qemu' type='…' cache='none' "
                                       "io='native'/>"),
                 Change("openstack", "nova.conf [libvirt] disk_cachemodes = \"file=none\"")],
        cost="cache=none bypasses the host page cache (O_DIRECT): no host-side read caching; "
             "the guest's own flushes still reach the disk, so data safety is kept",
        gain=Gain("cited", "writethrough forces a host flush per write; none/native does not",
                  source=KVM_TUNING_DOC),
        measure="disk-cache", extra={"cache": cache, "io": bad[0][2]},
    )


def check_disk_io(view: DomainView) -> Finding | None:
    """io='threads' on a disk that could take io='native' (cache none or directsync) in a
    domain without IOThreads: every request goes through QEMU's thread pool in its main loop.
    (writethrough/directsync's own cost is rule disk-cache's.)"""
    if (view.root.findtext("iothreads") or "0").strip() not in ("", "0"):
        return None
    bad = []
    for disk in view.disks():
        driver = disk.find("driver")
        if driver is not None and driver.get("io") == "threads" \
                and driver.get("cache", "default") in ("none", "directsync"):
            bad.append((_target(disk), driver.get("cache", "")))
    if not bad:
        return None
    return Finding(
        rule="disk-io", title="disk io='threads' without IOThreads: QEMU's thread pool "
                              "serves every request",
        severity="low",
        evidence=[Evidence("domain XML <disk><driver>, <iothreads>",
                           f"dev={d} cache={c} io=threads; no <iothreads>") for d, c in bad],
        source=LIBVIRT_DOMAIN_DOC + "#hard-drives-floppy-disks-cdroms; " + KVM_TUNING_DOC,
        changes=[Change("libvirt-xml", f"-      <driver name='qemu' type='…' cache='{bad[0][1]}' "
                                       "io='threads'/>\n"
                                       f"+      <driver name='qemu' type='…' cache='{bad[0][1]}' "
                                       "io='native'/>")],
        cost="none with cache none/directsync (io='native' needs O_DIRECT); an IOThread "
             "(<iothreads>1</iothreads>, <driver iothread='1'/>) costs one host thread",
        gain=Gain("cited", "Linux AIO submits from one thread, the pool hands each request to a "
                  "worker thread", source=KVM_TUNING_DOC),
        measure="disk-io", extra={"cache": bad[0][1], "io": "threads"},
    )


def check_nic_model(view: DomainView) -> Finding | None:
    bad = []
    for nic in view.root.findall("devices/interface"):
        model = nic.find("model")
        name = model.get("type", "") if model is not None else ""
        if name in _EMULATED_NICS:
            mac = nic.find("mac")
            bad.append((mac.get("address", "?") if mac is not None else "?", name))
    if not bad:
        return None
    return Finding(
        rule="nic-model", title=f"emulated NIC model {bad[0][1]} instead of virtio-net",
        severity="high",
        evidence=[Evidence("domain XML <interface><model>", f"mac={m} model={t}")
                  for m, t in bad],
        source=LIBVIRT_DOMAIN_DOC + "#network-interfaces; " + KVM_TUNING_DOC,
        changes=[Change("libvirt-xml", f"-      <model type='{bad[0][1]}'/>\n"
                                       "+      <model type='virtio'/>"),
                 Change("openstack", "image property: hw_vif_model=virtio"),
                 Change("cloudstack", "pick a guest OS type with paravirtual (virtio) NICs")],
        cost="the guest needs virtio-net drivers; the interface name may change in the guest",
        gain=Gain("cited", "virtio-net (with vhost) avoids emulating a real NIC per packet and "
                           "offers segmentation and checksum offloads",
                  source=KVM_TUNING_DOC),
        measure="nic-offloads", extra={"model": bad[0][1]},
    )


def check_nic_multiqueue(view: DomainView) -> Finding | None:
    vcpus = view.vcpus()
    if vcpus < 2:
        return None
    single = []
    for nic in view.root.findall("devices/interface"):
        model = nic.find("model")
        if model is None or model.get("type") != "virtio":
            continue
        driver = nic.find("driver")
        if int((driver.get("queues", "1") if driver is not None else "1") or 1) < 2:
            mac = nic.find("mac")
            single.append(mac.get("address", "?") if mac is not None else "?")
    if not single:
        return None
    return Finding(
        rule="nic-multiqueue", title="virtio-net with one queue on a multi-vCPU guest",
        severity="low",
        evidence=[Evidence("domain XML <vcpu>", str(vcpus)),
                  *[Evidence("domain XML <interface><driver>", f"mac={m} queues=1")
                    for m in single]],
        source=LIBVIRT_DOMAIN_DOC + "#setting-nic-driver-specific-options; " + KVM_TUNING_DOC,
        changes=[Change("libvirt-xml", f"+      <driver name='vhost' queues='{vcpus}'/>"),
                 Change("guest", f"ethtool -L eth0 combined {vcpus}"),
                 Change("openstack", "image property: hw_vif_multiqueue_enabled=true")],
        cost="more interrupts and vhost threads; only pays with many parallel flows",
        gain=Gain("cited", "spreads packet processing over the guest's vCPUs",
                  source=KVM_TUNING_DOC),
        measure="nic-multiqueue", extra={"vcpus": vcpus},
    )


def check_pinning(view: DomainView) -> Finding | None:
    if view.root.find("cputune/vcpupin") is not None:
        return None
    vcpus = view.vcpus()
    pins = "\n".join(f"+    <vcpupin vcpu='{i}' cpuset='{i + 1}'/>" for i in range(vcpus))
    return Finding(
        rule="vcpu-pinning", title="vCPUs are not pinned to host CPUs",
        severity="low",
        evidence=[Evidence("domain XML <cputune>", "no <vcpupin>"),
                  Evidence("domain XML <vcpu>", str(vcpus))],
        source=LIBVIRT_DOMAIN_DOC + "#cpu-tuning; " + KVM_TUNING_DOC,
        changes=[Change("libvirt-xml", f"+  <cputune>\n{pins}\n+  </cputune>"),
                 Change("openstack", "flavor extra spec hw:cpu_policy=dedicated; nova.conf "
                                     "[compute] cpu_dedicated_set = …")],
        cost="pinned vCPUs cannot be shared: fewer guests per host; pays for latency-sensitive "
             "guests (the scheduler otherwise moves vCPUs between host CPUs)",
        gain=Gain("cited", "steadier latency, no vCPU migrations between host CPUs",
                  source=KVM_TUNING_DOC),
    )


def check_numa(view: DomainView) -> Finding | None:
    if view.host_numa_nodes < 2 or view.root.find("numatune") is not None:
        return None
    return Finding(
        rule="numa-placement", title="no NUMA placement on a multi-node host",
        severity="medium",
        evidence=[Evidence("host capabilities", f"{view.host_numa_nodes} NUMA nodes"),
                  Evidence("domain XML <numatune>", "absent")],
        source=LIBVIRT_DOMAIN_DOC + "#numa-node-tuning; " + KVM_TUNING_DOC,
        changes=[Change("libvirt-xml", "+  <numatune>\n+    <memory mode='strict' "
                                       "nodeset='0'/>\n+  </numatune>"),
                 Change("openstack", "flavor extra spec hw:numa_nodes=1")],
        cost="the guest must fit in one node's memory and CPUs",
        gain=Gain("cited", "memory accesses stay on the local node", source=KVM_TUNING_DOC),
    )


def check_hugepages(view: DomainView) -> Finding | None:
    if view.root.find("memoryBacking/hugepages") is not None:
        return None
    memory = view.root.find("memory")
    kib = int(memory.text or 0) if memory is not None else 0
    unit = (memory.get("unit", "KiB") if memory is not None else "KiB").lower()
    factor = {"kib": 1, "k": 1, "mib": 1024, "m": 1024, "gib": 1024**2, "g": 1024**2}.get(unit, 1)
    pages = max(1, kib * factor // 2048)
    return Finding(
        rule="hugepages", title="guest memory not backed by huge pages",
        severity="low",
        evidence=[Evidence("domain XML <memoryBacking>", "no <hugepages/>")],
        source=LIBVIRT_DOMAIN_DOC + "#memory-backing; " + KVM_TUNING_DOC,
        changes=[Change("libvirt-xml", "+  <memoryBacking>\n+    <hugepages/>\n"
                                       "+  </memoryBacking>"),
                 Change("sysctl", f"vm.nr_hugepages = {pages}   (2 MiB pages for this guest)"),
                 Change("openstack", "flavor extra spec hw:mem_page_size=large")],
        cost="huge pages are reserved up front: no memory overcommit or ballooning for them",
        gain=Gain("cited", "fewer TLB misses and shorter page walks for the guest",
                  source=KVM_TUNING_DOC),
    )


def check_balloon(view: DomainView) -> Finding | None:
    balloon = view.root.find("devices/memballoon")
    if balloon is None or balloon.get("model") == "none":
        return None
    return Finding(
        rule="balloon", title=f"memory balloon ({balloon.get('model')}) can take guest memory back",
        severity="info",
        evidence=[Evidence("domain XML <memballoon>", f"model={balloon.get('model')}")],
        source=LIBVIRT_DOMAIN_DOC + "#memory-balloon-device",
        changes=[Change("libvirt-xml", f"-    <memballoon model='{balloon.get('model')}'>\n"
                                       "+    <memballoon model='none'/>")],
        cost="without a balloon the host cannot reclaim the guest's memory under pressure and "
             "libvirt loses the guest's memory statistics; keep it where memory is overcommitted",
        gain=Gain("cited", "guest memory stays resident (predictable for dedicated guests)",
                  source=LIBVIRT_DOMAIN_DOC + "#memory-balloon-device"),
    )


def check_clock(view: DomainView) -> Finding | None:
    timers = {t.get("name", ""): t.get("present", "yes")
              for t in view.root.findall("clock/timer")}
    problems = []
    if timers.get("kvmclock") == "no":
        problems.append("kvmclock present='no' (the guest falls back to a slower clocksource)")
    if timers.get("hpet") == "yes":
        problems.append("hpet present='yes' (emulated HPET: every read exits to QEMU)")
    if not problems:
        return None
    return Finding(
        rule="clock", title="guest clock uses emulated timers",
        severity="medium",
        evidence=[Evidence("domain XML <clock><timer>", p) for p in problems],
        source=LIBVIRT_DOMAIN_DOC + "#time-keeping; " + KVM_TUNING_DOC,
        changes=[Change("libvirt-xml", "+    <timer name='kvmclock' present='yes'/>\n"
                                       "+    <timer name='hpet' present='no'/>")],
        cost="none for Linux guests",
        gain=Gain("cited", "time reads without a VM exit (kvm-clock is paravirtual)",
                  source=KVM_TUNING_DOC),
    )


DOMAIN_RULES: tuple[Rule[DomainView], ...] = (
    Rule("cpu-flags", "guest CPU flags", "study 000", check_cpu_flags),
    Rule("disk-bus", "disk bus", LIBVIRT_DOMAIN_DOC, check_disk_bus),
    Rule("disk-cache", "disk cache and I/O mode", LIBVIRT_DOMAIN_DOC, check_disk_cache),
    Rule("disk-io", "disk I/O mode without IOThreads", LIBVIRT_DOMAIN_DOC, check_disk_io),
    Rule("nic-model", "NIC model", LIBVIRT_DOMAIN_DOC, check_nic_model),
    Rule("nic-multiqueue", "virtio-net multiqueue", LIBVIRT_DOMAIN_DOC, check_nic_multiqueue),
    Rule("vcpu-pinning", "vCPU pinning", LIBVIRT_DOMAIN_DOC, check_pinning),
    Rule("numa-placement", "NUMA placement", LIBVIRT_DOMAIN_DOC, check_numa),
    Rule("hugepages", "memory backing", LIBVIRT_DOMAIN_DOC, check_hugepages),
    Rule("balloon", "memory balloon", LIBVIRT_DOMAIN_DOC, check_balloon),
    Rule("clock", "clock source", LIBVIRT_DOMAIN_DOC, check_clock),
)
