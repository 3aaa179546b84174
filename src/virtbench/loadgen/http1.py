"""A minimal HTTP/1.1 client connection (asyncio Protocol) built for timing, not for features.

One request at a time per connection (no pipelining), keep-alive, bodies counted and dropped.
Understands Content-Length, chunked and read-until-close bodies. Records the instant the request
was written, the first response byte, and the end of the body with the caller's clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
from collections.abc import Callable

from virtbench.loadgen.records import RequestRecord

__all__ = ["Http1Connection", "request_bytes"]


def request_bytes(path: str, host: str) -> bytes:
    return (
        f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: virtbench-loadgen\r\n"
        "Accept: */*\r\n\r\n"
    ).encode("latin-1")


_HEAD, _LENGTH, _CHUNK_SIZE, _CHUNK_DATA, _TRAILER, _UNTIL_CLOSE = range(6)
# The headers a response's handling depends on, matched in the lower-cased head; group 2 spans
# the value, which is read from the original head (values keep their case).
_WANTED_HEADERS = re.compile(
    rb"\r\n(content-length|transfer-encoding|connection|x-varnish|age)[ \t]*:([^\r]*)")


class Http1Connection(asyncio.Protocol):
    """Calls ``on_done(conn, record)`` once per request, with the record filled in."""

    def __init__(
        self,
        clock: Callable[[], float],
        on_done: Callable[[Http1Connection, RequestRecord], None],
        on_lost: Callable[[Http1Connection], None],
    ) -> None:
        self.clock = clock
        self.on_done = on_done
        self.on_lost = on_lost
        self.transport: asyncio.Transport | None = None
        self.current: RequestRecord | None = None
        self.closed = False
        self.keep_alive = True
        self._buf = bytearray()
        self._state = _HEAD
        self._remaining = 0
        self._timer: asyncio.TimerHandle | None = None
        self._deadline = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- asyncio callbacks -------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self._loop = asyncio.get_running_loop()
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.current is not None:
            if self._state == _UNTIL_CLOSE and exc is None:
                self._finish()
            else:
                self._fail("reset" if exc is not None else "closed")
        self.on_lost(self)

    def data_received(self, data: bytes) -> None:
        record = self.current
        if record is None:
            # Bytes nobody asked for: the connection is out of sync; drop it.
            self.abort()
            return
        if record.first_byte < 0:
            record.first_byte = self.clock()
        try:
            self._feed(data)
        except ValueError:
            self._fail("bad_response")
            self.abort()

    # -- requests ----------------------------------------------------------------------------
    def send(self, record: RequestRecord, wire: bytes, timeout_s: float) -> None:
        assert self.transport is not None and self._loop is not None and self.current is None
        self.current = record
        self._state = _HEAD
        self._buf.clear()
        self.keep_alive = True
        record.start = self.clock()
        self.transport.write(wire)
        self._deadline = record.start + timeout_s
        # One timer per connection, re-armed only when it fires early, instead of a timer made
        # and cancelled per request: at full load that heap churn was a tenth of our CPU time.
        if self._timer is None:
            self._timer = self._loop.call_later(timeout_s, self._check_deadline)

    def abort(self) -> None:
        if self.transport is not None and not self.closed:
            self.closed = True
            self.transport.abort()

    def _check_deadline(self) -> None:
        self._timer = None
        if self.current is None or self.closed:
            return  # the next send arms a new timer
        remaining = self._deadline - self.clock()
        if remaining > 0:  # a later request than the one the timer was set for
            assert self._loop is not None
            self._timer = self._loop.call_later(remaining, self._check_deadline)
            return
        self._fail("timeout")
        self.abort()

    def _complete(self, error: str) -> None:
        record = self.current
        assert record is not None
        self.current = None
        record.end = self.clock()
        record.error = error
        self.on_done(self, record)

    def _finish(self) -> None:
        self._complete("")
        if not self.keep_alive:
            self.abort()

    def _fail(self, error: str) -> None:
        self._complete(error)

    # -- parsing -----------------------------------------------------------------------------
    def _feed(self, data: bytes) -> None:
        # Only a partial header or chunk-size line is ever kept between calls, so this join
        # copies a few bytes, never a body.
        if self._buf:
            data = bytes(self._buf) + data
            self._buf.clear()
        pos, n = 0, len(data)
        record = self.current
        while record is not None and self.current is record:
            state = self._state
            if state == _LENGTH:
                take = min(self._remaining, n - pos)
                record.bytes += take
                self._remaining -= take
                if self._remaining == 0:
                    self._finish()
                return  # bytes after the body would be an unrequested response: ignored
            if state == _UNTIL_CLOSE:
                record.bytes += n - pos
                return
            if state == _CHUNK_DATA:
                pos = self._chunk_data(record, data, pos, n)
                if pos >= n:
                    return
                continue
            if state == _HEAD:
                end = data.find(b"\r\n\r\n", pos)
                if end < 0:
                    self._keep(data[pos:], 65536)
                    return
                self._head(data[pos:end])
                pos = end + 4
                continue
            pos = self._chunked_line(data, pos)
            if pos < 0:
                return

    def _chunk_data(self, record: RequestRecord, data: bytes, pos: int, n: int) -> int:
        """Take what ``data[pos:n]`` has of the current chunk; the position after it."""
        take = min(self._remaining, n - pos)
        # _remaining counts the chunk's data and then its CRLF; only data is body.
        record.bytes += min(take, max(0, self._remaining - 2))
        self._remaining -= take
        if self._remaining == 0:
            self._state = _CHUNK_SIZE
        return pos + take

    def _chunked_line(self, data: bytes, pos: int) -> int:
        """Read a chunk-size or trailer line at ``pos``; the position after it, or -1 when
        there is nothing more to read now (a partial line kept, or the response complete)."""
        eol = data.find(b"\r\n", pos)
        if eol < 0:
            self._keep(data[pos:], 4096)
            return -1
        line = data[pos:eol]
        if self._state == _CHUNK_SIZE:
            size = int(line.split(b";", 1)[0].strip(), 16)
            if size == 0:
                self._state = _TRAILER
            else:
                self._state = _CHUNK_DATA
                self._remaining = size + 2
        elif line == b"":  # the empty line that ends the trailers
            self._finish()
            return -1
        return eol + 2

    def _keep(self, rest: bytes, limit: int) -> None:
        self._buf += rest
        if len(self._buf) > limit:
            raise ValueError("response line or header too long")

    def _head(self, head: bytes) -> None:
        record = self.current
        assert record is not None
        first_end = head.find(b"\r\n")
        status_line = (head if first_end < 0 else head[:first_end]).split(b" ", 2)
        if len(status_line) < 2 or not status_line[0].startswith(b"HTTP/1."):
            raise ValueError("not an HTTP/1.x response")
        record.status = int(status_line[1])
        self.keep_alive = status_line[0] == b"HTTP/1.1"
        length, chunked = self._scan_headers(record, head)
        if record.status in (204, 304) or 100 <= record.status < 200:
            self._finish()
        elif chunked:
            self._state = _CHUNK_SIZE
        elif length >= 0:
            self._state = _LENGTH
            self._remaining = length
            if length == 0:
                self._finish()
        else:
            self._state = _UNTIL_CLOSE
            self.keep_alive = False

    def _scan_headers(self, record: RequestRecord, head: bytes) -> tuple[int, bool]:
        """The body's Content-Length (-1: none) and whether it is chunked; Connection, the
        cache verdict (X-Varnish) and Age noted on the way."""
        # One C-level scan for the few headers we use instead of splitting every line: this
        # runs once per response and, at thousands of responses a second, per-line work shows.
        length = -1
        chunked = False
        for match in _WANTED_HEADERS.finditer(head.lower()):
            key = match.group(1)
            value = head[match.start(2):match.end(2)].strip()
            if key == b"content-length":
                length = int(value)
            elif key == b"transfer-encoding":
                chunked = b"chunked" in value.lower()
            elif key == b"connection":
                if value.lower() == b"close":
                    self.keep_alive = False
                elif value.lower() == b"keep-alive":
                    self.keep_alive = True
            elif key == b"x-varnish":
                record.cache = "hit" if len(value.split()) >= 2 else "miss"
            else:
                with contextlib.suppress(ValueError):
                    record.age_s = int(value)
        return length, chunked

