"""Against slow answers: the open model still sends on schedule (no coordinated omission);
closed-model users wait for each answer on one connection and time out cleanly.

A fake server on 127.0.0.1 answers each request 250 ms after it arrives and notes when each
request's bytes reached it (time.monotonic(), the clock of the load generator's event loop).

Why these bounds hold on a busy 2-core machine and still catch the bug: at 40 requests/s with
250 ms answers, ~10 requests are in flight at any time. A generator that waits for an answer
before the next send (coordinated omission) serves at most 2 connections / 0.25 s = 8
requests/s, so its median send lag is seconds (~2 s here); a correct one sends within
microseconds, and even a machine so loaded that each wake-up takes a few milliseconds stays far
below 100 ms. The bound sits an order of magnitude or more from both. The server's arrival times
are an independent witness: a generator that recorded the intended time instead of the real
send would show arrivals seconds after its recorded sends.
"""

from __future__ import annotations

import itertools
import socket
import statistics
import threading
import time
from collections.abc import Iterator

import pytest

from virtbench.loadgen import LoadConfig, run_load

ANSWER_AFTER_S = 0.25
LAG_BOUND_S = 0.1


class SlowServer:
    """Keep-alive HTTP/1.1 on loopback; one thread per connection; answers after a delay."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.port = self.sock.getsockname()[1]
        self.arrivals: list[float] = []
        self.lock = threading.Lock()
        self.stopping = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buf = b""
        conn.settimeout(60)  # a client gone silent ends this thread too (recv: OSError)
        with conn:
            while True:  # one request per turn, until the client closes (recv: b"")
                while b"\r\n\r\n" not in buf:
                    try:
                        chunk = conn.recv(4096)
                    except OSError:
                        return
                    if not chunk:
                        return
                    if not buf:
                        arrived = time.monotonic()
                    buf += chunk
                _, buf = buf.split(b"\r\n\r\n", 1)
                with self.lock:
                    self.arrivals.append(arrived)
                time.sleep(ANSWER_AFTER_S)
                try:
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                except OSError:
                    return
                arrived = 0.0

    def close(self) -> None:
        self.stopping = True
        self.sock.close()


@pytest.fixture
def slow_server() -> Iterator[SlowServer]:
    server = SlowServer()
    try:
        yield server
    finally:
        server.close()


def _load(server: SlowServer, **overrides: object) -> tuple[list[float], list[float], list[float]]:
    """(send lags, recorded send times, server arrival times) since the run's time zero."""
    params: dict[str, object] = {"rate_per_s": 40, "duration_s": 2, "users": 2,
                                 "connections": 2, "urls": [f"http://127.0.0.1:{server.port}/"]}
    params.update(overrides)
    config = LoadConfig.model_validate(params)
    result = run_load(config)
    expected = round(config.rate_per_s * config.duration_s)
    assert len(result.records) == expected and all(r.ok for r in result.records)
    t0 = result.meta["t0_monotonic"]
    assert isinstance(t0, float)
    # The recorded lag is exactly the recorded send minus the schedule, never negative.
    for r in result.records:
        assert r.send_lag_s == r.start - r.scheduled >= 0
        assert r.response_time_s >= r.send_lag_s + ANSWER_AFTER_S
    return ([r.send_lag_s for r in result.records], sorted(r.start for r in result.records),
            sorted(a - t0 for a in server.arrivals))


def test_slow_answers_do_not_delay_the_sends(slow_server: SlowServer) -> None:
    lags, sends, arrivals = _load(slow_server)
    assert statistics.median(lags) < LAG_BOUND_S, lags
    # The server saw the k-th request no earlier than the k-th recorded send (same clock;
    # in order, since each request arrives after its own send) and not much later either.
    assert len(arrivals) == len(sends)
    assert all(arrived >= sent for arrived, sent in zip(arrivals, sends, strict=True))
    assert statistics.median(a - s for a, s in zip(arrivals, sends, strict=True)) < LAG_BOUND_S


def test_the_lag_bound_catches_sends_that_wait_for_answers(slow_server: SlowServer) -> None:
    # Two connections at most: later arrivals must queue for a free connection, as a generator
    # with coordinated omission always does. The same measure must then flag the lateness.
    lags, _sends, _arrivals = _load(slow_server, max_connections=2, duration_s=1)
    assert statistics.median(lags) > 10 * LAG_BOUND_S, lags


def test_closed_users_send_one_request_per_answer_on_one_connection(
        slow_server: SlowServer) -> None:
    result = run_load(LoadConfig(model="closed", users=2, duration_s=1,
                                 urls=[f"http://127.0.0.1:{slow_server.port}/"]))
    by_user = {w: [r for r in result.records if r.worker == w] for w in (0, 1)}
    for records in by_user.values():
        # 1 s of answers that take ≥ 250 ms: at most 4 requests (fewer on a busy machine),
        # each sent when the previous answer came, all on the user's first connection.
        assert 1 <= len(records) <= 4 and all(r.ok for r in records)
        assert [r.new_connection for r in records] == [True] + [False] * (len(records) - 1)
        for previous, following in itertools.pairwise(records):
            assert following.scheduled >= previous.end


def test_closed_timeouts_fail_alone_and_the_user_reconnects(slow_server: SlowServer) -> None:
    result = run_load(LoadConfig(model="closed", users=2, duration_s=0.5, timeout_s=0.1,
                                 urls=[f"http://127.0.0.1:{slow_server.port}/"]))
    assert result.records
    assert {r.error for r in result.records} == {"timeout"}  # no follow-on 'closed' failures
    assert all(r.new_connection for r in result.records)


def test_closed_users_split_over_processes_start_together(slow_server: SlowServer) -> None:
    # Two generator processes, two users each: one run of four users on one time zero.
    result = run_load(LoadConfig(model="closed", users=4, processes=2, duration_s=2,
                                 urls=[f"http://127.0.0.1:{slow_server.port}/"]))
    assert result.meta["processes"] == 2
    assert {r.worker for r in result.records} == {0, 1, 2, 3}
    assert [r.index for r in result.records] == list(range(len(result.records)))
    assert all(r.ok for r in result.records)
    for worker in range(4):
        mine = [r for r in result.records if r.worker == worker]
        assert 1 <= len(mine) <= 8  # 2 s of answers that take ≥ 250 ms
        # Both processes started at the common instant, not one after the other's start-up
        # (seconds on a busy machine): each user's first send is within one answer of zero.
        assert mine[0].scheduled < ANSWER_AFTER_S
    assert len(slow_server.arrivals) == len(result.records)


def test_processes_apply_to_the_closed_python_engine_only() -> None:
    with pytest.raises(ValueError, match="processes > 1"):
        LoadConfig(model="open", processes=2, urls=["http://127.0.0.1:1/"])
