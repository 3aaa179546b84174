"""Metrics of the web.load workload (client side), plus the server-side Varnish timeline."""

from __future__ import annotations

from virtbench.model import Better, Metric
from virtbench.parsers.varnishstat import VARNISHSTAT_METRICS

__all__ = ["CLIENT_METRICS", "REQUEST_METRICS", "RUN_SERVER_METRICS", "WEB_LOAD_METRICS"]

REQUEST_METRICS = (
    Metric("response_time", "ms", Better.LOWER,
           "one request: end of the response body minus its SCHEDULED send time (so late sends "
           "and queueing count); t = scheduled offset (s); labels url, status, cache, error; "
           "status 'failed' for timeouts, refused connections and 4xx/5xx answers"),
    Metric("time_to_first_byte", "ms", Better.LOWER,
           "one request: first response byte minus its scheduled send time"),
)

CLIENT_METRICS = (
    Metric("response_time_mean", "ms", Better.LOWER,
           "mean response time of the run's successful requests (the study's 'average')",
           primary=True),
    Metric("response_time_median", "ms", Better.LOWER, "median response time (successful)"),
    Metric("response_time_p90", "ms", Better.LOWER, "90th percentile response time (successful)"),
    Metric("response_time_p99", "ms", Better.LOWER, "99th percentile response time (successful)"),
    Metric("time_to_first_byte_mean", "ms", Better.LOWER,
           "mean first-byte time from the scheduled send (successful)"),
    Metric("samples", "requests", None,
           "requests the run scheduled (open model) or sent (closed model)"),
    Metric("failures", "requests", Better.LOWER,
           "requests without a complete 2xx/3xx answer: timeouts, refused or reset "
           "connections, 4xx and 5xx"),
    Metric("success_rate", "%", Better.HIGHER, "100 × (samples − failures) / samples"),
    Metric("achieved_rate", "req/s", Better.HIGHER,
           "requests that completed (ok or failed) per second of the sending period"),
    Metric("received_throughput", "MB/s", Better.HIGHER,
           "response body bytes per second of the sending period (10^6 bytes)"),
    Metric("hit_ratio_client", "%", Better.HIGHER,
           "successful responses that Varnish served from cache (two ids in X-Varnish)"),
    Metric("send_lag_p99", "ms", None,
           "99th percentile of (send start − scheduled time): the generator's own accuracy"),
    Metric("late_sends", "%", None,
           "requests whose send started more than 1 ms after the scheduled time"),
)

RUN_SERVER_METRICS = (
    Metric("hit_ratio_run", "%", Better.HIGHER,
           "Varnish hits / (hits + misses) over the whole run (counter deltas from just before "
           "the first request to just after the last)"),
    Metric("lru_nuked_run", "objects", Better.LOWER,
           "objects Varnish evicted for room during the run (MAIN.n_lru_nuked delta)"),
    Metric("backend_fetches_run", "requests", Better.LOWER,
           "requests Varnish sent to the origin during the run (MAIN.backend_req delta)"),
)

_TIMELINE = tuple(m for m in VARNISHSTAT_METRICS
                  if m.name not in ("cache_hits", "cache_misses", "backend_fetches"))

WEB_LOAD_METRICS = CLIENT_METRICS + REQUEST_METRICS + RUN_SERVER_METRICS + _TIMELINE
