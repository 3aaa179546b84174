"""The NIC what-ifs measured in a guest: for a domain with an emulated NIC (finding
``nic-model``, or ``guest-nic-model`` seen inside the guest) or a one-queue virtio NIC on a
multi-vCPU guest (``nic-multiqueue``), iperf3 runs inside ONE scratch guest of lab
``assess-nic-guest`` that has every NIC the what-ifs compare (an e1000e and a virtio NIC, a
virtio NIC with one queue pair and one with N), each a tap into a peer namespace. One normal
run of experiment ``assess-guest-nic``, beside the assessment's own run. Where no guest can be
started here the emulated NIC's what-if falls back to the veth offload probe
(:mod:`virtbench.assess.probes`) and multiqueue stays cited; the assessment says which."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from virtbench.analysis import analyse
from virtbench.assess.findings import Finding
from virtbench.assess.measure import Effect
from virtbench.runner import Runner, RunRecord, build_plan
from virtbench.runner.engine import ProgressHook
from virtbench.spec.loader import parse_resolved
from virtbench.store import Store

__all__ = ["GUEST_NIC_EXPERIMENT", "NIC_WORKLOADS", "GuestNicWhatIf", "guest_nic_for",
           "nic_guest_problems", "nic_measure", "run_guest_nic"]

GUEST_NIC_EXPERIMENT = "assess-guest-nic"
NIC_WORKLOADS = {"nic-model": "guest.nic.model", "nic-multiqueue": "guest.nic.queues"}
"""The workload id of each what-if (its ``measure``) in the run."""
EMULATED_MODEL = "e1000e"
"""The emulated NIC the guest has: what QEMU emulates and the guest lab verifies; an rtl8139,
e1000 or pcnet found in the domain is stood in for by it (said in the evidence)."""
MAX_QUEUES = 4
REPETITIONS = 3
IPERF3_RUNTIME_S = 2.0
FIXED_S = 40.0
"""What a NIC what-if costs here beside its trials, for planning: the private libvirtd, one
boot of the generic kernel under TCG, the NICs attached and verified, the iperf3 server. A
planning figure for a quiet 2-CPU machine, not measured (docs/assess.md: at a load average of
about 20 the boot alone took 164 s)."""
TRIAL_S = IPERF3_RUNTIME_S + 2.5
"""One trial: the traffic, iperf3's start in the emulated guest and the SSH round trips (3 to
5 s measured at that load)."""
IMAGE_BUILD_S = 90.0
"""Building the guest image the first time (mmdebstrap and Debian's generic kernel)."""
DEFAULT_IMAGE_CACHE = ".cache/virtbench-guest/nic-image"


def nic_measure(finding: Finding) -> str | None:
    """Which NIC what-if quantifies ``finding`` (``nic-model``, ``nic-multiqueue``), if any."""
    if finding.rule in ("nic-model", "guest-nic-model"):
        return "nic-model"
    if finding.rule == "nic-multiqueue":
        return "nic-multiqueue"
    return None


@dataclass(frozen=True)
class GuestNicWhatIf:
    """The NICs as found (the emulated model, one queue pair) against as recommended (virtio,
    ``queues`` pairs), and the what-ifs measured."""

    found_model: str | None
    """The emulated model found (None: no nic-model what-if)."""
    queues: int
    """Queue pairs (and vCPUs) of the multiqueue what-if's recommended NIC (0: none)."""
    image_cache: str | None = None

    @property
    def measures(self) -> tuple[str, ...]:
        return tuple(m for m, wanted in (("nic-model", self.found_model is not None),
                                         ("nic-multiqueue", self.queues > 1)) if wanted)

    def nics(self) -> list[str]:
        return ["virtio", *([EMULATED_MODEL] if self.found_model else []),
                *([f"virtio:{self.queues}"] if self.queues > 1 else [])]

    def cost_s(self) -> float:
        """Seconds the what-if takes here, for planning (an image not built yet: its build
        too). Each workload: both variants, a warm-up and the repetitions."""
        cache = Path(self.image_cache or DEFAULT_IMAGE_CACHE)
        trials = len(self.measures) * 2 * (REPETITIONS + 1)
        return FIXED_S + trials * TRIAL_S + (0.0 if cache.is_dir() else IMAGE_BUILD_S)

    def lab_params(self) -> dict[str, object]:
        params: dict[str, object] = {"nics": self.nics(), "vcpus": max(1, self.queues)}
        if self.image_cache is not None:
            params["image_cache"] = self.image_cache
        return params

    def experiment_text(self) -> str:
        as_found: dict[str, object] = {}
        recommended: dict[str, object] = {}
        workloads = []
        if self.found_model is not None:
            as_found["nic_model"], recommended["nic_model"] = EMULATED_MODEL, "virtio"
            workloads.append({"name": "probe.guest-iperf3", "id": NIC_WORKLOADS["nic-model"],
                              "params": {"vary": "nic_model", "runtime_s": IPERF3_RUNTIME_S}})
        if self.queues > 1:
            as_found["nic_queues"], recommended["nic_queues"] = 1, self.queues
            workloads.append({"name": "probe.guest-iperf3",
                              "id": NIC_WORKLOADS["nic-multiqueue"],
                              "params": {"vary": "nic_queues", "runtime_s": IPERF3_RUNTIME_S}})
        what = "; ".join(f"{k} {as_found[k]} → {recommended[k]}" for k in as_found)
        return json.dumps({
            "name": GUEST_NIC_EXPERIMENT,
            "description": f"virtbench assess in a scratch guest: {what}",
            "seed": 1,
            "lab": {"kind": "assess-nic-guest", "params": self.lab_params()},
            "baseline": "as-found",
            "variants": [{"name": "as-found", "knobs": as_found},
                         {"name": "recommended", "knobs": recommended}],
            "workloads": workloads,
            "repetitions": REPETITIONS,
            "warmup": 1,
        }, indent=1)

    def what(self, measure: str) -> str:
        where = (f"inside a scratch guest (emulated: TCG under a private libvirtd, as kvm "
                 f"sandbox; {max(1, self.queues)} vCPU) from a peer namespace through one tap "
                 "per NIC")
        if measure == "nic-model":
            stand_in = "" if self.found_model == EMULATED_MODEL else \
                f" ({EMULATED_MODEL} standing in for the {self.found_model} found)"
            return (f"iperf3 TCP, one stream, {IPERF3_RUNTIME_S:g} s per trial, received "
                    f"{where}: its {EMULATED_MODEL} NIC{stand_in} vs its virtio-net NIC, both "
                    "one queue pair, QEMU's userspace backend")
        return (f"iperf3 TCP, {self.queues} streams (one per vCPU), {IPERF3_RUNTIME_S:g} s per "
                f"trial, received {where}: its virtio-net NIC with 1 queue pair vs the one "
                f"with {self.queues} (ethtool -L combined {self.queues} in the guest)")


def guest_nic_for(findings: Iterable[Finding], image_cache: str | None = None,
                  host_cpus: int | None = None) -> GuestNicWhatIf | None:
    """The NIC what-if the findings ask for, if any. The multiqueue what-if's guest gets the
    domain's vCPUs, at most this host's CPUs and :data:`MAX_QUEUES` (TCG runs a host thread
    per vCPU)."""
    model: str | None = None
    queues = 0
    cpus = host_cpus if host_cpus is not None else (os.cpu_count() or 1)
    for finding in findings:
        measure = nic_measure(finding)
        if measure == "nic-model" and model is None:
            model = str(finding.extra.get("model") or EMULATED_MODEL)
        elif measure == "nic-multiqueue" and not queues:
            queues = min(int(finding.extra.get("vcpus", 2)), cpus, MAX_QUEUES)
    whatif = GuestNicWhatIf(model, queues if queues > 1 else 0, image_cache)
    return whatif if whatif.measures else None


def nic_guest_problems(whatif: GuestNicWhatIf) -> list[str]:
    """Why no scratch guest with these NICs can be started here, from the lab's own check
    (root, QEMU, mmdebstrap, iperf3, the NICs valid for the guest's vCPUs)."""
    from virtbench.labs.assess_nic_guest import NicGuestLab
    from virtbench.targets.local import LocalTarget

    params = NicGuestLab.Params(**whatif.lab_params())
    return NicGuestLab(params, Path(tempfile.gettempdir()), LocalTarget()).check()


def run_guest_nic(store: Store, whatif: GuestNicWhatIf,
                  progress: ProgressHook | None = None) -> tuple[str, list[Effect]]:
    """The NIC what-if as a normal stored run: its id and, per what-if measured, the speedup
    of the guest's received throughput (recommended over as found)."""
    text = whatif.experiment_text()
    outcome = Runner(build_plan(parse_resolved(text, "<assess guest NIC>")),
                     RunRecord.new(store, text, "virtbench assess"), progress=progress).run()
    analysis = analyse(store, [outcome.run_id])
    ids = {workload: measure for measure, workload in NIC_WORKLOADS.items()}
    effects = []
    for row in analysis.rows:
        measure = ids.get(row.workload_id)
        if measure is None or row.variant != "recommended" or not row.metric.primary \
                or row.speedup is None:
            continue
        n = row.summary.n if row.summary is not None else 0
        effects.append(Effect(
            row.workload_id, row.metric.name, row.speedup.ratio, row.speedup.ci_low,
            row.speedup.ci_high, n, measure=measure, what=whatif.what(measure),
            not_measured=("the domain's own NIC was not touched; under TCG QEMU emulates the "
                          "guest's CPU too and has no vhost-net, so on a KVM host the "
                          "difference (virtio with vhost) is the cited one")))
    return outcome.run_id, effects
