"""Short probes for ``virtbench assess`` on the scratch objects of lab ``assess-probes``.

Each probe varies exactly one setting through its knob, on the lab's own objects, per trial (so
two probes in one run never see each other's setting):

- ``probe.fio`` (``vary: io_scheduler``): 4 KiB random reads, 16 in flight (libaio, O_DIRECT),
  on the scratch loop device with that scheduler;
- ``probe.fio`` (``vary: disk_cache``): 4 KiB random writes, one at a time (psync), on the loop
  device opened with the flags QEMU uses for that libvirt cache mode (writethrough: O_DSYNC
  through the page cache; directsync: O_DIRECT + O_DSYNC; none: O_DIRECT; writeback: neither);
- ``probe.iperf3``: one TCP stream through the veth pair with segmentation, checksum and receive
  offloads (tso, gso, gro, tx) on or off at both ends;
- ``probe.guest-iperf3`` (lab ``assess-nic-guest``): iperf3 TCP from the lab's peer namespace
  into its scratch guest, through the guest NIC the one knob it follows picks (``vary:
  nic_model``: e1000e or virtio, one queue pair; ``vary: nic_queues``: a virtio NIC with that
  many queue pairs, one stream per vCPU).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field

from virtbench.contract import Knob, Params, Realisation
from virtbench.model import Artifact, Better, Measurement, Metric, VirtbenchError
from virtbench.parsers.fio import parse_fio
from virtbench.parsers.iperf3 import IPERF3_METRICS, parse_iperf3_json
from virtbench.parsers.parser_contract import ParseError
from virtbench.services import GuestNics, ScratchDisk, VethPair
from virtbench.workloads.workload_contract import Tool, TrialContext, TrialResult, Workload

__all__ = ["CACHE_FLAGS", "WORKLOADS", "FioProbe", "GuestIperf3Probe", "Iperf3Probe"]

SCHEDULERS = ("none", "mq-deadline", "kyber", "bfq")
CACHE_FLAGS: dict[str, tuple[str, ...]] = {
    "writethrough": ("--direct=0", "--sync=dsync"),
    "directsync": ("--direct=1", "--sync=dsync"),
    "none": ("--direct=1",),
    "writeback": ("--direct=0",),
}
"""The open flags QEMU uses for each libvirt cache mode, as fio options."""
OFFLOADS = ("tso", "gso", "gro", "tx")

IO_SCHEDULER = Knob("io_scheduler", "block I/O scheduler of the probe's scratch loop device",
                    choices=SCHEDULERS)
DISK_CACHE = Knob("disk_cache", "libvirt disk cache mode the probe's writes imitate (the open "
                  "flags QEMU uses for it)", choices=tuple(CACHE_FLAGS))
NIC_OFFLOADS = Knob("nic_offloads", "tso, gso, gro and tx checksum offloads of the probe's "
                    "veth pair", choices=("on", "off"))


class FioProbeParams(Params):
    vary: Literal["io_scheduler", "disk_cache"] = Field(
        description="the one knob this probe follows (the other setting stays as the lab made it)")
    runtime_s: float = Field(1.0, ge=0.1, le=3600, description="seconds of I/O per trial "
                             "(at least 0.1: fio's own clock is in milliseconds)")


class FioProbe(Workload):
    name = "probe.fio"
    description = ("assess's disk probe: fio on a scratch loop device, with one setting (its "
                   "scheduler, or the cache mode's open flags) as the variant says")
    metrics = (
        Metric("iops", "IO/s", Better.HIGHER, "4 KiB I/Os completed per second", primary=True),
        Metric("clat_mean_us", "us", Better.LOWER, "mean completion latency, microseconds"),
    )
    tools = (Tool("fio", "fio", "the probe"), Tool("tee", "coreutils", "setting the scheduler"))
    Params = FioProbeParams
    knobs: ClassVar[tuple[Knob, ...]] = (IO_SCHEDULER, DISK_CACHE)
    needs = (ScratchDisk,)
    timeout_s = 60.0

    def realise(self, knobs: Mapping[str, Any]) -> Realisation:
        value = str(knobs.get(self.params.vary, "none"))
        return Realisation(mechanism=f"{self.params.vary}={value} on the scratch loop device",
                           settings={self.params.vary: value})

    def argv(self, device: str, value: str, seed: int) -> list[str]:
        common = ["fio", "--output-format=json", f"--filename={device}", "--bs=4k",
                  f"--runtime={round(self.params.runtime_s * 1000)}ms", "--time_based",
                  f"--randseed={seed % (2**31)}", "--name=probe"]
        if self.params.vary == "io_scheduler":
            return [*common, "--rw=randread", "--ioengine=libaio", "--iodepth=16",
                    "--direct=1"]
        return [*common, "--rw=randwrite", "--ioengine=psync", "--iodepth=1",
                *CACHE_FLAGS[value]]

    def run(self, ctx: TrialContext) -> TrialResult:
        disk = ctx.services.get(ScratchDisk)
        value = ctx.realisation.settings.get(self.params.vary, "none")
        notes = {"device": f"{disk.device}: {disk.size_mib} MiB image on {disk.backing}"}
        if self.params.vary == "io_scheduler":
            if value not in disk.schedulers:
                raise VirtbenchError(f"probe.fio: this kernel offers no scheduler {value!r} "
                                     f"(it has {', '.join(disk.schedulers)})")
            ctx.target.run(["tee", disk.scheduler_file], input=value + "\n")
            chosen = ctx.target.run(["cat", disk.scheduler_file]).stdout
            if f"[{value}]" not in chosen:
                raise VirtbenchError(f"probe.fio: scheduler {value} did not apply: {chosen}")
            notes["scheduler"] = value
        else:
            notes["open_flags"] = " ".join(CACHE_FLAGS[value])
        result = ctx.target.run(self.argv(disk.device, value, ctx.seed),
                                timeout=self.params.runtime_s + 30)
        pattern = "randread" if self.params.vary == "io_scheduler" else "randwrite"
        try:
            parsed = {m.metric: m.value for m in parse_fio(result.stdout)
                      if m.value is not None and m.labels.get("job", "total") == "total"}
            iops, clat = parsed[f"{pattern}_iops"], parsed[f"{pattern}_clat_mean_us"]
        except (ParseError, KeyError) as exc:
            raise VirtbenchError(f"probe.fio: cannot read fio's output: {exc}") from exc
        return TrialResult([Measurement("iops", iops), Measurement("clat_mean_us", clat)],
                           [Artifact("fio.json", result.stdout.encode(), "application/json")],
                           notes)


class Iperf3ProbeParams(Params):
    runtime_s: float = Field(1.0, ge=0.1, le=3600,
                             description="seconds of traffic per trial")


class Iperf3Probe(Workload):
    name = "probe.iperf3"
    description = ("assess's network probe: one iperf3 TCP stream through the lab's veth pair "
                   "with its offloads on or off as the variant says")
    metrics = (
        # iperf3's own figures, as its parser declares them
        *(m for m in IPERF3_METRICS if m.name in ("throughput_mbps", "tcp_retransmits")),
    )
    tools = (Tool("iperf3", "iperf3", "the probe's client"),
             Tool("ethtool", "ethtool", "the veth's offloads"))
    Params = Iperf3ProbeParams
    knobs: ClassVar[tuple[Knob, ...]] = (NIC_OFFLOADS,)
    needs = (VethPair,)
    timeout_s = 60.0

    def realise(self, knobs: Mapping[str, Any]) -> Realisation:
        value = str(knobs.get("nic_offloads", "on"))
        return Realisation(mechanism=f"ethtool -K {' '.join(OFFLOADS)} {value} on both veth ends",
                           settings={"nic_offloads": value})

    def run(self, ctx: TrialContext) -> TrialResult:
        net = ctx.services.get(VethPair)
        value = ctx.realisation.settings.get("nic_offloads", "on")
        for ns, iface in ((net.server_ns, net.server_iface), (net.client_ns, net.client_iface)):
            argv = ["ip", "netns", "exec", ns, "ethtool", "-K", iface]
            for feature in OFFLOADS:
                argv += [feature, value]
            ctx.target.run(argv)
        result = ctx.target.run(
            ["ip", "netns", "exec", net.client_ns, "iperf3", "-c", net.address, "-p",
             str(net.port), "-J", "-t", f"{self.params.runtime_s:g}"],
            timeout=self.params.runtime_s + 30)
        try:
            parsed = parse_iperf3_json(result.stdout)
        except ParseError as exc:
            raise VirtbenchError(f"probe.iperf3: cannot read iperf3's output: {exc}") from exc
        out = [Measurement("throughput_mbps", parsed.receiver_bps / 1e6)]
        if parsed.retransmits is not None:
            out.append(Measurement("tcp_retransmits", float(parsed.retransmits)))
        return TrialResult(out, [Artifact("iperf3.json", result.stdout.encode(),
                                          "application/json")],
                           {"path": f"veth {net.client_iface} ({net.client_ns}) → "
                                    f"{net.server_iface} ({net.server_ns})",
                            "offloads": f"{'/'.join(OFFLOADS)} {value}"})


NIC_MODEL = Knob("nic_model", "model of the scratch guest's NIC the probe's traffic crosses "
                 "(one queue pair)", choices=("virtio", "e1000e"))
NIC_QUEUES = Knob("nic_queues", "queue pairs of the scratch guest's virtio NIC the probe's "
                  "traffic crosses", int)


class GuestIperf3ProbeParams(Params):
    vary: Literal["nic_model", "nic_queues"] = Field(
        description="the one knob this probe follows: which of the guest's NICs it crosses")
    runtime_s: float = Field(2.0, ge=0.5, le=3600, description="seconds of traffic per trial")


class GuestIperf3Probe(Workload):
    name = "probe.guest-iperf3"
    description = ("assess's NIC probe in a scratch guest: iperf3 TCP from the peer namespace "
                   "into the guest through the NIC (model, queue pairs) the variant says")
    metrics = tuple(m for m in IPERF3_METRICS if m.name in ("throughput_mbps", "tcp_retransmits"))
    tools = (Tool("iperf3", "iperf3", "the probe's client, inside the guest"),)
    Params = GuestIperf3ProbeParams
    knobs: ClassVar[tuple[Knob, ...]] = (NIC_MODEL, NIC_QUEUES)
    needs = (GuestNics,)
    timeout_s = 90.0

    def realise(self, knobs: Mapping[str, Any]) -> Realisation:
        if self.params.vary == "nic_model":
            model, queues = str(knobs.get("nic_model", "virtio")), 1
        else:
            model, queues = "virtio", int(knobs.get("nic_queues", 1))
        return Realisation(mechanism=f"iperf3 through the scratch guest's {model} NIC with "
                                     f"{queues} queue pair(s)",
                           settings={self.params.vary: model if self.params.vary == "nic_model"
                                     else str(queues), "model": model, "queues": str(queues)})

    def argv(self, nics: GuestNics, model: str, queues: int) -> list[str]:
        """The client in the guest, reversed (``-R``: the peer sends, the guest receives),
        bound to the NIC's address: one stream, or one per vCPU for the queue pairs."""
        nic = nics.nic(model, queues)
        streams = nics.vcpus if self.params.vary == "nic_queues" else 1
        return ["iperf3", "-c", nic.peer_ip, "-B", nic.guest_ip, "-p", str(nics.port), "-R",
                "-J", "-P", str(streams), "-t", f"{self.params.runtime_s:g}"]

    def run(self, ctx: TrialContext) -> TrialResult:
        nics = ctx.services.get(GuestNics)
        model = ctx.realisation.settings.get("model", "virtio")
        queues = int(ctx.realisation.settings.get("queues", "1"))
        argv = self.argv(nics, model, queues)
        result = ctx.target.run(argv, timeout=self.params.runtime_s + 60)
        try:
            parsed = parse_iperf3_json(result.stdout)
        except ParseError as exc:
            raise VirtbenchError(f"probe.guest-iperf3: cannot read iperf3's output: {exc}"
                                 ) from exc
        out = [Measurement("throughput_mbps", parsed.receiver_bps / 1e6)]
        if parsed.retransmits is not None:
            out.append(Measurement("tcp_retransmits", float(parsed.retransmits)))
        nic = nics.nic(model, queues)
        return TrialResult(out, [Artifact("iperf3.json", result.stdout.encode(),
                                          "application/json")],
                           {"path": f"{nics.peer_ns} → guest {nic.guest_iface} ({model}, "
                                    f"{queues} queue pair(s), {argv[argv.index('-P') + 1]} "
                                    "stream(s))"})


WORKLOADS = (FioProbe, Iperf3Probe, GuestIperf3Probe)
