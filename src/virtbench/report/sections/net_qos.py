"""Study 001 (virtual switch QoS under background traffic): grading of every switch ×
background-rate cell, percent changes against the baseline switch at the same rate, and the
defined aggregate "QoS improvement" with its bootstrap CI."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from virtbench.analysis import Analysis, VariantInfo
from virtbench.model import Better, Metric
from virtbench.net_qos import aggregate as qos_aggregate
from virtbench.net_qos.aggregate import Cell, qos_improvement
from virtbench.net_qos.grading import (
    TIPHON_CATEGORIES,
    emodel,
    g114_band,
    mos_from_r,
    tiphon_delay,
    tiphon_index,
    tiphon_jitter,
    tiphon_loss,
)
from virtbench.report.formatting import fmt_num, fmt_p, fmt_value
from virtbench.report.sections import Section, SectionPlugin
from virtbench.report.sections._common import (
    change_from_row,
    fmt_change,
    fmt_mean_ci,
    metric_of,
    one_line,
    ordered_unique,
    run_blocks,
    short_name,
    workload_ids,
)
from virtbench.stats import RatioCI, choose_test, percent_change_ci

__all__ = ["SECTIONS", "qos_change_sections", "qos_grading_sections",
           "qos_improvement_sections"]

WORKLOAD = "net.qos-transfer"
SWITCH = "switch"
RATE = "background_mbps"

DELAY, JITTER, LOSS, STUDY_TPUT = ("study_delay_ms", "study_jitter_ms", "study_loss_pct",
                                   "study_throughput_mbps")
ONE_WAY = "one_way_delay_down_ms"
# The metrics whose change against the baseline switch the study discusses, in this order:
# its four capture metrics, then the proper measurements beside them.
CHANGE_METRICS = (STUDY_TPUT, DELAY, JITTER, LOSS, "throughput_mbps", ONE_WAY,
                  "rfc3550_jitter_down_ms", "rtt_mean_ms", "tcp_retransmit_pct", "emodel_r",
                  "emodel_mos")
# What the grading table shows, beside the throughput's n.
GRADING_METRICS = (DELAY, JITTER, LOSS, "tiphon_index", ONE_WAY, "emodel_r", "emodel_mos")
# The study's QoS metrics: the aggregate "DPDK improves QoS by N %" averages over these.
AGGREGATE_METRICS = (DELAY, JITTER, STUDY_TPUT, LOSS)
# The aggregate's bootstrap, as qos_improvement's (2000 resamples, seed 1) but vectorised per
# cell: qos_improvement draws each resample in a Python loop (2 × cells × resamples rng.choice
# calls, 50–250 µs each on this machine: 6–16 s for study 001's 16-cell grid and two switches).
AGGREGATE_RESAMPLES = 2000
AGGREGATE_SEED = 1


@dataclass(frozen=True)
class _Cell:
    """One variant of the study grid: its switch and background rate (Mbit/s)."""

    info: VariantInfo
    switch: str
    rate: float | None
    others: tuple[tuple[str, str], ...]
    """the other knobs, to pair a cell with the baseline switch's cell of equal settings"""


@dataclass(frozen=True)
class _Block:
    label: str
    cells: list[_Cell]
    base_switch: str

    def reference(self, cell: _Cell) -> _Cell | None:
        if cell.switch == self.base_switch:
            return None
        for other in self.cells:
            if (other.switch, other.rate, other.others) == (self.base_switch, cell.rate,
                                                            cell.others):
                return other
        return None

    def title(self, text: str) -> str:
        return f"{text} — {self.label}" if self.label else text

    def key(self, text: str, wid: str) -> str:
        return "-".join(p for p in (text, wid, self.label) if p)


def _cell(info: VariantInfo, label: str) -> _Cell:
    switch = str(info.knobs.get(SWITCH, short_name(info.name, label)))
    raw = info.knobs.get(RATE)
    rate = float(raw) if isinstance(raw, int | float) else None
    others = tuple(sorted((k, repr(v)) for k, v in info.knobs.items() if k not in (SWITCH,)))
    return _Cell(info, switch, rate, others)


def _blocks(analysis: Analysis) -> list[_Block]:
    base = analysis.variant(analysis.baseline)
    base_switch = str(base.knobs.get(SWITCH, analysis.baseline)) if base else analysis.baseline
    blocks = []
    for label, variants in run_blocks(analysis):
        cells = [_cell(v, label) for v in variants]
        switches = ordered_unique(c.switch for c in cells)
        cells.sort(key=lambda c: (switches.index(c.switch), math.inf if c.rate is None
                                  else c.rate, c.others))
        blocks.append(_Block(label, cells, base_switch))
    return blocks


def _rate(cell: _Cell) -> str:
    return "–" if cell.rate is None else fmt_num(cell.rate)


def _mean(analysis: Analysis, cell: _Cell, wid: str, metric: str) -> float | None:
    row = analysis.row(cell.info.name, wid, metric)
    return row.summary.mean if row is not None and row.summary is not None else None


def _graded(value: float | None, unit: str, grade: str) -> str:
    return "–" if value is None else f"{fmt_value(value, unit)} · {grade}"


# ---- grading --------------------------------------------------------------------------------

def _grading_paragraphs(analysis: Analysis, wid: str) -> list[str]:
    ci = f"{analysis.confidence:.0%}"
    out = [
        "Each switch × background rate cell graded on its means over the repetitions: the "
        "TIPHON category (ETSI TR 101 329; the studies call the table ITU-T G.1010) of the "
        "studies' delay, jitter and loss; the ITU-T G.114 band of the irtt one-way delay "
        f"server → client; the E-model R and MOS as the mean of the per-trial values with its "
        f"{ci} CI (inside the metric's domain). The TIPHON index column is the mean of the "
        "per-trial indices.",
        f"TIPHON delay: {one_line(tiphon_delay.__doc__)} TIPHON jitter: "
        f"{one_line(tiphon_jitter.__doc__)} TIPHON loss: {one_line(tiphon_loss.__doc__)} "
        f"Index: {one_line(tiphon_index.__doc__)}",
        "ITU-T G.114 bands of one-way delay: "
        + "; ".join(g114_band(x) for x in (0.0, 151.0, 401.0)) + ".",
        f"E-model: {one_line(emodel.__doc__)} MOS: {one_line(mos_from_r.__doc__)}",
    ]
    for name in (DELAY, JITTER, LOSS, ONE_WAY, "tiphon_index", "emodel_r", "emodel_mos"):
        metric = metric_of(analysis, wid, name)
        if metric is not None:
            out.append(f"{name} ({metric.unit}): {metric.description}")
    return out


def qos_grading_sections(analysis: Analysis) -> list[Section]:
    sections = []
    ci = f"[{analysis.confidence:.0%} CI]"
    for wid in workload_ids(analysis, WORKLOAD):
        for block in _blocks(analysis):
            rows = []
            for cell in block.cells:
                delay = _mean(analysis, cell, wid, DELAY)
                jitter = _mean(analysis, cell, wid, JITTER)
                loss = _mean(analysis, cell, wid, LOSS)
                one_way = _mean(analysis, cell, wid, ONE_WAY)
                count = analysis.row(cell.info.name, wid, "throughput_mbps")
                index = analysis.row(cell.info.name, wid, "tiphon_index")
                r = analysis.row(cell.info.name, wid, "emodel_r")
                mos = analysis.row(cell.info.name, wid, "emodel_mos")
                rows.append([
                    cell.switch, _rate(cell),
                    str(count.summary.n) if count and count.summary else "–",
                    _graded(delay, "ms", TIPHON_CATEGORIES[tiphon_delay(delay)]
                            if delay is not None else ""),
                    _graded(jitter, "ms", TIPHON_CATEGORIES[tiphon_jitter(jitter)]
                            if jitter is not None else ""),
                    _graded(loss, "%", TIPHON_CATEGORIES[tiphon_loss(loss)]
                            if loss is not None else ""),
                    fmt_mean_ci(index.summary if index else None, ""),
                    _graded(one_way, "ms", g114_band(one_way).split(":")[0]
                            if one_way is not None else ""),
                    fmt_mean_ci(r.summary if r else None, ""),
                    fmt_mean_ci(mos.summary if mos else None, ""),
                ])
            sections.append(Section(
                key=block.key("net-qos-grading", wid),
                title=block.title(f"{wid}: QoS grading per switch and background rate"),
                paragraphs=_grading_paragraphs(analysis, wid),
                columns=["switch", "background (Mbit/s)", "n", "study delay (ms) · TIPHON",
                         "study jitter (ms) · TIPHON", "study loss (%) · TIPHON",
                         f"TIPHON index 1–4 {ci}", "one-way delay (ms) · G.114 band",
                         f"E-model R {ci}", f"MOS 1–4.5 {ci}"],
                rows=rows,
                metrics=[(wid, name) for name in GRADING_METRICS
                         if metric_of(analysis, wid, name)]))
    return sections


# ---- change vs the baseline switch ------------------------------------------------------------

def _change(analysis: Analysis, wid: str, metric: str, cell: _Cell, ref: _Cell,
            use_rows: bool) -> tuple[RatioCI | None, float | None]:
    """(percent change of the mean with CI, p) of ``cell`` against ``ref``."""
    row = analysis.row(cell.info.name, wid, metric)
    if use_rows and row is not None and row.reference == ref.info.name:
        return change_from_row(row), row.p_holm
    base = analysis.values.get((ref.info.name, wid, metric))
    sample = analysis.values.get((cell.info.name, wid, metric))
    if base is None or sample is None or base.size < 2 or sample.size < 2:
        return None, None
    if float(np.mean(base)) == 0.0:
        return None, None
    change = percent_change_ci(base, sample, analysis.confidence, seed=0)
    return change, choose_test(base, sample).p_value


def qos_change_sections(analysis: Analysis) -> list[Section]:
    sections = []
    use_rows = analysis.compare_knob == SWITCH
    ci = f"[{analysis.confidence:.0%} CI]"
    level = f"{analysis.confidence:.0%}"
    for wid in workload_ids(analysis, WORKLOAD):
        metrics = [m for name in CHANGE_METRICS if (m := metric_of(analysis, wid, name))]
        for block in _blocks(analysis):
            pairs = [(c, ref) for c in block.cells if (ref := block.reference(c)) is not None]
            if not pairs:
                continue
            rows = []
            for metric in metrics:
                for cell, ref in pairs:
                    change, p = _change(analysis, wid, metric.name, cell, ref, use_rows)
                    if change is None:
                        continue
                    better = ("–" if metric.better is None else "same" if change.ratio == 0
                              else "better" if (change.ratio < 0) == (metric.better is Better.LOWER)
                              else "worse")
                    rows.append([
                        f"{metric.name} ({metric.unit})", cell.switch, _rate(cell),
                        fmt_value(_mean(analysis, ref, wid, metric.name), metric.unit),
                        fmt_value(_mean(analysis, cell, wid, metric.name), metric.unit),
                        fmt_change(change), better, fmt_p(p)])
            if not rows:
                continue
            how = ("from the report's comparison of each variant with its compare_by "
                   "counterpart (speedup CI mapped to a percent change); p is Welch's t or "
                   "Mann–Whitney U, Holm-corrected per metric" if use_rows else
                   "computed here from the per-trial values (percent_change_ci: bootstrap BCa, "
                   "Fieller above 20,000 samples); p is Welch's t or Mann–Whitney U, not "
                   "corrected for multiple comparisons. Add `compare_by: switch` to the "
                   "experiment to get Holm-corrected p-values in the main tables too")
            sections.append(Section(
                key=block.key("net-qos-change", wid),
                title=block.title(f"{wid}: change vs {block.base_switch} at the same "
                                  "background rate"),
                paragraphs=[
                    f"Percent change of each metric's mean against switch {block.base_switch} "
                    "at the same background rate: 100 × (mean / baseline mean − 1), in % of "
                    f"the baseline mean, with its {level} CI; 'better'/'worse' follows the "
                    "metric's direction (lower is better for delays, jitter and loss). "
                    f"Changes are {how}.",
                    *(f"{m.name} ({m.unit}): {m.description}" for m in metrics)],
                columns=["metric (unit)", "switch", "background (Mbit/s)",
                         f"{block.base_switch} mean", "mean", f"change % {ci}", "direction",
                         "p"],
                rows=rows, metrics=[(wid, m.name) for m in metrics]))
    return sections


# ---- aggregate QoS improvement ---------------------------------------------------------------

def aggregate_ci(base: Mapping[Cell, npt.NDArray[np.float64]],
                 variant: Mapping[Cell, npt.NDArray[np.float64]], cells: Sequence[Cell],
                 higher_is_better: Mapping[str, bool], confidence: float,
                 resamples: int = AGGREGATE_RESAMPLES, seed: int = AGGREGATE_SEED
                 ) -> tuple[float, float]:
    """Percentile bootstrap CI of the aggregate QoS improvement (%) over ``cells``, resampling
    repetitions within every (variant, metric, rate) cell, with equal cell weights — the CI
    of virtbench.net_qos.aggregate.qos_improvement, drawn with whole index matrices."""
    rng = np.random.default_rng(seed)
    total = np.zeros(resamples)
    valid = np.ones(resamples, dtype=bool)
    for cell in cells:
        b, v = base[cell], variant[cell]
        b_means = b[rng.integers(0, b.size, (resamples, b.size))].mean(axis=1)
        v_means = v[rng.integers(0, v.size, (resamples, v.size))].mean(axis=1)
        valid &= b_means != 0
        safe = np.where(b_means == 0, 1.0, b_means)
        diff = v_means - b_means if higher_is_better[cell[0]] else b_means - v_means
        total += diff / safe
    boots = np.where(valid, total / len(cells) * 100.0, np.nan)
    if not valid.any():
        return math.nan, math.nan
    alpha = (1 - confidence) / 2
    low, high = np.nanquantile(boots, [alpha, 1 - alpha])
    return float(low), float(high)


def _definition() -> str:
    doc = one_line(qos_aggregate.__doc__)
    return doc[doc.find("Definition"):] if "Definition" in doc else doc


def qos_improvement_sections(analysis: Analysis) -> list[Section]:
    sections = []
    for wid in workload_ids(analysis, WORKLOAD):
        metrics = [m for name in AGGREGATE_METRICS if (m := metric_of(analysis, wid, name))]
        if not metrics:
            continue
        for block in _blocks(analysis):
            section = _improvement_section(analysis, wid, metrics, block)
            if section is not None:
                sections.append(section)
    return sections


_Values = dict[Cell, npt.NDArray[np.float64]]


def _switch_cells(analysis: Analysis, block: _Block, switch: str, wid: str,
                  metrics: list[Metric]) -> tuple[_Values, _Values]:
    """The baseline switch's and ``switch``'s values of each measured (metric, rate) cell."""
    base_cells: _Values = {}
    var_cells: _Values = {}
    for cell in block.cells:
        ref = block.reference(cell)
        if cell.switch != switch or ref is None:
            continue
        rate = cell.rate if cell.rate is not None else math.nan
        for metric in metrics:
            b = analysis.values.get((ref.info.name, wid, metric.name))
            v = analysis.values.get((cell.info.name, wid, metric.name))
            if b is not None and v is not None and b.size and v.size:
                base_cells[(metric.name, rate)] = b
                var_cells[(metric.name, rate)] = v
    return base_cells, var_cells


def _improvement_section(analysis: Analysis, wid: str, metrics: list[Metric],
                         block: _Block) -> Section | None:
    """The aggregate QoS improvement of each switch of the block over its baseline switch,
    with each cell's; None when no switch has one nor a warning."""
    direction = {m.name: m.better is Better.HIGHER for m in metrics}
    switches = ordered_unique(c.switch for c in block.cells if c.switch != block.base_switch)
    summary_rows: list[list[str]] = []
    cell_rows: list[list[str]] = []
    warnings: list[str] = []
    for switch in switches:
        base_cells, var_cells = _switch_cells(analysis, block, switch, wid, metrics)
        try:
            # The point estimate, per-cell values and skipped cells come from the
            # definition itself; one resample keeps its slow CI loop out of the way.
            result = qos_improvement({k: v.tolist() for k, v in base_cells.items()},
                                     {k: v.tolist() for k, v in var_cells.items()},
                                     direction, resamples=1,
                                     confidence=analysis.confidence)
        except ValueError as exc:
            warnings.append(f"{switch}: no aggregate ({exc})")
            continue
        low, high = aggregate_ci(base_cells, var_cells, list(result.per_cell), direction,
                                 analysis.confidence)
        summary_rows.append([
            switch, "all cells", f"{len(result.per_cell)} cells averaged",
            f"{result.percent:+.3g} % [{low:+.3g}, {high:+.3g}]"])
        for (name, rate), pct in sorted(result.per_cell.items(),
                                        key=lambda kv: (kv[0][1], kv[0][0])):
            unit = next(m.unit for m in metrics if m.name == name)
            cell_rows.append([
                switch, f"{name} @ {fmt_num(rate)} Mbit/s",
                f"{fmt_value(float(np.mean(base_cells[(name, rate)])), unit)} → "
                f"{fmt_value(float(np.mean(var_cells[(name, rate)])), unit)}",
                f"{pct:+.3g} %"])
        if result.skipped:
            warnings.append(
                f"{switch}: cells left out because the baseline mean is 0 (a relative "
                "improvement is undefined): " + ", ".join(
                    f"{n} @ {fmt_num(r)} Mbit/s" for n, r in result.skipped))
    if not summary_rows and not warnings:
        return None
    return Section(
        key=block.key("net-qos-improvement", wid),
        title=block.title(f"{wid}: aggregate QoS improvement vs {block.base_switch}"),
        paragraphs=[
            "The studies' headline 'DPDK improves QoS by 22 %' has no stated "
            "definition; this is the explicit one (virtbench.net_qos.aggregate): "
            + _definition(),
            f"Metrics averaged: {', '.join(m.name for m in metrics)} "
            "(throughput higher is better, the rest lower is better). First line per "
            f"switch: the aggregate in % with its {analysis.confidence:.0%} bootstrap CI; then "
            "each cell's relative improvement in % (positive = better than the baseline "
            "switch), with the baseline and switch means of the cell."],
        columns=["switch", "cell (metric @ background)", "baseline mean → mean",
                 f"improvement % [{analysis.confidence:.0%} CI]"],
        rows=[r for s in summary_rows
              for r in [s, *(c for c in cell_rows if c[0] == s[0])]],
        warnings=warnings)


def qos_sections(analysis: Analysis) -> list[Section]:
    if not workload_ids(analysis, WORKLOAD):
        return []
    return (qos_grading_sections(analysis) + qos_change_sections(analysis)
            + qos_improvement_sections(analysis))


SECTIONS = (SectionPlugin("net-qos", qos_sections),)
