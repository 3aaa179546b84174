"""Study 003 (bonnie++ in a 1-vCPU and a 2-vCPU VM): the study's table per variant — every
bonnie++ test as rate / %CPU / latency, per loop and mean —, each variant's change against its
reference with CI and p, '+++++' where bonnie++ could not measure, page-cache warnings and the
lab's notes (VM size, filesystem, cache policy)."""

from __future__ import annotations

import math
from typing import Any

from virtbench.analysis import Analysis, MetricRow
from virtbench.model import Metric
from virtbench.parsers.bonnie import BONNIE_METRICS, BONNIE_TESTS, BonnieTest
from virtbench.report.formatting import fmt_num, fmt_p
from virtbench.report.sections import Section, SectionPlugin
from virtbench.report.sections._common import (
    change_from_row,
    fmt_change,
    metric_of,
    workload_ids,
)

__all__ = ["SECTIONS", "storage_sections"]

WORKLOAD = "storage.bonnie"
TOO_FAST = "+++++"
QUANTITY = {"cpu_pct": "%CPU", "latency_us": "latency"}


def _num(value: float | None) -> str:
    """bonnie++ style: whole numbers from 1000 up (245760, not 2.458e+05), else 4 digits."""
    if value is None or math.isnan(value):
        return "–"
    return f"{value:.0f}" if abs(value) >= 1000 else fmt_num(value)


def _test_metrics(analysis: Analysis, wid: str) -> list[tuple[BonnieTest, list[Metric]]]:
    """Each bonnie++ test in the study's order with its stored metrics (rate, %CPU, latency)."""
    out = []
    for test in BONNIE_TESTS:
        names = [m.name for m in BONNIE_METRICS if m.name.startswith(test.key + "_")]
        metrics = [m for name in names if (m := metric_of(analysis, wid, name)) is not None]
        if metrics:
            out.append((test, metrics))
    return out


def _label(test: BonnieTest, metric: Metric) -> str:
    suffix = metric.name[len(test.key) + 1:]
    return f"{test.title} · {QUANTITY.get(suffix, 'rate')} ({metric.unit})"


def _unmeasured(row: MetricRow | None) -> str:
    """What to print for a loop without a value: bonnie++'s own '+++++' when it was too fast."""
    if row is None:
        return "–"
    if "too_fast" in row.unmeasured:
        return TOO_FAST
    if "skipped" in row.unmeasured:
        return "skipped"
    return "–"


def _notes(analysis: Analysis, variant: str, wid: str, name: str) -> str:
    return "; ".join(analysis.notes.get((variant, wid), {}).get(name, []))


def _variant_section(analysis: Analysis, wid: str, variant: str,
                     tests: list[tuple[BonnieTest, list[Metric]]]) -> Section:
    ci = f"[{analysis.confidence:.0%} CI]"
    reps = sorted({rep for _t, metrics in tests for m in metrics
                   for rep, _v in analysis.per_repetition.get((wid, m.name), {})
                   .get(variant, [])})
    rows = []
    too_fast = 0
    for test, metrics in tests:
        for metric in metrics:
            row = analysis.row(variant, wid, metric.name)
            by_rep = dict(analysis.per_repetition.get((wid, metric.name), {}).get(variant, []))
            cells = [_num(by_rep[r]) if r in by_rep else _unmeasured(row) for r in reps]
            too_fast += sum(1 for c in cells if c == TOO_FAST)
            if row is None or row.summary is None:
                mean = _unmeasured(row)
            else:
                s = row.summary
                mean = _num(s.mean)
                if s.n >= 2 and not math.isnan(s.ci_low):
                    mean += f" [{_num(s.ci_low)}, {_num(s.ci_high)}]"
                missing = sum(row.unmeasured.values())
                if missing:
                    what = TOO_FAST if "too_fast" in row.unmeasured else "not measured"
                    mean += f" ({s.n} measured, {missing} {what})"
            rows.append([_label(test, metric), *cells, mean])
    warnings = []
    dominated = analysis.notes.get((variant, wid), {}).get("page_cache_dominated", [])
    if "yes" in dominated:
        warnings.append(
            f"{variant}: {_notes(analysis, variant, wid, 'page_cache')} — file "
            f"{_notes(analysis, variant, wid, 'file_size_mib')} MiB, RAM "
            f"{_notes(analysis, variant, wid, 'ram_mib')} MiB, size_to_ram_ratio "
            f"{_notes(analysis, variant, wid, 'size_to_ram_ratio')}: the rates may measure "
            "memory rather than the disk")
    hint = _notes(analysis, variant, wid, "too_fast")
    if too_fast or hint:
        warnings.append(f"{variant}: {TOO_FAST} = bonnie++ finished the test too fast to "
                        f"measure (no value, never 0). {hint}".strip())
    paragraphs = [
        f"bonnie++ results of variant {variant} laid out as the study printed them: each test "
        "in bonnie++'s order with its rate, its CPU use (%CPU: user+system time in % of one "
        "CPU, above 100 with several CPUs) and its latency (the longest single operation, in "
        f"µs); one column per loop (repetition k = loop k+1) and the mean over loops with its "
        f"{analysis.confidence:.0%} CI (inside the metric's domain). Rates of the sequential "
        "tests are in KiB/s "
        f"(K = 1024 bytes), seeks and file operations per second. '{TOO_FAST}': bonnie++ "
        "could not time the test because it finished too fast; it is left out of the mean, "
        "never counted as 0."]
    return Section(
        key=f"storage-bonnie-{wid}-{variant}",
        title=f"{wid}: bonnie++ per loop — {variant}",
        paragraphs=paragraphs,
        columns=["test · quantity (unit)", *(f"loop {r + 1}" for r in reps), f"mean {ci}"],
        rows=rows, warnings=warnings)


def _change_sections(analysis: Analysis, wid: str,
                     tests: list[tuple[BonnieTest, list[Metric]]]) -> list[Section]:
    ci = f"[{analysis.confidence:.0%} CI]"
    level = f"{analysis.confidence:.0%}"
    pairs: dict[tuple[str, str], list[list[str]]] = {}
    for info in analysis.variants:
        for test, metrics in tests:
            for metric in metrics:
                row = analysis.row(info.name, wid, metric.name)
                if row is None or row.reference is None:
                    continue
                ref = analysis.row(row.reference, wid, metric.name)
                pairs.setdefault((row.reference, info.name), []).append([
                    _label(test, metric),
                    _num(ref.summary.mean) if ref and ref.summary else _unmeasured(ref),
                    _num(row.summary.mean) if row.summary else _unmeasured(row),
                    fmt_change(change_from_row(row)),
                    fmt_num(row.speedup.ratio, 3) if row.speedup else "–",
                    fmt_p(row.p_holm) + ("*" if row.significant else "")])
    return [Section(
        key=f"storage-bonnie-change-{wid}-{variant}",
        title=f"{wid}: {variant} vs {reference}",
        paragraphs=[
            f"Every bonnie++ quantity of {variant} against {reference}: the means, the percent "
            f"change of the mean 100 × ({variant} / {reference} − 1) with its {level} CI "
            "(bootstrap BCa of the ratio of means), the speedup (above 1 = better: higher rate, "
            "lower %CPU or latency) and the p-value of Welch's t or Mann–Whitney U, "
            "Holm-corrected per metric (* below 0.05). With 3 loops per variant, the CIs are "
            "wide; '–' means fewer than 2 measured loops on a side."],
        columns=["test · quantity (unit)", f"{reference} mean", f"{variant} mean",
                 f"change % {ci}", "speedup", "p (Holm)"],
        rows=rows) for (reference, variant), rows in pairs.items()]


def _lab_section(analysis: Analysis, wid: str) -> Section | None:
    rows = []
    for info in analysis.variants:
        settings: dict[str, Any] = next((r["settings"] for r in analysis.realisations
                         if r["variant"] == info.name and r["workload_id"] == wid), {})
        note = analysis.notes.get((info.name, wid), {})
        if not settings and not note:
            continue
        rows.append([info.name,
                     *(str(settings.get(f"lab.{k}", "–")) for k in
                       ("vm_size", "filesystem", "cache_policy")),
                     *("; ".join(note.get(k, [])) or "–" for k in
                       ("file_size_mib", "ram_mib", "size_to_ram_ratio", "caches"))])
    if not rows:
        return None
    return Section(
        key=f"storage-bonnie-lab-{wid}",
        title=f"{wid}: lab notes per variant",
        paragraphs=[
            "What each variant ran on, as the lab and the workload recorded it: vm_size (the "
            "VM's vCPUs and memory, or the cgroup limits standing in for them), the filesystem "
            "(mount source and options), the cache policy; bonnie++'s file size and the RAM it "
            "assumed (MiB), their ratio (bonnie++ wants at least 2 so the page cache cannot "
            "hold the file) and whether caches were dropped before each trial."],
        columns=["variant", "vm_size", "filesystem", "cache policy", "file (MiB)",
                 "RAM (MiB)", "file / RAM", "caches"],
        rows=rows)


def storage_sections(analysis: Analysis) -> list[Section]:
    sections: list[Section] = []
    for wid in workload_ids(analysis, WORKLOAD):
        tests = _test_metrics(analysis, wid)
        if not tests:
            continue
        variants = [v.name for v in analysis.variants
                    if any(r.variant == v.name and r.workload_id == wid for r in analysis.rows)]
        sections += [_variant_section(analysis, wid, v, tests) for v in variants]
        sections += _change_sections(analysis, wid, tests)
        lab = _lab_section(analysis, wid)
        if lab is not None:
            sections.append(lab)
    return sections


SECTIONS = (SectionPlugin("storage", storage_sections),)
