"""web.load: HTTP load on the lab's Varnish (or any loopback server), measured per request,
with the Varnish counters sampled every K seconds into a hit-ratio timeline."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, ValidationError

from virtbench.contract import MAX_SECONDS, Params
from virtbench.loadgen.config import LoadConfig
from virtbench.loadgen.records import RequestRecord, Summary, read_records, summarise
from virtbench.model import Artifact, Measurement, VirtbenchError
from virtbench.parsers.varnishstat import timeline
from virtbench.services import Service, WebStack
from virtbench.workloads.web.cache_state import prepare_cache
from virtbench.workloads.web.metrics import WEB_LOAD_METRICS
from virtbench.workloads.web.sampler import VarnishSampler
from virtbench.workloads.web.urls import resolve_urls
from virtbench.workloads.workload_contract import (
    Tool,
    TrialContext,
    TrialResult,
    Workload,
    missing_tools,
)

__all__ = ["WebLoad", "WebLoadParams", "summary_measurements"]


class WebLoadParams(Params):
    model: Literal["open", "closed"] = Field(
        "open", description="open: a fixed arrival rate (the study: 8 req/s); closed: N users")
    engine: Literal["python", "wrk"] = Field(
        "python", description="python: virtbench's generator (every request recorded); wrk: "
        "closed model through wrk for the highest rates (summary and latency percentiles only)")
    wrk_threads: int = Field(2, ge=1, le=256, description="engine wrk: wrk threads (-t)")
    wrk_count_hits: bool = Field(
        False, description="engine wrk: count hits from X-Varnish per response "
        "(hit_ratio_client); costs ~15 % of wrk's top rate")
    processes: int = Field(1, ge=1, le=64, description="closed model, engine python: users "
                           "dealt to this many generator processes started together (as wrk's "
                           "threads); records merged")
    rate_per_s: float = Field(8.0, ge=0.001, le=10_000_000,
                              description="open model: requests per second")
    arrival: Literal["constant", "poisson"] = Field(
        "constant", description="open model: constant gaps or Poisson arrivals")
    users: int = Field(8, ge=1, le=10000, description="closed model: concurrent users; open "
                       "model: workers the arrivals are dealt to, each with its own URL stream")
    think_time_s: float = Field(0.0, ge=0, le=3600,
                                description="closed model: pause after an answer (s)")
    duration_s: float = Field(600.0, ge=0.1, le=MAX_SECONDS,
                              description="sending period per run (s)")
    timeout_s: float = Field(30.0, ge=0.001, le=3600,
                             description="a request fails if not done this long "
                             "after its send started (s)")
    url_choice: Literal["uniform", "sequential"] = Field(
        "uniform", description="seeded uniform choice per worker, or walk the list")
    urls: list[str] = Field(default_factory=list, description="URLs to load (default: the lab's)")
    url_file: Path | None = Field(None, description="file with one URL per line")
    max_urls: int | None = Field(None, ge=1, description="use only the first N URLs")
    seed: int = Field(1, ge=0, le=2**31,
                      description="base seed of arrivals and URL choices; run k uses "
                      "seed·1000003 + k in every variant (common random numbers)")
    connections: int = Field(8, ge=1, le=100_000,
                             description="open model: connections opened beforehand")
    max_connections: int = Field(512, ge=1, le=100_000, description="open model: connection cap")
    spin_ms: float = Field(0.2, ge=0, le=1000, description="wake up this long before each send and "
                           "busy-poll until it is due, for sub-millisecond send accuracy "
                           "(0 = plain epoll sleeps, up to ~1 ms late)")
    scheduling: Literal["auto", "normal", "fifo"] = Field(
        "auto", description="fifo: the generator runs under SCHED_FIFO (root) so a busy "
        "machine delays its sends less; auto: fifo when permitted, else normal")
    stat_interval_s: float = Field(30.0, ge=0.1, le=MAX_SECONDS,
                                   description="varnishstat sampling period (s)")
    per_request_samples: bool = Field(
        True, description="store every request as response_time / time_to_first_byte samples")
    allow_remote: bool = Field(False, description="allow URLs that are not on loopback")
    via: Literal["cache", "origin"] = Field(
        "cache", description="cache: the lab's pages through Varnish; origin: the same pages "
        "from the lab's origin directly (no Varnish), e.g. a variant measuring the origin alone")
    cache_state: Literal["as-is", "cold", "warm"] = Field(
        "as-is", description="the cache at the start of each trial: as-is (as the last trial "
        "left it), cold (the web lab restarts Varnish with empty storage), warm (every URL "
        "fetched once beforehand)")


class WebLoad(Workload):
    name: ClassVar[str] = "web.load"
    description: ClassVar[str] = (
        "HTTP load (open or closed model) measured per request from the scheduled send time; "
        "Varnish hit-ratio timeline from varnishstat")
    metrics = WEB_LOAD_METRICS
    tools: ClassVar[tuple[Tool, ...]] = (
        Tool("varnishstat", "varnish", "cache counters (only when the lab runs Varnish)"),
        Tool("wrk", "wrk", "HTTP load (only with engine: wrk)"),
    )
    Params: ClassVar[type[BaseModel]] = WebLoadParams
    needs = (WebStack,)

    def check(self, target: Any) -> list[str]:
        # varnishstat is needed only with a Varnish lab; the lab itself checks for it.
        wrk = [t for t in self.tools if t.binary == "wrk" and self.params.engine == "wrk"]
        return missing_tools("workload web.load", target.which, wrk, " (engine: wrk)")

    def needed_services(self) -> tuple[type[Service], ...]:
        """No web lab needed with URLs of one's own (params.urls or url_file), unless the
        cache must start cold (only the web lab can empty it)."""
        p: WebLoadParams = self.params
        if (p.urls or p.url_file is not None) and p.cache_state != "cold":
            return ()
        return self.needs

    def run(self, ctx: TrialContext) -> TrialResult:
        p: WebLoadParams = self.params
        web = ctx.services.find(WebStack)
        urls = resolve_urls(p, web)
        try:
            config = _config_from(p, urls, ctx, web.host_header if web is not None else None)
        except ValidationError as exc:
            raise VirtbenchError(f"web.load params: {exc}") from None
        stem = f"web-load-{_safe(ctx.variant)}-r{ctx.repetition}"
        ctx.workdir.mkdir(parents=True, exist_ok=True)
        config_path = ctx.workdir / f"{stem}.json"
        records_path = ctx.workdir / f"{stem}.records.jsonl"
        config_path.write_text(config.model_dump_json(indent=1))
        cache_notes = prepare_cache(p.cache_state, p.via, urls, web)
        sampler = None
        if web is not None and p.via == "cache":
            sampler = VarnishSampler(ctx.target, web.varnish_workdir, p.stat_interval_s)
            sampler.start()
        try:
            proc = ctx.target.run(
                [*ctx.target.python(), "-m", "virtbench.loadgen", str(config_path),
                 str(records_path)],
                timeout=p.duration_s + p.timeout_s + 120, check=False, env=ctx.env)
        finally:
            if sampler is not None:
                sampler.stop()
        if proc.returncode != 0:
            raise VirtbenchError(f"load generator failed: {proc.stderr.strip()[-500:]}")
        records, meta = read_records(records_path)
        engine_summary = meta.get("summary")  # engines without per-request records (wrk)
        summary = Summary(**engine_summary) if isinstance(engine_summary, dict) \
            else summarise(records, p.duration_s)
        measurements = summary_measurements(summary)
        if p.per_request_samples:
            measurements += request_measurements(records, config.paths())
        artifacts = [Artifact(f"{stem}.summary.json",
                              json.dumps(dataclasses.asdict(summary), indent=1).encode(),
                              "application/json")]
        notes = {"load_generator": f"{meta.get('engine')}, scheduling {meta.get('scheduling')}",
                 "connections_opened": str(meta.get("connections_opened")),
                 "seed": str(config.seed), "errors": json.dumps(summary.errors),
                 "via": p.via, "cache_state": p.cache_state, **cache_notes}
        if sampler is not None:
            if sampler.snapshots:  # the state the load met, read after prepare_cache
                notes["cache_objects_at_start"] = str(sampler.snapshots[0].get("MAIN.n_object"))
            measurements += server_measurements(sampler, float(str(meta["t0_monotonic"])))
            artifacts.append(Artifact(f"{stem}.varnishstat.jsonl",
                                      "\n".join(sampler.raw).encode(), "application/x-ndjson"))
            if sampler.errors:
                notes["varnishstat_errors"] = "; ".join(sampler.errors[:3])
            restarts = child_restarts(sampler)
            if restarts:
                notes["varnish_child_restarts"] = restarts
        return TrialResult(measurements, artifacts, notes)


def child_restarts(sampler: VarnishSampler) -> str:
    """What the trial's snapshots say of varnishd's child dying ("" when it did not): the
    manager starts a new child, with empty storage, so the rest of the trial met a cold cache."""
    snaps = sampler.snapshots
    if len(snaps) < 2:
        return ""
    died = snaps[-1].get("MGT.child_died") - snaps[0].get("MGT.child_died")
    started = snaps[-1].get("MGT.child_start") - snaps[0].get("MGT.child_start")
    if died <= 0 and started <= 0:
        return ""
    return (f"varnishd's child process died {died} and was restarted {started} time(s) during "
            "the trial (varnishstat MGT.child_died, MGT.child_start): the cache was emptied "
            "mid-trial; with the web lab's cache_memory_mib the kernel most likely killed it "
            "for memory (a malloc storage too large beside varnishd's own memory; see dmesg)")


def _config_from(p: WebLoadParams, urls: list[str], ctx: TrialContext,
                 host_header: str | None) -> LoadConfig:
    return LoadConfig(
        engine=p.engine, wrk_threads=p.wrk_threads, wrk_count_hits=p.wrk_count_hits,
        model=p.model, processes=p.processes,
        rate_per_s=p.rate_per_s, arrival=p.arrival, users=p.users,
        think_time_s=p.think_time_s, duration_s=p.duration_s, urls=urls,
        url_choice=p.url_choice, seed=p.seed * 1_000_003 + ctx.repetition,
        timeout_s=p.timeout_s, connections=p.connections, max_connections=p.max_connections,
        spin_ms=p.spin_ms, scheduling=p.scheduling, host_header=host_header,
        allow_remote=p.allow_remote)


def _num(value: float) -> float | None:
    return None if math.isnan(value) else value


def summary_measurements(s: Summary) -> list[Measurement]:
    pairs = {
        "response_time_mean": s.response_time_mean_ms,
        "response_time_median": s.response_time_median_ms,
        "response_time_p90": s.response_time_p90_ms,
        "response_time_p99": s.response_time_p99_ms,
        "time_to_first_byte_mean": s.ttfb_mean_ms,
        "samples": float(s.samples),
        "failures": float(s.failures),
        "success_rate": s.success_rate_pct,
        "achieved_rate": s.achieved_rate,
        "received_throughput": s.received_mb_per_s,
        "hit_ratio_client": s.hit_ratio_client_pct,
        "send_lag_p99": s.send_lag_p99_ms,
        "late_sends": s.late_sends_pct,
    }
    return [Measurement(name, _num(value), status="ok" if not math.isnan(value) else "no_success")
            for name, value in pairs.items()]


def request_measurements(records: list[RequestRecord], paths: list[str]) -> list[Measurement]:
    out = []
    for r in records:
        labels = {"url": paths[r.url], "status": str(r.status), "cache": r.cache,
                  "worker": str(r.worker)}
        if r.error:
            labels["error"] = r.error
        status = "ok" if r.ok else "failed"
        rt = r.response_time_s
        out.append(Measurement("response_time", None if math.isnan(rt) else rt * 1000.0,
                               r.scheduled, labels, status))
        ttfb = r.ttfb_s
        out.append(Measurement("time_to_first_byte", None if math.isnan(ttfb) else ttfb * 1000.0,
                               r.scheduled, labels, status))
    return out


def server_measurements(sampler: VarnishSampler, t0_monotonic: float) -> list[Measurement]:
    snaps = sampler.snapshots
    if len(snaps) < 2:
        return []
    times = [t - t0_monotonic for t in sampler.times]
    out = timeline(snaps, times)
    # timeline() measures t from the first snapshot; shift to the load's time zero.
    shift = times[0]
    for m in out:
        if m.t is not None:
            m.t += shift
    first, last = snaps[0], snaps[-1]
    hits = last.get("MAIN.cache_hit") - first.get("MAIN.cache_hit")
    misses = last.get("MAIN.cache_miss") - first.get("MAIN.cache_miss")
    out.append(Measurement("hit_ratio_run", 100.0 * hits / (hits + misses) if hits + misses
                           else None, status="ok" if hits + misses else "no_requests"))
    out.append(Measurement("lru_nuked_run",
                           float(last.get("MAIN.n_lru_nuked") - first.get("MAIN.n_lru_nuked"))))
    out.append(Measurement("backend_fetches_run",
                           float(last.get("MAIN.backend_req") - first.get("MAIN.backend_req"))))
    return out


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:40]
