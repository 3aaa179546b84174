"""The studies' capture figures as plain values: their names and units, and one flow's values.

virtbench.net_qos.study declares them as metrics (virtbench.model.Metric) and computes them
from arrays; this module holds what `virtbench parse pcap` needs of them without importing
dataclasses, numpy or the model, whose start-up would cost more than its read of the file.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = [
    "NO_CAPTURE_TIME", "QOS_METRIC_SPECS", "CaptureQos", "MetricSpec", "capture_throughput_mbps",
]


class MetricSpec(NamedTuple):
    """A metric's declaration as plain values (``better``: "lower" or "higher")."""

    name: str
    unit: str
    better: str
    description: str


QOS_METRIC_SPECS = (
    MetricSpec("study_delay_ms", "ms", "lower",
               "studies' 'delay': mean inter-arrival time of the flow's captured packets (not a "
               "one-way delay)"),
    MetricSpec("study_jitter_ms", "ms", "lower",
               "studies' 'jitter': mean absolute change between consecutive inter-arrival times"),
    MetricSpec("study_throughput_mbps", "Mbit/s", "higher",
               "studies' 'throughput': captured wire bits of the flow / capture time (first to "
               "last packet) / 10^6"),
)


NO_CAPTURE_TIME = "no_capture_time"
"""Status of a throughput over a flow whose packets all carry one timestamp: bits / 0 s."""


def capture_throughput_mbps(nbytes: int, capture_s: float) -> float | None:
    """Captured bits / capture time / 10^6; None when the capture time is 0 (every packet has
    the same timestamp): there is no rate to state, and NaN or infinity is no measurement."""
    return nbytes * 8 / capture_s / 1e6 if capture_s > 0 else None


class CaptureQos(NamedTuple):
    """Capture-based metrics of one received flow.

    delay_ms: mean inter-arrival time of received packets (ms);
    jitter_ms: mean |change| of consecutive inter-arrival times (ms);
    throughput_mbps: received bits / capture time (first to last packet), in Mbit/s (10^6 bit/s);
    None when the capture time is 0 (:func:`capture_throughput_mbps`);
    packets: received packets; bytes: received bytes on the wire; capture_s: seconds.
    """

    delay_ms: float
    jitter_ms: float
    throughput_mbps: float | None
    packets: int
    bytes: int
    capture_s: float

    def by_metric(self) -> dict[str, float | None]:
        """The values of the metrics of :data:`QOS_METRIC_SPECS`, by metric name."""
        values = (self.delay_ms, self.jitter_ms, self.throughput_mbps)
        return {m.name: v for m, v in zip(QOS_METRIC_SPECS, values, strict=True)}

    def figures(self) -> list[tuple[str, float | None, str]]:
        """(metric, value, status) of each metric of :data:`QOS_METRIC_SPECS`: status "ok", or
        why the value is None (:data:`NO_CAPTURE_TIME`)."""
        return [(name, value, "ok" if value is not None else NO_CAPTURE_TIME)
                for name, value in self.by_metric().items()]
