"""The disk what-ifs measured in a guest: for a domain whose disk uses cache writethrough or
directsync (finding ``disk-cache``), or ``io='threads'`` without IOThreads (``disk-io``), fio runs
inside a scratch guest of the guest lab (docs/guests.md) whose test disk is configured as found
against as recommended (cache='none' io='native'), both disks on the same host storage. One
normal run of experiment ``assess-guest-disk``, beside the assessment's own run. Where no guest
can be started here the loop-device probe (:mod:`virtbench.assess.probes`) measures the cache
mode instead, and the assessment says which was used."""

from __future__ import annotations

import json
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

__all__ = ["GUEST_EXPERIMENT", "GUEST_MEASURES", "GUEST_WORKLOAD", "GuestDisk", "guest_disk_for",
           "guest_problems", "run_guest_disk"]

GUEST_EXPERIMENT = "assess-guest-disk"
GUEST_WORKLOAD = "guest.disk"
GUEST_MEASURES = ("disk-cache", "disk-io")
"""The findings a guest what-if quantifies, and the fio pattern whose IOPS is each one's gain:
writethrough/directsync cost every write a host flush; QEMU's thread pool costs reads in
flight."""
PATTERN = {"disk-cache": "randwrite", "disk-io": "randread"}
REPETITIONS = 3
FIO_RUNTIME_S = 2
DISK_MIB = 256
FIXED_S = 70.0
"""What a guest what-if costs here beside its trials, for planning: the private libvirtd and
image (cached), and two boots under TCG (~13 s each, BENCHMARKS.md "guest: start")."""
TRIAL_S = 2 * FIO_RUNTIME_S + 3.0
"""One trial: two fio patterns and dropping the guest's caches over SSH."""
IMAGE_BUILD_S = 60.0
"""Building the guest image the first time (mmdebstrap from Debian's mirror; then cached)."""
RECOMMENDED = {"cache": "none", "io": "native"}


@dataclass(frozen=True)
class GuestDisk:
    """The domain's disk settings as found, the recommended ones, and the findings measured."""

    as_found: dict[str, str]
    measures: tuple[str, ...]
    image_cache: str | None = None
    """The guest lab's image cache (None: its default)."""

    def cost_s(self) -> float:
        """Seconds the what-if takes here, for planning (an image not built yet: its build
        too, BENCHMARKS.md "guest: start and image build")."""
        from virtbench.labs.guest import GuestParams

        cache = Path(self.image_cache or GuestParams().image_cache)
        return FIXED_S + 2 * REPETITIONS * TRIAL_S + (0.0 if cache.is_dir() else IMAGE_BUILD_S)

    def experiment_text(self) -> str:
        params: dict[str, object] = {"disk_mib": DISK_MIB}
        if self.image_cache is not None:
            params["image_cache"] = self.image_cache
        return json.dumps({
            "name": GUEST_EXPERIMENT,
            "description": (f"virtbench assess in a scratch guest: disk cache="
                            f"{self.as_found['cache']} io={self.as_found['io']} → cache=none "
                            "io=native"),
            "seed": 1,
            "lab": {"kind": "guest", "params": params},
            "baseline": "as-found",
            "variants": [{"name": "as-found", "knobs": dict(self.as_found)},
                         {"name": "recommended", "knobs": dict(RECOMMENDED)}],
            "workloads": [{"name": "storage.fio", "id": GUEST_WORKLOAD, "params": {
                "patterns": ["randwrite", "randread"], "runtime_s": FIO_RUNTIME_S,
                "size_mib": 64}}],
            "repetitions": REPETITIONS,
            "warmup": 0,
        }, indent=1)

    def what(self, virt: str) -> str:
        return (f"fio 4 KiB random writes and reads (libaio, 16 in flight, O_DIRECT in the "
                f"guest), {FIO_RUNTIME_S} s each per trial, inside a scratch guest ({virt}) "
                f"whose virtio test disk ({DISK_MIB} MiB raw, on this host's /tmp) has cache="
                f"{self.as_found['cache']} io={self.as_found['io']} vs cache=none io=native")


def guest_disk_for(findings: Iterable[Finding], image_cache: str | None = None
                   ) -> GuestDisk | None:
    """The guest what-if the findings ask for (the first such disk's settings), if any."""
    found = [f for f in findings if f.measure in GUEST_MEASURES]
    if not found:
        return None
    cache = str(found[0].extra.get("cache", "none"))
    io = str(found[0].extra.get("io") or "threads")
    if cache not in ("none", "directsync"):
        io = "threads"  # io='native' needs O_DIRECT: QEMU uses its thread pool
    measures = tuple(dict.fromkeys(str(f.measure) for f in found))
    return GuestDisk({"cache": cache, "io": io}, measures, image_cache)


def guest_problems(whatif: GuestDisk) -> list[str]:
    """Why no scratch guest can be started here (root for the private libvirtd, QEMU,
    qemu-img, mmdebstrap), from the guest lab's own check."""
    from virtbench.labs.guest import GuestLab, GuestParams
    from virtbench.targets.local import LocalTarget

    params = GuestParams() if whatif.image_cache is None else GuestParams(
        image_cache=whatif.image_cache)
    return GuestLab(params, Path(tempfile.gettempdir()), LocalTarget()).check()


def run_guest_disk(store: Store, whatif: GuestDisk,
                   progress: ProgressHook | None = None) -> tuple[str, list[Effect]]:
    """The guest what-if as a normal stored run: its id and, per finding measured, the
    speedup of its pattern's IOPS (recommended over as found)."""
    text = whatif.experiment_text()
    outcome = Runner(build_plan(parse_resolved(text, "<assess guest>")),
                     RunRecord.new(store, text, "virtbench assess"), progress=progress).run()
    analysis = analyse(store, [outcome.run_id])
    virt = "emulated: TCG under a private libvirtd, as kvm sandbox"
    effects = []
    for measure in whatif.measures:
        metric = f"{PATTERN[measure]}_iops"
        for row in analysis.rows:
            if row.variant != "recommended" or row.metric.name != metric \
                    or row.speedup is None:
                continue
            n = row.summary.n if row.summary is not None else 0
            effects.append(Effect(
                row.workload_id, metric, row.speedup.ratio, row.speedup.ci_low,
                row.speedup.ci_high, n, measure=measure, what=whatif.what(virt),
                not_measured=("the domain's own disk and image were not touched: the scratch "
                              "guest's disk is a fresh raw file beside this host's")))
    return outcome.run_id, effects
