"""Synthetic result stores written through the Store API, the way the runner writes them, for
testing the study sections (the studies' real workload and metric names)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from io import StringIO
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

from virtbench.analysis import Analysis, analyse
from virtbench.model import Measurement, Metric
from virtbench.net_qos.grading import mos_from_r, tiphon_index
from virtbench.parsers.bonnie import BONNIE_METRICS
from virtbench.plugins import build_sections
from virtbench.report.sections import Section
from virtbench.report.text import render_json, render_markdown, render_terminal
from virtbench.store import Store, TrialRecord
from virtbench.workloads.net.qos_transfer import QosTransfer
from virtbench.workloads.net.router import RouterThroughput
from virtbench.workloads.storage.bonnie import BonnieWorkload
from virtbench.workloads.web.load import WebLoad

_ORDER = itertools.count()


class SyntheticRun:
    """One run in ``store``: its variants, one workload, trials recorded one at a time."""

    def __init__(self, store: Store, *, variants: Sequence[tuple[str, dict[str, Any]]],
                 baseline: str, workload_id: str, workload: str, metrics: Sequence[Metric],
                 spec: str = "name: x\n", host: str = "h", experiment: str = "x") -> None:
        self.store = store
        self.workload_id = workload_id
        self.run_id = store.create_run(experiment=experiment, description="", spec_yaml=spec,
                                       spec_path="", seed=1, host=host, target="local",
                                       baseline=baseline, version="t")
        store.add_variants(self.run_id, list(variants), baseline)
        store.add_workload(self.run_id, workload_id, workload, 0, {}, metrics)
        self.units = {m.name: m.unit for m in metrics}

    def trial(self, variant: str, repetition: int, measurements: Sequence[Measurement],
              notes: Mapping[str, str] | None = None) -> None:
        self.store.record_trial(
            self.run_id,
            TrialRecord(variant, self.workload_id, repetition, next(_ORDER), False, "ok", "",
                        0.0, 1.0, "local", None, dict(notes or {})),
            measurements, self.units)

    def realisation(self, variant: str, settings: Mapping[str, Any]) -> None:
        self.store.add_realisation(self.run_id, variant, self.workload_id, "test", settings, [])


def new_store(tmp_path: Path, name: str = "s.db") -> Store:
    return Store(str(tmp_path / name))


def by_key(sections: Sequence[Section], prefix: str) -> list[Section]:
    return [s for s in sections if s.key.startswith(prefix)]


def row_where(section: Section, **cells: str) -> list[str]:
    """The one row whose named columns hold exactly these cells."""
    index = {name: section.columns.index(col) for name, col in
             ((n, _column(section, n)) for n in cells)}
    found = [r for r in section.rows if all(r[index[n]] == v for n, v in cells.items())]
    assert len(found) == 1, (cells, section.rows)
    return found[0]


def _column(section: Section, name: str) -> str:
    matches = [c for c in section.columns
               if c == name or c.startswith((name + " ", name + ":"))]
    assert matches, (name, section.columns)
    return matches[0]


def cell(section: Section, row: list[str], column: str) -> str:
    return row[section.columns.index(_column(section, column))]


_MARKUP = re.compile(r"\[[A-Za-z#/@]")


def check_renderable(analysis: Analysis, sections: Sequence[Section]) -> None:
    """Every text renders in all formats, and no text looks like rich markup (which the
    terminal renderer would swallow); every row has one cell per column."""
    for section in sections:
        texts = [section.title, *section.paragraphs, *section.columns, *section.warnings,
                 *(c for r in section.rows for c in r)]
        for text in texts:
            assert not _MARKUP.search(text), text
        for row in section.rows:
            assert len(row) == len(section.columns), (section.key, row)
    console = Console(file=StringIO(), width=160)
    render_terminal(analysis, console, sections=build_sections(analysis))
    render_markdown(analysis, sections=build_sections(analysis))
    render_json(analysis, sections=build_sections(analysis))


def analysed(store: Store, refs: Sequence[str] = ("latest",), **kwargs: Any) -> Analysis:
    return analyse(store, list(refs), **kwargs)


# ---- the four studies ------------------------------------------------------------------------

Values = dict[tuple[str, str], list[float]]
"""(variant, metric) -> the values recorded, in repetition order."""

QOS_LEVELS = {
    # metric: {switch: {rate: level}}; ovs loss at 0 Mbit/s is exactly 0 (an undefined
    # relative improvement that the aggregate must leave out).
    "study_delay_ms": {"ovs": {0: 180.0, 100: 200.0}, "ovs-dpdk": {0: 100.0, 100: 120.0}},
    "study_jitter_ms": {"ovs": {0: 100.0, 100: 110.0}, "ovs-dpdk": {0: 50.0, 100: 60.0}},
    "study_loss_pct": {"ovs": {0: 0.0, 100: 20.0}, "ovs-dpdk": {0: 1.0, 100: 2.0}},
    "study_throughput_mbps": {"ovs": {0: 400.0, 100: 380.0},
                              "ovs-dpdk": {0: 500.0, 100: 490.0}},
    "one_way_delay_down_ms": {"ovs": {0: 300.0, 100: 320.0}, "ovs-dpdk": {0: 100.0, 100: 110.0}},
    "emodel_r": {"ovs": {0: 70.0, 100: 68.0}, "ovs-dpdk": {0: 90.0, 100: 88.0}},
    "throughput_mbps": {"ovs": {0: 900.0, 100: 850.0}, "ovs-dpdk": {0: 1000.0, 100: 990.0}},
}
QOS_REPS = 5


def qos_variant(switch: str, rate: int) -> str:
    return f"switch={switch},background_mbps={rate}"


def build_qos(store: Store, compare_by: bool = True) -> Values:
    """Study 001's grid: ovs and ovs-dpdk × 0 and 100 Mbit/s of background, 5 repetitions."""
    grid: list[tuple[str, dict[str, Any]]] = [
        (qos_variant(s, b), {"switch": s, "background_mbps": b})
        for s in ("ovs", "ovs-dpdk") for b in (0, 100)]
    run = SyntheticRun(store, variants=grid, baseline=qos_variant("ovs", 0),
                       workload_id="net.qos-transfer", workload="net.qos-transfer",
                       metrics=QosTransfer.metrics,
                       spec="name: x\ncompare_by: switch\n" if compare_by else "name: x\n")
    rng = np.random.default_rng(7)
    values: Values = {}
    for rep in range(QOS_REPS):
        for name, knobs in grid:
            sample = {m: levels[knobs["switch"]][knobs["background_mbps"]]
                      * (1 + rng.normal(0, 0.02)) for m, levels in QOS_LEVELS.items()}
            sample["emodel_mos"] = mos_from_r(sample["emodel_r"])
            sample["tiphon_index"] = tiphon_index(sample["study_delay_ms"],
                                                  sample["study_jitter_ms"],
                                                  sample["study_loss_pct"])
            for metric, value in sample.items():
                values.setdefault((name, metric), []).append(value)
            run.trial(name, rep, [Measurement(m, v) for m, v in sample.items()])
    return values


def build_vnf(store: Store, host: str = "h", slope: float = -1.5, reps: int = 4) -> Values:
    """Study 002: throughput and CPU busy at 0..3 stressed neighbours."""
    grid = [(f"neighbours={n}", {"neighbours": n}) for n in range(4)]
    run = SyntheticRun(store, variants=grid, baseline="neighbours=0",
                       workload_id="net.router-throughput", workload="net.router-throughput",
                       metrics=RouterThroughput.metrics, host=host, experiment="vnf")
    rng = np.random.default_rng(abs(hash(host)) % 1000)
    values: Values = {}
    for rep in range(reps):
        for name, knobs in grid:
            n = knobs["neighbours"]
            sample = {"throughput_gbps": 12.0 + slope * n + rng.normal(0, 0.2),
                      "cpu_busy_pct": 30.0 + 15.0 * n + rng.normal(0, 1.0),
                      "tcp_retransmits": float(rng.integers(1, 50))}
            for metric, value in sample.items():
                values.setdefault((name, metric), []).append(value)
            run.trial(name, rep, [Measurement(m, v) for m, v in sample.items()])
    return values


STORAGE_TOO_FAST = "seq_create"
PAGE_CACHE_NOTE = "WARNING: results may be dominated by the page cache: no memory limit"


def build_storage(store: Store) -> Values:
    """Study 003: bonnie++ in 1vcpu and 2vcpu, 3 loops. Sequential Create is too fast in
    every loop of 1vcpu and in loop 2 of 2vcpu; 1vcpu has no memory limit (page cache)."""
    variants = [("1vcpu", {"vm_size": {"vcpus": 1, "memory_mib": 128}}),
                ("2vcpu", {"vm_size": {"vcpus": 2, "memory_mib": 128}})]
    run = SyntheticRun(store, variants=variants, baseline="1vcpu",
                       workload_id="storage.bonnie", workload="storage.bonnie",
                       metrics=BonnieWorkload.metrics, experiment="storage")
    assert BonnieWorkload.metrics == BONNIE_METRICS
    rng = np.random.default_rng(3)
    values: Values = {}
    for rep in range(3):
        for name, _knobs in variants:
            out = []
            for metric in BONNIE_METRICS:
                too_fast = (metric.name.startswith(STORAGE_TOO_FAST + "_")
                            and not metric.name.endswith("latency_us")
                            and (name == "1vcpu" or rep == 1))
                if too_fast:
                    out.append(Measurement(metric.name, None, status="too_fast"))
                    continue
                scale = {"%": 20.0, "us": 5000.0}.get(metric.unit, 150000.0)
                factor = 1.3 if name == "2vcpu" and metric.unit == "KiB/s" else 1.0
                value = float(round(scale * factor * (1 + rng.normal(0, 0.05)), 1))
                values.setdefault((name, metric.name), []).append(value)
                out.append(Measurement(metric.name, value))
            notes = {"file_size_mib": "256", "ram_mib": "128 (vm_size.memory_mib)",
                     "size_to_ram_ratio": "2.00", "page_cache_dominated": "no",
                     "page_cache": "file 256 MiB = 2.0 × the 128 MiB memory limit",
                     "caches": "dropped before the trial (sync; vm.drop_caches=3)"}
            if name == "1vcpu":
                notes |= {"page_cache_dominated": "yes", "page_cache": PAGE_CACHE_NOTE,
                          "ram_mib": "7800 (MemTotal of the target (no memory limit))",
                          "size_to_ram_ratio": "0.03"}
            if name == "1vcpu" or rep == 1:
                notes["too_fast"] = ("1 test(s) finished too fast to measure (+++++): "
                                     "seq_create; use a larger size_mib (sequential, seeks) "
                                     "or files (create tests)")
            run.trial(name, rep, out, notes)
        for name, _knobs in variants:
            run.realisation(name, {"lab.vm_size": f"{name} limits",
                                   "lab.filesystem": "ext4: ext4 on /dev/loop9 (rw)",
                                   "lab.cache_policy": "loop direct I/O"})
    return values


WEB_SUMMARY = ("samples", "failures", "success_rate", "response_time_mean",
               "response_time_median", "response_time_p90", "response_time_p99",
               "hit_ratio_run", "hit_ratio_client")


def build_web(store: Store, requests: int = 200) -> dict[tuple[str, int], dict[str, Any]]:
    """Study 004: memory and disk-file storage, 3 runs each on a warming cache. Run 3 of
    disk-file has one failed request that still has a response time (a fast 503)."""
    variants = [("memory", {"cache_storage": "malloc"}),
                ("disk-file", {"cache_storage": "file-disk"})]
    run = SyntheticRun(store, variants=variants, baseline="memory", workload_id="web.load",
                       workload="web.load", metrics=WebLoad.metrics, experiment="web")
    rng = np.random.default_rng(4)
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for name, _knobs in variants:
        for rep in range(3):
            base = (80.0 if rep == 0 else 20.0) * (1.5 if name == "disk-file" else 1.0)
            times = rng.lognormal(np.log(base), 0.3, requests)
            failed = name == "disk-file" and rep == 2
            ok_times = times[:-1] if failed else times
            summary = {
                "samples": float(requests), "failures": 1.0 if failed else 0.0,
                "success_rate": 100.0 * len(ok_times) / requests,
                "response_time_mean": float(np.mean(ok_times)),
                "response_time_median": float(np.quantile(ok_times, 0.5)),
                "response_time_p90": float(np.quantile(ok_times, 0.9)),
                "response_time_p99": float(np.quantile(ok_times, 0.99)),
                "hit_ratio_run": 10.0 if rep == 0 else 95.0 - rep,
                "hit_ratio_client": 11.0 if rep == 0 else 96.0 - rep,
            }
            measurements = [Measurement(m, v) for m, v in summary.items()]
            measurements += [
                Measurement("response_time", float(t), t=i / 8.0,
                            labels={"url": f"/site1/page{i % 7}.html", "cache": "hit"},
                            status="failed" if failed and i == requests - 1 else "ok")
                for i, t in enumerate(times)]
            measurements += [Measurement("hit_ratio_interval", 50.0 + k, t=5.0 * k,
                                         labels={"series": "interval"}) for k in range(4)]
            run.trial(name, rep, measurements)
            out[(name, rep)] = summary | {"times": ok_times}
    return out


def build_other(store: Store) -> None:
    """A run of another study (a CPU benchmark): no study section may appear for it."""
    from virtbench.model import Better

    metric = Metric("time_s", "s", Better.LOWER, "time", primary=True)
    run = SyntheticRun(store, variants=[("a", {}), ("b", {})], baseline="a",
                       workload_id="cpu.crc32c", workload="cpu.crc32c", metrics=[metric],
                       experiment="cpu")
    for rep in range(3):
        for name in ("a", "b"):
            run.trial(name, rep, [Measurement("time_s", 1.0 + rep / 10)])


def cox_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Cox's 95 % interval for a log-normal mean, written out independently of stats/ (the
    interval a positive metric gets; docs/statistics.md)."""
    from scipy import stats as sps

    y = np.log(np.asarray(values, dtype=float))
    s2 = y.var(ddof=1)
    half = sps.t.ppf(0.5 + confidence / 2, y.size - 1) * np.sqrt(s2 / y.size
                                                                 + s2 * s2 / (2 * (y.size - 1)))
    centre = y.mean() + s2 / 2
    return float(np.exp(centre - half)), float(np.exp(centre + half))
