"""Runs with profiles, stored through the Store API: the real folded stacks of
tests/data/perf-folded (the cpu.crc32c probe with the software CRC and with SSE4.2) as each
trial's `profile.folded` artifact, beside the trial's samples and `profile.` counters."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from virtbench.model import Artifact, Better, Measurement, Metric
from virtbench.store import Store, TrialRecord

DATA = Path(__file__).resolve().parent / "data" / "perf-folded"
SOFTWARE = "_crc32c_sw_slicing_by_8"
HARDWARE = "_crc32c_hw_adler"
FREQUENCY_HZ = 499  # generate.sh's perf record -F

METRICS = [
    Metric("time_per_checksum_s", "s", Better.LOWER, "wall time of one CRC32C", True),
    Metric("profile.task_clock_ms", "ms", Better.LOWER, "CPU time of the profiled process"),
    Metric("profile.context_switches", "switches", Better.LOWER, "context switches"),
]


def folded(path: str) -> bytes:
    """One saved profile: 'software-1' is tests/data/perf-folded/crc32c-software-1.folded."""
    return (DATA / f"crc32c-{path}.folded").read_bytes()


def samples(content: bytes) -> int:
    return sum(int(line.rsplit(b" ", 1)[1]) for line in content.splitlines() if line.strip())


def add_profiled_run(store: Store, profiles: Mapping[str, Sequence[bytes | None]], *,
                     experiment: str = "crc", wid: str = "crc32c",
                     switches: Mapping[str, float] | None = None,
                     meta: bool = True, counters: bool = True,
                     extra: Mapping[tuple[str, int], Sequence[Artifact]] | None = None) -> str:
    """One run; ``profiles`` maps each variant to its trials' folded stacks (None: a trial
    without a profile). time_per_checksum_s and profile.task_clock_ms follow the samples (a
    sample every 1/499 s); profile.context_switches is ``switches[variant]`` + the repetition.
    ``counters=False``: no `profile.` metric at all (a run that was not profiled). ``extra``:
    more artifacts of a trial, by (variant, repetition); its `profile.json` replaces the
    default one."""
    variants = list(profiles)
    run_id = store.create_run(experiment=experiment, description="", spec_yaml="name: crc\n",
                              spec_path="", seed=1, host="host-a", target="local",
                              baseline=variants[0], version="0.1.0")
    store.add_variants(run_id, [(v, {}) for v in variants], variants[0])
    metrics = METRICS if counters else METRICS[:1]
    store.add_workload(run_id, wid, "cpu.crc32c", 0, {"size_mib": 16, "loops": 1000}, metrics)
    units = {m.name: m.unit for m in METRICS}
    order = 0
    for variant, trials in profiles.items():
        for rep, content in enumerate(trials):
            now = time.time()
            n = samples(content) if content else 1000
            artifacts = list((extra or {}).get((variant, rep), []))
            own_meta = any(a.name == "profile.json" for a in artifacts)
            if content is not None:
                artifacts.append(Artifact("profile.folded", content, "text/x-folded-stacks"))
                if meta and not own_meta:
                    artifacts.append(Artifact("profile.json", json.dumps(
                        {"frequency_hz": FREQUENCY_HZ, "duration_s": n / FREQUENCY_HZ,
                         "samples": n, "scope": "process", "notes": []}).encode(),
                        "application/json"))
            store.record_trial(run_id, TrialRecord(
                variant=variant, workload_id=wid, repetition=rep, order_index=order,
                warmup=False, status="ok", error="", started_at=now, ended_at=now,
                target="local", facts_id=None, notes={}),
                [Measurement("time_per_checksum_s", n / FREQUENCY_HZ / 1000),
                 Measurement("profile.task_clock_ms", 1000.0 * n / FREQUENCY_HZ),
                 Measurement("profile.context_switches",
                             (switches or {}).get(variant, 10.0) + rep)][:len(metrics)],
                units, artifacts)
            order += 1
    store.set_run_status(run_id, "complete")
    return run_id


SOFTWARE_TRIALS = [folded(f"software-{i}") for i in (1, 2, 3)]
HARDWARE_TRIALS = [folded(f"hardware-{i}") for i in (1, 2, 3)]
