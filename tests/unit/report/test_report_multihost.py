"""Study 002 across hosts: runs from two hosts compared in one HTML report draw throughput vs
neighbours with one line per host, each with its own CI band."""

from __future__ import annotations

import numpy as np
from report_fill import Filler

from virtbench.analysis import analyse
from virtbench.analysis.derived_views import knob_grid, metric_views
from virtbench.model import Better, Measurement, Metric
from virtbench.plugins import build_sections
from virtbench.report import charts
from virtbench.report.html import render_html
from virtbench.store import Store

THROUGHPUT = Metric("throughput_gbps", "Gbit/s", Better.HIGHER,
                    "iperf3 goodput at the receiver through the router, 10^9 bit/s", True)
# Study 002's means per number of VNFs (1..5) on two of its hosts, in Gbit/s.
HOSTS = {"kvm-host": [19.29, 19.21, 17.15, 13.21, 11.40],
         "xen-host": [9.8, 9.1, 8.0, 6.9, 5.2]}


def _vnf_run(store: Store, host: str, means: list[float], seed: int, reps: int = 4) -> str:
    rng = np.random.default_rng(seed)
    names = [f"neighbours={n}" for n in range(len(means))]
    run_id = store.create_run(experiment="vnf-scalability", description="study 002",
                              spec_yaml="", spec_path="", seed=seed, host=host, target="local",
                              baseline=names[0], version="t")
    store.add_variants(run_id, [(name, {"neighbours": n}) for n, name in enumerate(names)],
                       names[0])
    fill = Filler(store, run_id)
    fill.workload("net.router-throughput", "net.router-throughput", [THROUGHPUT])
    for name, mean in zip(names, means, strict=True):
        for rep in range(reps):
            fill.trial(name, "net.router-throughput", rep,
                       [Measurement("throughput_gbps", mean + float(rng.normal(0, 0.2)))])
    store.set_run_status(run_id, "complete", "fixed repetitions")
    return run_id


def test_two_hosts_two_lines_with_bands(store: Store) -> None:
    runs = [_vnf_run(store, host, means, seed)
            for seed, (host, means) in enumerate(HOSTS.items())]
    analysis = analyse(store, runs)
    assert sorted(v.name.split("/")[0] for v in analysis.variants) == (
        ["kvm-host"] * 5 + ["xen-host"] * 5)

    grid = knob_grid(analysis)
    assert grid is not None and grid.per_run
    assert grid.x_knob == "neighbours" and grid.line_knobs == []
    assert sorted(line.label for line in grid.lines) == ["kvm-host", "xen-host"]
    assert {line.run_id for line in grid.lines} == set(runs)

    view = next(v for v in metric_views(analysis) if v.metric.name == "throughput_gbps")
    lines = dict(charts.grid_lines(view, grid))
    assert sorted(lines) == ["kvm-host", "xen-host"]
    for host, means in HOSTS.items():
        points = lines[host]
        assert [x for x, *_ in points] == [0.0, 1.0, 2.0, 3.0, 4.0]
        for (_x, mean, low, high), expected in zip(points, means, strict=True):
            assert low < mean < high  # a CI band around each mean
            assert abs(mean - expected) < 0.5  # this host's own data, not the other's
    # falling throughput on both hosts, each line from its own run
    assert lines["kvm-host"][0][1] > lines["kvm-host"][-1][1] > lines["xen-host"][0][1]

    chart = charts.grid_chart(view, grid)
    assert chart is not None and chart.startswith("<svg")
    assert "kvm-host" in chart and "xen-host" in chart  # legend entries (text stays text)
    html = render_html(analysis, sections=build_sections(analysis))
    assert "one line per host (run)" in html


def test_same_host_twice_still_two_lines(store: Store) -> None:
    """Two runs on one host are labelled experiment@id and still never merge."""
    runs = [_vnf_run(store, "vm", HOSTS["kvm-host"], seed) for seed in (1, 2)]
    grid = knob_grid(analyse(store, runs))
    assert grid is not None and len(grid.lines) == 2
    assert len({line.label for line in grid.lines}) == 2
    assert all(line.label.startswith("vnf-scalability@") for line in grid.lines)


def test_single_run_has_one_unnamed_line(store: Store) -> None:
    grid = knob_grid(analyse(store, [_vnf_run(store, "vm", HOSTS["kvm-host"], 3)]))
    assert grid is not None and not grid.per_run
    assert [line.label for line in grid.lines] == [""]
