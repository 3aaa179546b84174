"""Key results: primary and study metrics first, the rest folded; metrics without a direction
get no speedup, verdict or best configuration in any format (terminal, HTML, JSON)."""

from __future__ import annotations

import json
import re
from io import StringIO

import numpy as np
import pytest
from report_fill import Filler
from rich.console import Console

from virtbench.analysis import Analysis, analyse
from virtbench.model import Better, Measurement, Metric
from virtbench.plugins import build_sections
from virtbench.report.html import render_html, report_context
from virtbench.report.key_results import key_metrics
from virtbench.report.text import render_json, render_terminal
from virtbench.store import Store
from virtbench.workloads.net.qos_transfer import QosTransfer

WID = "net.qos-transfer"
SWITCHES = ("ovs", "ovs-dpdk")
# ovs-dpdk sends more probes and captures more packets: counts a direction would turn into
# a "best configuration" and "significantly better" verdicts.
LEVELS = {"throughput_mbps": (900.0, 1000.0), "rtt_mean_ms": (2.0, 1.0),
          "study_delay_ms": (180.0, 100.0), "cpu_sender_pct": (40.0, 30.0),
          "packets_sent": (1000.0, 2000.0), "capture_packets": (5000.0, 9000.0)}


def _qos_run(store: Store, metrics: tuple[Metric, ...] = QosTransfer.metrics) -> Analysis:
    run_id = store.create_run(experiment="vswitch-qos", description="", spec_yaml="",
                              spec_path="", seed=1, host="h", target="local",
                              baseline="switch=ovs", version="t")
    store.add_variants(run_id, [(f"switch={s}", {"switch": s}) for s in SWITCHES], "switch=ovs")
    fill = Filler(store, run_id)
    fill.workload(WID, WID, metrics)
    rng = np.random.default_rng(3)
    for rep in range(5):
        for i, switch in enumerate(SWITCHES):
            fill.trial(f"switch={switch}", WID, rep,
                       [Measurement(m, levels[i] * (1 + rng.normal(0, 0.01)))
                        for m, levels in LEVELS.items()])
    return analyse(store, [run_id])


@pytest.fixture(scope="module")
def qos(tmp_path_factory: pytest.TempPathFactory) -> Analysis:
    """One analysed run shared by the tests that only read it (an analysis costs seconds)."""
    st = Store(str(tmp_path_factory.mktemp("key") / "results.sqlite"))
    try:
        return _qos_run(st)
    finally:
        st.close()


def _terminal(analysis: Analysis, all_metrics: bool = False) -> str:
    buffer = StringIO()
    render_terminal(analysis, Console(file=buffer, width=200),
                    sections=build_sections(analysis), all_metrics=all_metrics)
    return buffer.getvalue()


def test_lead_is_primary_then_study_metrics_and_the_rest_is_folded(qos: Analysis) -> None:
    analysis = qos
    keys = key_metrics(analysis, build_sections(analysis))
    lead = [m.name for _wid, m in keys.lead]
    assert set(lead[:2]) == {"rtt_mean_ms", "throughput_mbps"}  # the primaries
    assert "study_delay_ms" in lead  # the net-qos sections report it
    folded = [m.name for _wid, m in keys.folded]
    assert sorted(folded) == ["capture_packets", "cpu_sender_pct", "packets_sent"]


def test_a_metric_without_direction_gets_no_verdict(qos: Analysis) -> None:
    analysis = qos
    assert (WID, "packets_sent") not in analysis.best
    assert (WID, "cpu_sender_pct") in analysis.best  # a directed one keeps its best
    dpdk = analysis.row("switch=ovs-dpdk", WID, "packets_sent")
    assert dpdk is not None and dpdk.summary is not None and dpdk.summary.n == 5
    assert dpdk.speedup is None and dpdk.p_holm is None
    directed = analysis.row("switch=ovs-dpdk", WID, "cpu_sender_pct")
    assert directed is not None and directed.speedup is not None and directed.significant


def test_terminal_folds_the_rest_into_one_line_and_all_shows_it(qos: Analysis) -> None:
    analysis = qos
    out = _terminal(analysis)
    assert "net.qos-transfer · throughput_mbps (Mbit/s, higher is better)" in out
    assert "packets_sent (packets" not in out  # no table of a folded metric
    line = next(t for t in out.splitlines() if "more metrics" in t)
    assert line.startswith("3 more metrics (report --all shows their tables)")
    assert "net.qos-transfer · packets_sent" in line
    everything = _terminal(analysis, all_metrics=True)
    assert "net.qos-transfer · packets_sent (packets, no direction)" in everything
    assert "more metrics" not in everything
    assert "best configuration for packets_sent" not in everything
    assert "best configuration for cpu_sender_pct: switch=ovs-dpdk" in everything
    assert "none is better" not in everything


def test_html_folds_the_rest_in_details(qos: Analysis) -> None:
    analysis = qos
    context = report_context(analysis, sections=build_sections(analysis))
    assert {m["name"] for m in context["summary"][:2]} == {"rtt_mean_ms", "throughput_mbps"}
    folded = {m["name"]: m for m in context["summary_folded"]}
    assert set(folded) == {"capture_packets", "cpu_sender_pct", "packets_sent"}
    assert folded["packets_sent"]["callout"] is None
    assert folded["packets_sent"]["better"] == "no direction"
    html = render_html(analysis, sections=build_sections(analysis))
    summary = html[html.index('<section id="summary">'):]
    summary = summary[:summary.index("</section>")]
    main, fold = summary.split('<details class="more-metrics">')
    assert "throughput_mbps" in main and "packets_sent" not in main
    assert "3 more metrics" in fold and "packets_sent" in fold
    assert "– (not judged)" in fold
    assert "packets · no direction" in html and "none is better" not in html


def test_json_keeps_every_metric_with_its_key_flag(qos: Analysis) -> None:
    analysis = qos
    document = json.loads(render_json(analysis, sections=build_sections(analysis)))
    metrics = document["metrics"]
    assert metrics[f"{WID}.packets_sent"] == {
        "unit": "packets", "better": "none", "key": False, "primary": False,
        "description": "probes the irtt client sent"}
    assert metrics[f"{WID}.throughput_mbps"]["key"] is True
    assert metrics[f"{WID}.cpu_sender_pct"]["key"] is False
    assert {b["metric"] for b in document["best"]} == {
        "throughput_mbps", "rtt_mean_ms", "study_delay_ms", "cpu_sender_pct"}
    rows = [r for r in document["results"] if r["metric"] == "packets_sent"]
    assert len(rows) == 2 and all(r["speedup"] is None and r["better"] == "none" for r in rows)


def test_a_run_stored_before_keeps_its_old_directions_and_still_reports(store: Store) -> None:
    # stores from before this change hold 'higher' for packets_sent: read as stored
    old = tuple(Metric(m.name, m.unit, m.better or Better.HIGHER, m.description, m.primary)
                for m in QosTransfer.metrics)
    analysis = _qos_run(store, old)
    assert analysis.metric_defs[(WID, "packets_sent")].better is Better.HIGHER
    assert analysis.best[(WID, "packets_sent")][0] == "switch=ovs-dpdk"
    out = _terminal(analysis)
    assert re.search(r"3 more metrics .*packets_sent", out)
    html = render_html(analysis, sections=build_sections(analysis))
    assert '<details class="more-metrics">' in html
