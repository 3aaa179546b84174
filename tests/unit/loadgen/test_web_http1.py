"""The HTTP/1.1 response parser, fed byte pieces through a fake transport (logic only)."""

from __future__ import annotations

import asyncio

import pytest

from virtbench.loadgen.http1 import Http1Connection, request_bytes
from virtbench.loadgen.records import RequestRecord


class FakeTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written = b""
        self.aborted = False

    def write(self, data: bytes) -> None:  # type: ignore[override]
        self.written += data

    def abort(self) -> None:
        self.aborted = True

    def get_extra_info(self, name: str, default: object = None) -> object:
        return default


def _exchange(pieces: list[bytes]) -> tuple[list[RequestRecord], Http1Connection, FakeTransport]:
    done: list[RequestRecord] = []
    lost: list[Http1Connection] = []

    async def go() -> tuple[Http1Connection, FakeTransport]:
        clock = iter(range(1, 1000))
        conn = Http1Connection(lambda: float(next(clock)), lambda c, r: done.append(r),
                               lost.append)
        transport = FakeTransport()
        conn.connection_made(transport)
        conn.send(RequestRecord(0, 0, 0, 0.0), request_bytes("/a", "h"), 5.0)
        for piece in pieces:
            conn.data_received(piece)
        return conn, transport

    conn, transport = asyncio.run(go())
    return done, conn, transport


def _split(data: bytes, size: int) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


@pytest.mark.parametrize("piece", [1, 7, 1000])
def test_content_length_response_in_pieces(piece: int) -> None:
    body = b"x" * 300
    resp = (b"HTTP/1.1 200 OK\r\nContent-Length: 300\r\nX-Varnish: 32770 3\r\nAge: 12\r\n\r\n"
            + body)
    done, conn, transport = _exchange(_split(resp, piece))
    assert len(done) == 1
    r = done[0]
    assert (r.status, r.bytes, r.cache, r.age_s, r.error) == (200, 300, "hit", 12, "")
    assert r.start < r.first_byte <= r.end
    assert transport.written.startswith(b"GET /a HTTP/1.1\r\nHost: h\r\n")
    assert not transport.aborted and conn.current is None


@pytest.mark.parametrize("piece", [1, 5, 4096])
def test_chunked_response(piece: int) -> None:
    resp = (b"HTTP/1.1 503 Backend fetch failed\r\nTransfer-Encoding: chunked\r\n"
            b"X-Varnish: 5\r\n\r\n"
            b"4\r\nabcd\r\n10;ext=1\r\n0123456789abcdef\r\n0\r\n\r\n")
    done, _, _ = _exchange(_split(resp, piece))
    assert len(done) == 1
    r = done[0]
    assert (r.status, r.bytes, r.cache) == (503, 20, "miss")
    assert not r.ok


def test_incomplete_response_is_not_finished() -> None:
    done, conn, _ = _exchange([b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"])
    assert done == [] and conn.current is not None


def test_garbage_is_a_bad_response_failure() -> None:
    done, _, transport = _exchange([b"SSH-2.0-OpenSSH\r\n\r\n"])
    assert done[0].error == "bad_response" and transport.aborted


def test_connection_close_ends_the_connection() -> None:
    done, _, transport = _exchange(
        [b"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\nConnection: close\r\n\r\nno"])
    assert done[0].status == 404 and not done[0].ok and transport.aborted


def test_no_x_varnish_header() -> None:
    done, _, _ = _exchange([b"HTTP/1.1 204 No Content\r\n\r\n"])
    assert (done[0].status, done[0].cache, done[0].bytes) == (204, "-", 0)
