"""Open-model (arrival rate) and closed-model (N users) load, measured per request.

Response time is measured from the scheduled send time, so a late send or a request queued
behind busy connections counts against the server (no coordinated omission). Timeouts,
refused connections and 4xx/5xx answers are recorded as failed requests; they never stop a run.
"""

from __future__ import annotations

import asyncio
import gc
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from virtbench.loadgen.arrivals import arrival_times, url_stream
from virtbench.loadgen.config import LoadConfig
from virtbench.loadgen.http1 import Http1Connection, request_bytes
from virtbench.loadgen.parallel import announce_and_wait, run_in_processes
from virtbench.loadgen.precise import new_loop
from virtbench.loadgen.records import RequestRecord, Summary
from virtbench.loadgen.wrk import run_wrk

__all__ = ["LoadResult", "run_load"]

# Time between the last preparation step and the first scheduled send (s).
_LEAD_S = 0.2
# Closed model: pause after a failed connection so a dead server does not turn into a busy loop.
_CONNECT_BACKOFF_S = 0.01


@dataclass
class LoadResult:
    records: list[RequestRecord]
    duration_s: float
    """The sending period (s): the configured duration."""
    meta: dict[str, object] = field(default_factory=dict)
    summary: Summary | None = None
    """Set by engines without per-request records (wrk): the run's figures."""


def run_load(config: LoadConfig, barrier: Path | None = None) -> LoadResult:
    """Run one load in a fresh event loop (blocking). GC is paused: a collection is a pause.

    With ``engine: wrk`` the load is wrk's; the result has a summary and no records. With
    ``processes`` > 1 the users run in that many processes (loadgen.parallel); ``barrier`` is
    set in each of those: the closed run then starts at the common instant it is given.
    """
    if config.processes > 1:
        records, meta = run_in_processes(config)
        return LoadResult(records, config.duration_s, meta)
    if config.engine == "wrk":
        summary, meta = run_wrk(config)
        return LoadResult([], summary.samples / summary.achieved_rate
                          if summary.achieved_rate else config.duration_s, meta, summary)
    start = announce_and_wait(barrier) if barrier is not None else None
    loop = new_loop(config.spin_ms / 1000.0)
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        runner = (_OpenRun(config, loop) if config.model == "open"
                  else _ClosedRun(config, loop, start))
        return loop.run_until_complete(runner.run())
    finally:
        if was_enabled:
            gc.enable()
        loop.close()


class _Base:
    def __init__(self, config: LoadConfig, loop: asyncio.AbstractEventLoop) -> None:
        self.cfg = config
        self.loop = loop
        origin = config.origin()
        self.host, self.port = origin.host, origin.port
        host_header = config.host_header or (
            self.host if self.port == 80 else f"{self.host}:{self.port}")
        self.wires = [request_bytes(p, host_header) for p in config.paths()]
        self.t0 = 0.0
        self.connections_opened = 0

    def clock(self) -> float:
        return self.loop.time() - self.t0

    async def connect(
        self, on_done: object, on_lost: object
    ) -> Http1Connection | str:
        """A new connection, or the error name when it could not be made."""
        try:
            _, conn = await asyncio.wait_for(
                self.loop.create_connection(
                    lambda: Http1Connection(self.clock, on_done, on_lost),  # type: ignore[arg-type]
                    self.host, self.port),
                self.cfg.timeout_s)
        except ConnectionRefusedError:
            return "refused"
        except TimeoutError:
            return "connect_timeout"
        except OSError:
            return "connect_error"
        self.connections_opened += 1
        return conn

    def meta(self) -> dict[str, object]:
        return {
            "model": self.cfg.model,
            "connections_opened": self.connections_opened,
            "engine": "python-asyncio-http1",
            "spin_ms": self.cfg.spin_ms,
            "t0_monotonic": self.t0,
        }


class _OpenRun(_Base):
    def __init__(self, config: LoadConfig, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(config, loop)
        times = arrival_times(config.rate_per_s, config.duration_s, config.arrival, config.seed)
        streams = [url_stream(config.seed, w, len(self.wires), config.url_choice, config.users)
                   for w in range(config.users)]
        self.records = [
            RequestRecord(index=i, worker=i % config.users, url=streams[i % config.users].next(),
                          scheduled=t)
            for i, t in enumerate(times)
        ]
        self.idle: list[Http1Connection] = []
        self.open_count = 0
        self.waiting: deque[RequestRecord] = deque()
        self.next_index = 0
        self.unfinished = len(self.records)
        self.done: asyncio.Future[None] = loop.create_future()
        self.retried: set[int] = set()

    async def run(self) -> LoadResult:
        warm = await asyncio.gather(*(self.connect(self.on_done, self.on_lost)
                                      for _ in range(self.cfg.connections)))
        for conn in warm:
            if isinstance(conn, Http1Connection):
                self.open_count += 1
                self.idle.append(conn)
        self.t0 = self.loop.time() + _LEAD_S
        if self.records:
            self.loop.call_at(self.t0 + self.records[0].scheduled, self.fire)
            await self.done
        for conn in self.idle:
            conn.abort()
        meta = self.meta()
        meta["preconnected"] = sum(isinstance(c, Http1Connection) for c in warm)
        meta["retried_stale_connection"] = len(self.retried)
        return LoadResult(self.records, self.cfg.duration_s, meta)

    def fire(self) -> None:
        now = self.clock()
        records = self.records
        # Catch up on every arrival that is due (several when the loop was held up).
        while self.next_index < len(records) and records[self.next_index].scheduled <= now:
            self.dispatch(records[self.next_index])
            self.next_index += 1
        if self.next_index < len(records):
            self.loop.call_at(self.t0 + records[self.next_index].scheduled, self.fire)

    def dispatch(self, record: RequestRecord) -> None:
        while self.idle:
            conn = self.idle.pop()  # LIFO: keep few connections hot; idle ones may be closed
            if not conn.closed:
                conn.send(record, self.wires[record.url], self.cfg.timeout_s)
                return
        if self.open_count < self.cfg.max_connections:
            self.open_count += 1
            self.loop.create_task(self.connect_and_send(record))
        else:
            self.waiting.append(record)

    async def connect_and_send(self, record: RequestRecord) -> None:
        conn = await self.connect(self.on_done, self.on_lost)
        if isinstance(conn, str):
            self.open_count -= 1
            record.start = record.end = self.clock()
            record.error = conn
            self.finished(record)
            return
        record.new_connection = True
        conn.send(record, self.wires[record.url], self.cfg.timeout_s)

    def on_done(self, conn: Http1Connection, record: RequestRecord) -> None:
        if (record.error in ("closed", "reset") and record.first_byte < 0
                and not record.new_connection and record.index not in self.retried):
            # The server closed an idle keep-alive connection as we sent on it: like any HTTP
            # client, resend this idempotent GET once on a fresh connection.
            self.retried.add(record.index)
            record.error, record.start, record.end = "", -1.0, -1.0
            self.open_count += 1
            self.loop.create_task(self.connect_and_send(record))
            return
        self.finished(record)
        if not conn.closed and conn.keep_alive:
            if self.waiting:
                nxt = self.waiting.popleft()
                conn.send(nxt, self.wires[nxt.url], self.cfg.timeout_s)
            else:
                self.idle.append(conn)

    def on_lost(self, conn: Http1Connection) -> None:
        self.open_count -= 1
        if conn in self.idle:
            self.idle.remove(conn)
        if self.waiting and self.open_count < self.cfg.max_connections:
            self.open_count += 1
            self.loop.create_task(self.connect_and_send(self.waiting.popleft()))

    def finished(self, record: RequestRecord) -> None:
        self.unfinished -= 1
        if self.unfinished == 0 and not self.done.done():
            self.done.set_result(None)


class _ClosedRun(_Base):
    def __init__(self, config: LoadConfig, loop: asyncio.AbstractEventLoop,
                 start: float | None = None) -> None:
        super().__init__(config, loop)
        self.records: list[RequestRecord] = []
        self.start = start
        """Common time zero (monotonic s) of several processes, or None (own lead time)."""

    async def run(self) -> LoadResult:
        self.t0 = self.start if self.start is not None else self.loop.time() + _LEAD_S
        await asyncio.sleep(max(0.0, self.t0 - self.loop.time()))
        await asyncio.gather(*(self.user(w) for w in range(self.cfg.users)))
        return LoadResult(self.records, self.cfg.duration_s, self.meta())

    async def user(self, worker: int) -> None:
        cfg = self.cfg
        stream = url_stream(cfg.seed, worker, len(self.wires), cfg.url_choice, cfg.users)
        waiter: list[asyncio.Future[None]] = []

        def on_done(done_conn: Http1Connection, done: RequestRecord) -> None:
            # The common case, an answer on a live keep-alive connection with no think time:
            # send the next request from this callback. Waking the user's coroutine for each
            # request (a future, a task step) cost a third of the generator's time per request.
            # A failed request (timeout, bad response) leaves to the coroutine: its connection
            # is about to be dropped.
            if (not cfg.think_time_s and not done.error and not done_conn.closed
                    and done_conn.keep_alive):
                scheduled = self.clock()
                if scheduled < cfg.duration_s:
                    record = RequestRecord(index=len(self.records), worker=worker,
                                           url=stream.next(), scheduled=scheduled)
                    self.records.append(record)
                    done_conn.send(record, self.wires[record.url], cfg.timeout_s)
                    return
            if waiter and not waiter[0].done():
                waiter[0].set_result(None)

        def on_lost(_conn: Http1Connection) -> None:
            pass

        conn: Http1Connection | None = None
        while True:
            scheduled = self.clock()
            if scheduled >= cfg.duration_s:
                break
            record = RequestRecord(index=len(self.records), worker=worker, url=stream.next(),
                                   scheduled=scheduled)
            self.records.append(record)
            if conn is None or conn.closed or not conn.keep_alive:
                made = await self.connect(on_done, on_lost)
                if isinstance(made, str):
                    record.start = record.end = self.clock()
                    record.error = made
                    await asyncio.sleep(_CONNECT_BACKOFF_S)
                    continue
                conn = made
                record.new_connection = True
            fut: asyncio.Future[None] = self.loop.create_future()
            waiter[:] = [fut]
            conn.send(record, self.wires[record.url], cfg.timeout_s)
            await fut
            if cfg.think_time_s:
                await asyncio.sleep(cfg.think_time_s)
        if conn is not None:
            conn.abort()
