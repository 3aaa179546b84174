"""What a load-generator run does: model, rate or users, duration, URLs, timeouts."""

from __future__ import annotations

import ipaddress
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["LoadConfig", "Origin", "split_url"]


class Origin(BaseModel):
    model_config = ConfigDict(frozen=True)
    host: str
    port: int


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def split_url(url: str, *, allow_remote: bool = False) -> tuple[Origin, str]:
    """(origin, path-with-query) of an absolute ``http://`` URL; ValueError says what is wrong."""
    parts = urlsplit(url)
    if parts.scheme != "http":
        raise ValueError(f"{url!r}: only absolute http:// URLs are supported")
    if not parts.hostname:
        raise ValueError(f"{url!r}: no host")
    if not allow_remote and not _is_loopback(parts.hostname):
        raise ValueError(
            f"{url!r}: host {parts.hostname} is not a loopback address "
            "(set allow_remote to load a remote server)"
        )
    try:
        port = parts.port or 80
    except ValueError as exc:
        raise ValueError(f"{url!r}: bad port") from exc
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return Origin(host=parts.hostname, port=port), path


class LoadConfig(BaseModel):
    """One load-generator run (the `web.load` workload builds this from its params)."""

    model_config = ConfigDict(extra="forbid")

    engine: Literal["python", "wrk"] = Field(
        "python", description="python: virtbench's own generator (open and closed model, every "
        "request recorded); wrk: drive wrk for the highest closed-model rates (summary and "
        "latency percentiles only, no per-request records, no think time)")
    wrk_threads: int = Field(2, ge=1, le=256, description="engine wrk: wrk threads (-t)")
    wrk_count_hits: bool = Field(
        False, description="engine wrk: count hits/misses from X-Varnish in a per-response Lua "
        "hook (hit_ratio_client); costs ~15 % of wrk's top rate")
    model: Literal["open", "closed"] = Field(
        "open", description="open: requests arrive at a set rate whatever the server does; "
        "closed: N users each send, wait for the answer, think, repeat")
    rate_per_s: float = Field(8.0, gt=0, description="open model: arrival rate (requests/s)")
    arrival: Literal["constant", "poisson"] = Field(
        "constant", description="open model: constant gaps of 1/rate or Poisson arrivals")
    users: int = Field(
        8, ge=1, le=10000, description="closed model: concurrent users; open model: number of "
        "workers the arrivals are dealt to round-robin, each with its own URL stream")
    think_time_s: float = Field(0.0, ge=0, description="closed model: pause after each answer (s)")
    duration_s: float = Field(60.0, gt=0, description="length of the sending period (s)")
    urls: list[str] = Field(min_length=1, description="absolute http:// URLs to choose from")
    url_choice: Literal["uniform", "sequential"] = Field(
        "uniform", description="per-worker seeded uniform choice, or each worker walks the list")
    seed: int = Field(1, description="seed of arrival times and URL choices")
    timeout_s: float = Field(
        30.0, gt=0, description="a request not finished this long after its send started fails")
    connections: int = Field(
        8, ge=1, description="open model: keep-alive connections opened before the first send")
    max_connections: int = Field(
        512, ge=1, description="open model: most connections at once; later arrivals queue "
        "(the queueing time is part of their response time)")
    processes: int = Field(
        1, ge=1, le=64, description="closed model, engine python: deal the users to this many "
        "generator processes started together (one process drives its connections from one "
        "core; wrk -t2 uses two threads); their records are merged into one run")
    spin_ms: float = Field(
        0.2, ge=0, description="wake up (timerfd) this long before each scheduled send and "
        "busy-poll until it is due: epoll alone sleeps in whole milliseconds, so sends would "
        "start up to ~1 ms late (0 = plain epoll sleeps)")
    scheduling: Literal["auto", "normal", "fifo"] = Field(
        "auto", description="fifo: run the generator under SCHED_FIFO (priority 1, needs root) "
        "so other processes on a busy machine cannot delay a scheduled send; auto: fifo when "
        "permitted, else normal; the run's notes say which one ran")
    host_header: str | None = Field(
        None, description="Host header to send instead of the URL's host:port")
    allow_remote: bool = Field(False, description="allow non-loopback hosts in the URLs")

    @model_validator(mode="after")
    def _wrk_limits(self) -> LoadConfig:
        if self.engine == "wrk":
            if self.model != "closed":
                raise ValueError("engine: wrk runs only the closed model (model: closed); the "
                                 "open model needs the python engine")
            if self.think_time_s > 0:
                raise ValueError("engine: wrk has no think time; set think_time_s: 0 or use "
                                 "the python engine")
        return self

    @model_validator(mode="after")
    def _processes_closed_only(self) -> LoadConfig:
        if self.processes > 1 and (self.model != "closed" or self.engine != "python"):
            raise ValueError("processes > 1 applies to the closed model of the python engine "
                             "(the open model keeps one schedule in one process; wrk has "
                             "wrk_threads)")
        return self

    @model_validator(mode="after")
    def _one_origin(self) -> LoadConfig:
        origins = set()
        for index, url in enumerate(self.urls):
            try:
                origin, _ = split_url(url, allow_remote=self.allow_remote)
            except ValueError as exc:
                raise ValueError(f"urls[{index}]: {exc}") from None
            origins.add(origin)
        if len(origins) > 1:
            raise ValueError(
                "urls: all URLs must share one host:port (the server under test); found "
                + ", ".join(sorted(f"{o.host}:{o.port}" for o in origins))
            )
        return self

    def origin(self) -> Origin:
        return split_url(self.urls[0], allow_remote=self.allow_remote)[0]

    def paths(self) -> list[str]:
        return [split_url(u, allow_remote=self.allow_remote)[1] for u in self.urls]
