"""Real SQLite stores filled with synthetic samples through the Store API, for report tests
(a module of its own name: `from conftest import` finds whichever conftest pytest loaded last)."""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from virtbench.model import Better, Measurement, Metric
from virtbench.store import Store, TrialRecord

CPU_FLAGS = ["ssse3", "sse4.1", "sse4.2", "aes"]

CRC_METRICS = [
    Metric("time", "s", Better.LOWER, "Wall time of one CRC32C checksum of the buffer.", True),
    Metric("throughput", "B/s", Better.HIGHER, "Buffer size divided by the checksum time."),
]
X265_METRICS = [
    Metric("encode_time", "s", Better.LOWER, "Wall time of the ffmpeg libx265 encode.", True),
    Metric("fps", "frames/s", Better.HIGHER, "Frames encoded per second."),
]
BONNIE_METRICS = [
    Metric("seq_create", "ops/s", Better.HIGHER, "Sequential file creations per second."),
]
IPERF_METRICS = [
    Metric("throughput", "bit/s", Better.HIGHER, "Received bits divided by the transfer time.",
           True),
]
WEB_METRICS = [
    Metric("response_time_mean", "s", Better.LOWER, "Mean client response time of a trial.",
           True),
    Metric("hit_ratio", "%", Better.HIGHER, "Varnish cache hits / (hits + misses), every 30 s."),
    Metric("latency", "s", Better.LOWER, "Response time of one request (per-request sample)."),
]


class Filler:
    """Writes trials into a run the way the runner does (one transaction per trial)."""

    def __init__(self, store: Store, run_id: str) -> None:
        self.store = store
        self.run_id = run_id
        self.order = itertools.count()
        self.units: dict[str, dict[str, str]] = {}

    def workload(self, wid: str, name: str, metrics: Sequence[Metric],
                 params: dict[str, Any] | None = None) -> None:
        self.store.add_workload(self.run_id, wid, name, len(self.units), params or {}, metrics)
        self.units[wid] = {m.name: m.unit for m in metrics}

    def trial(self, variant: str, wid: str, rep: int, measurements: Sequence[Measurement],
              error: str = "") -> None:
        now = time.time()
        self.store.record_trial(self.run_id, TrialRecord(
            variant=variant, workload_id=wid, repetition=rep, order_index=next(self.order),
            warmup=False, status="failed" if error else "ok", error=error, started_at=now,
            ended_at=now + 0.01, target="local", facts_id=None, notes={}),
            measurements, self.units[wid])


def _run(store: Store, name: str, baseline: str, description: str = "") -> str:
    return store.create_run(experiment=name, description=description, spec_yaml="", spec_path="",
                            seed=1, host="testhost", target="local", baseline=baseline,
                            version="0.1.0")


def _facts(flags: list[str]) -> dict[str, Any]:
    return {"cpu": {"model": "AMD Ryzen 7 4800H", "vendor": "AuthenticAMD", "logical_cpus": 2,
                    "flags": flags},
            "hypervisor": {"in_vm": True, "cpuid_vendor": "KVM"},
            "kernel": "Linux 6.1.0-18-amd64", "memory": {"MemTotal": 4 * 1024 ** 3},
            "tools": {"ffmpeg": "ffmpeg version 5.1.4", "openssl": "OpenSSL 3.0.11"}}


def fill_factorial(store: Store, seed: int = 0, reps: int = 6) -> str:
    """Study 000 in miniature: all 16 subsets of four CPU flags, CRC32C and x265, plus one
    bonnie++-like metric with 'too_fast' samples, a failed trial, facts and realisations."""
    rng = np.random.default_rng(seed)
    run_id = _run(store, "cpu-features", "default", "KVM CPU-feature tuning <study 000>")
    subsets = [list(c) for k in range(len(CPU_FLAGS) + 1)
               for c in itertools.combinations(CPU_FLAGS, k)]
    names = ["+".join(s) or "default" for s in subsets]
    store.add_variants(run_id, [(n, {"cpu_features": s}) for n, s in zip(names, subsets,
                                                                            strict=True)],
                       "default")
    fill = Filler(store, run_id)
    fill.workload("cpu.crc32c", "cpu.crc32c", CRC_METRICS, {"size_mib": 10})
    fill.workload("media.x265", "media.x265", X265_METRICS, {"preset": "medium"})
    fill.workload("disk.bonnie", "disk.bonnie", BONNIE_METRICS)
    store.add_facts(run_id, "before", _facts(["fpu", "sse2", "ssse3", "sse4_1", "sse4_2",
                                              "aes", "avx", "avx2", "bmi1", "bmi2", "fma",
                                              "pclmulqdq", "popcnt", "rdrand", "sha_ni"]))
    store.add_facts(run_id, "after", _facts(["fpu", "sse2", "ssse3", "sse4_1", "sse4_2",
                                             "aes", "avx", "avx2", "bmi1", "bmi2", "fma",
                                             "pclmulqdq", "popcnt", "rdrand", "x2apic"]))
    for name, subset in zip(names, subsets, strict=True):
        crc = 0.55e-3 if "sse4.2" in subset else 4.16e-3
        x265 = 138.24 / (1.12 if "ssse3" in subset else 1.0) / (
            1.95 if "sse4.1" in subset else 1.0)
        for rep in range(reps):
            t = crc * float(rng.normal(1.0, 0.03))
            e = x265 * float(rng.normal(1.0, 0.02))
            fill.trial(name, "cpu.crc32c", rep, [Measurement("time", t),
                                                 Measurement("throughput", 10 * 2 ** 20 / t)])
            fill.trial(name, "media.x265", rep, [Measurement("encode_time", e),
                                                 Measurement("fps", 250 / e)])
            fast = rep % 2 == 0 and "aes" in subset
            fill.trial(name, "disk.bonnie", rep, [
                Measurement("seq_create", None, status="too_fast") if fast else
                Measurement("seq_create", float(rng.normal(20000, 500)))])
        store.add_realisation(
            run_id, name, "media.x265", "x265 asm level",
            {"x265-params": "asm=" + ("sse4.1" if "sse4.1" in subset else
                                      "ssse3" if "ssse3" in subset else "sse2")},
            ["x265 cannot take sse4.2 without ssse3: asm=ssse3 used"]
            if "sse4.2" in subset and "ssse3" not in subset else [])
        store.add_realisation(run_id, name, "cpu.crc32c", "environment",
                              {"CRC32C_SW_MODE": "auto" if "sse4.2" in subset else "force"},
                              [])
    fill.trial("aes", "cpu.crc32c", reps, [], error="RuntimeError: <boom> & crash")
    store.set_run_status(run_id, "complete", "fixed repetitions done (6 per variant)")
    return run_id


def fill_matrix(store: Store, seed: int = 1, reps: int = 5) -> str:
    """Study 001/002 shape: switch × background load, throughput falling with the load."""
    rng = np.random.default_rng(seed)
    run_id = _run(store, "ovs-qos", "switch=linux-bridge,background_mbps=0")
    knobs = [{"switch": s, "background_mbps": b}
             for s in ("linux-bridge", "ovs") for b in (0, 100, 150, 200)]
    names = [f"switch={k['switch']},background_mbps={k['background_mbps']}" for k in knobs]
    store.add_variants(run_id, list(zip(names, knobs, strict=True)), names[0])
    fill = Filler(store, run_id)
    fill.workload("net.iperf3", "net.iperf3", IPERF_METRICS, {"seconds": 20})
    for name, k in zip(names, knobs, strict=True):
        base = 565e6 if k["switch"] == "ovs" else 507e6
        for rep in range(reps):
            value = base - 0.4e6 * float(k["background_mbps"]) + float(rng.normal(0, 4e6))
            fill.trial(name, "net.iperf3", rep, [Measurement("throughput", value)])
    store.set_run_status(run_id, "complete", "fixed repetitions done")
    return run_id


def fill_series(store: Store, seed: int = 2, reps: int = 3, requests: int = 3000) -> str:
    """Study 004 shape: three cache storages, a hit ratio every 30 s and per-request latencies
    (t set), plus a per-trial summary (t None)."""
    rng = np.random.default_rng(seed)
    run_id = _run(store, "varnish-storage", "memory")
    names = ["memory", "san", "iscsi"]
    store.add_variants(run_id, [(n, {"storage": n}) for n in names], "memory")
    fill = Filler(store, run_id)
    fill.workload("web.varnish", "web.varnish", WEB_METRICS)
    for i, name in enumerate(names):
        for rep in range(reps):
            ts = np.sort(rng.uniform(0, 600, requests))
            lat = rng.lognormal(np.log(0.05 * (1 + i)), 0.5, requests)
            ms = [Measurement("latency", float(v), t=float(t), labels={"url": "/p"})
                  for t, v in zip(ts, lat, strict=True)]
            ms += [Measurement("hit_ratio", float(100 * (1 - np.exp(-(t + 30 * rep) / 120))),
                               t=float(t), labels={"series": "interval"})
                   for t in range(30, 601, 30)]
            ms.append(Measurement("response_time_mean", float(np.mean(lat))))
            fill.trial(name, "web.varnish", rep, ms)
    store.set_run_status(run_id, "complete", "")
    return run_id
