"""The review of every built-in workload's metric directions: counts that describe the trial
have none (no verdict, no best configuration, no gate decision); every other metric, and every
primary one, has one."""

from __future__ import annotations

from virtbench.plugins import all_workloads
from virtbench.runner.search import search_metrics

# (workload, metric): why it has no direction
UNDIRECTED = {
    # irtt's probe counts are set by the interval and the duration (probe_loss_pct judges)
    **{(w, m): "probe count" for w in ("net.qos-probe", "net.qos-transfer", "net.packet-rate")
       for m in ("packets_sent", "packets_received")},
    # the receiver capture's own count and drops: the measurement, not the switch
    ("net.qos-transfer", "capture_packets"): "capture count",
    ("net.qos-transfer", "capture_dropped"): "capture count",
    # the load offered and the generator's own accuracy and cost
    ("net.packet-rate", "offered_pps"): "load offered",
    ("net.packet-rate", "generator_shortfall"): "generator accuracy",
    ("net.packet-rate", "generator_excess"): "generator accuracy",
    ("net.packet-rate", "generator_cpu_pct"): "generator cost",
    ("web.load", "samples"): "requests scheduled",
    ("web.load", "send_lag_p99"): "generator accuracy",
    ("web.load", "late_sends"): "generator accuracy",
    # how full the cache is: neither better nor worse
    ("web.load", "storage_used_bytes"): "cache fill",
    ("web.load", "storage_free_bytes"): "cache fill",
}


def test_the_reviewed_metrics_and_only_they_have_no_direction() -> None:
    found = {(name, m.name) for name, cls in all_workloads().items() for m in cls.metrics
             if m.better is None}
    assert found == set(UNDIRECTED)


def test_every_primary_metric_has_a_direction() -> None:
    primaries = [(name, m) for name, cls in all_workloads().items() for m in cls.metrics
                 if m.primary]
    assert primaries and all(m.directed for _name, m in primaries)


def test_the_search_bookkeeping_has_no_direction_but_its_result_has() -> None:
    by_name = {m.name: m for m in search_metrics("Mbit/s")}
    assert by_name["capacity"].directed and by_name["capacity_upper"].directed
    assert not any(by_name[n].directed for n in ("search_trials", "search_load",
                                                  "search_passed", "search_duration"))
