"""The HTML report over real SQLite stores: content, escaping, self-containment, degenerate data."""

from __future__ import annotations

import math
import re
from html.parser import HTMLParser

from report_fill import fill_factorial, fill_matrix, fill_series

from virtbench.analysis import Analysis, MetricRow, VariantInfo, analyse
from virtbench.model import Better, Measurement, Metric
from virtbench.plugins import build_sections
from virtbench.report.html import render_html
from virtbench.report.tables import row_record
from virtbench.stats import Summary
from virtbench.store import Store, TrialRecord

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}


class Checker(HTMLParser):
    """Parses the document; records tags, external references and structural errors."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.external: list[str] = []
        self.tags: dict[str, int] = {}
        self.ids: list[str] = []
        self.text: list[str] = []

    def _attrs(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] = self.tags.get(tag, 0) + 1
        for name, value in attrs:
            if name in ("src", "href", "xlink:href", "action", "data") and value and re.match(
                    r"\s*(https?:)?//", value):
                self.external.append(value)
            if name == "id" and value and tag not in ("g", "path", "defs", "clippath",
                                                     "use", "rect", "text", "svg"):
                self.ids.append(value)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._attrs(tag, attrs)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._attrs(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")
            if tag in self.stack:
                while self.stack and self.stack.pop() != tag:
                    pass
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(html: str) -> Checker:
    checker = Checker()
    checker.feed(html)
    checker.close()
    assert checker.errors == [], checker.errors[:5]
    assert checker.stack == [], checker.stack
    assert checker.external == [], checker.external[:5]
    assert len(checker.ids) == len(set(checker.ids)), "duplicate section ids"
    return checker


def text_of(html: str) -> str:
    return " ".join(parse(html).text)


def test_factorial_report_has_tables_charts_effects_and_definitions(store: Store) -> None:
    run_id = fill_factorial(store)
    analysis = analyse(store, [run_id])
    html = render_html(analysis, sections=build_sections(analysis))
    doc = parse(html)
    text = " ".join(doc.text)

    assert html.startswith("<!DOCTYPE html>")
    assert "https://" not in html and "<metadata>" not in html
    assert "<title>cpu-features · virtbench report</title>" in html
    # header: experiment, status, stop reason, baseline, run id
    assert run_id in text and "complete" in text
    assert "fixed repetitions done (6 per variant)" in text
    # the description is escaped, not interpreted
    assert "KVM CPU-feature tuning &lt;study 000&gt;" in html
    # one results table per workload · metric, each with 16 variant rows
    assert doc.tags["table"] >= 5
    for wid, metric in [("cpu.crc32c", "time"), ("cpu.crc32c", "throughput"),
                        ("media.x265", "encode_time"), ("media.x265", "fps"),
                        ("disk.bonnie", "seq_create")]:
        assert f'id="m-{wid.replace(".", "-")}-{metric.replace("_", "_")}"' in html
    # values come from the lead's records + formatting: the baseline CRC32C mean in ms
    base = next(r for r in analysis.rows if r.variant == "default" and r.metric.name == "time"
                and r.workload_id == "cpu.crc32c")
    assert base.summary is not None
    assert f"{base.summary.mean / 1e-3:.4g} ms" in text
    sse42 = analysis.row("sse4.2", "cpu.crc32c", "time")
    assert sse42 is not None and sse42.speedup is not None
    assert f"{sse42.speedup.ratio:.3g}×" in text and "▲ better" in text
    assert row_record(sse42)["test"] in text
    # best configuration and main effects (sse4.2 dominates CRC32C; aes does nothing)
    assert "Best configuration:" in text
    assert "main effect" in text and "helps" in text and "no clear effect" in text
    # unmeasured bonnie++-style samples are counted
    assert "too_fast" in text
    # charts: mean, speedup and main-effect SVGs per metric
    assert doc.tags.get("svg", 0) >= 15
    assert "mean with 95% CI" in html and "speedup with 95% CI" in html
    assert "main effect of each cpu_features flag" in html
    # realisations, limitation, failures, facts (flags collapsed, change shown)
    assert "x265 cannot take sse4.2 without ssse3: asm=ssse3 used" in text
    assert "CRC32C_SW_MODE=force" in text
    assert "RuntimeError: &lt;boom&gt; &amp; crash" in html
    assert "AMD Ryzen 7 4800H" in text and "cpu.flags" in text
    assert re.search(r"<details><summary>15 items</summary>", html)
    assert "+ x2apic" in text and "− sha_ni" in text
    # definitions: every metric's description and the statistics
    for row in analysis.rows:
        assert row.metric.description in text
    for term in ("Student t", "BCa bootstrap", "Welch", "Mann–Whitney", "Holm", "MAD",
                 "Main effect of a flag"):
        assert term in text


def test_matrix_report_draws_metric_against_numeric_knob(store: Store) -> None:
    analysis = analyse(store, [fill_matrix(store)])
    html = render_html(analysis, sections=build_sections(analysis))
    parse(html)
    assert "throughput vs background_mbps" in html
    assert "switch=ovs" in html and "switch=linux-bridge" in html
    assert "background_mbps × switch" in html  # header: the grid that was detected


def test_series_report_has_timeseries_and_distributions(store: Store) -> None:
    analysis = analyse(store, [fill_series(store, requests=600)])
    html = render_html(analysis, sections=build_sections(analysis))
    text = text_of(html)
    assert 'id="series"' in html
    assert "web.varnish · hit_ratio (interval) over time" in html
    assert "web.varnish · latency over time" in html
    assert "web.varnish · latency: distribution" in html
    assert "ECDF" in html
    # the hit ratio (20 points per trial) is not treated as per-request data
    assert "hit_ratio (interval): distribution" not in html
    assert "per-request samples: distribution shown" in text


def test_report_escapes_names_in_tables_and_charts(store: Store) -> None:
    evil = '<script>alert("x")</script>'
    run_id = store.create_run(experiment="esc", description=evil, spec_yaml="", spec_path="",
                              seed=1, host="h<1>", target="local", baseline="base",
                              version="0")
    store.add_variants(run_id, [("base", {}), (evil, {"k": evil})], "base")
    metric = Metric("t$x$", "s", Better.LOWER, f"desc {evil}", True)
    store.add_workload(run_id, "w", "w", 0, {"p": evil}, [metric])
    for i, variant in enumerate(["base", evil] * 4):
        store.record_trial(run_id, TrialRecord(variant, "w", i, i, False, "ok", "", 0.0, 1.0,
                                               "local", None, {}),
                           [Measurement("t$x$", 1.0 + 0.1 * (i % 3) + (variant == evil))],
                           {"t$x$": "s"})
    store.add_realisation(run_id, evil, "w", evil, {"x": evil}, [evil])
    analysis = analyse(store, [run_id])
    html = render_html(analysis, sections=build_sections(analysis))
    parse(html)
    assert "<script" not in html
    assert "&lt;script&gt;" in html


def test_degenerate_data_single_samples_and_no_baseline_data(store: Store) -> None:
    run_id = store.create_run(experiment="tiny", description="", spec_yaml="", spec_path="",
                              seed=1, host="h", target="local", baseline="base", version="0")
    store.add_variants(run_id, [("base", {"n": 1}), ("a", {"n": 2}), ("b", {"n": 3})], "base")
    metric = Metric("lat", "s", Better.LOWER, "latency", True)
    store.add_workload(run_id, "w", "w", 0, {}, [metric])
    for i, (variant, value) in enumerate([("a", 1.0), ("b", 2.0), ("b", 2.5)]):
        store.record_trial(run_id, TrialRecord(variant, "w", i, i, False, "ok", "", 0.0, 1.0,
                                               "local", None, {}),
                           [Measurement("lat", value)], {"lat": "s"})
    analysis = analyse(store, [run_id])
    html = render_html(analysis, sections=build_sections(analysis))
    text = text_of(html)
    assert "Best configuration:" in text  # 'a' (one sample) is best; no speedups exist
    assert "–" in text


def test_empty_run_renders(store: Store) -> None:
    run_id = store.create_run(experiment="empty", description="", spec_yaml="", spec_path="",
                              seed=1, host="h", target="local", baseline="base", version="0")
    store.add_variants(run_id, [("base", {})], "base")
    analysis = analyse(store, [run_id])
    html = render_html(analysis, sections=build_sections(analysis))
    text = text_of(html)
    assert "No measured samples yet" in text
    assert "No facts snapshot was stored." in text


def test_nan_statistics_render_as_dashes() -> None:
    metric = Metric("m", "B/s", Better.HIGHER, "a rate")
    nan = math.nan
    summary = Summary(1, 5.0, 5.0, nan, nan, nan, nan, nan, 5.0, 5.0, 0.95)
    analysis = Analysis(
        runs=[], baseline="base", variants=[VariantInfo("base", {}, True, "r")],
        workloads=[("w", "w", {})],
        rows=[MetricRow("base", "w", "w", metric, summary, 0, p_holm=nan)],
        main_effects={}, best={}, realisations=[], facts=[], trial_counts={}, failures=[])
    html = render_html(analysis, sections=build_sections(analysis))
    parse(html)
    assert "nan" not in text_of(html).lower().replace("nanoseconds", "")


def test_compare_two_runs_side_by_side(tmp_path: object) -> None:
    import pathlib

    assert isinstance(tmp_path, pathlib.Path)
    store = Store(str(tmp_path / "two.sqlite"))
    try:
        first, second = fill_matrix(store, seed=1, reps=3), fill_matrix(store, seed=2, reps=3)
        analysis = analyse(store, [first, second])
        html = render_html(analysis, sections=build_sections(analysis))
        parse(html)
        assert first in html and second in html
        assert "vs background_mbps" in html
    finally:
        store.close()
