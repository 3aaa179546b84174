"""The door of `virtbench serve`: what a request may be, and the headers every answer carries.

One ASGI middleware in front of the app, so that no route can forget a rule:
- only GET and HEAD (the app is read-only): anything else is 405;
- the Host header must name this server (loopback names, the bind address, `--allow-host`):
  a web page on another name that resolves to 127.0.0.1 (DNS rebinding) gets 400, not the store
  (Starlette's TrustedHostMiddleware);
- a request asks for a bounded amount of work: the path, the query string and the runs of one
  comparison are capped, with a one-line 400 page naming the limit;
- every answer, errors included, carries a strict Content-Security-Policy and the
  nosniff / frame / referrer headers.
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette._utils import parse_host_header
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from virtbench.model import VirtbenchError

__all__ = ["LOOPBACK_HOSTS", "MAX_COMPARE", "MAX_PATH", "MAX_QUERY", "SECURITY_HEADERS",
           "RequestGuard", "allowed_host", "host_pattern"]

MAX_COMPARE = 20
"""Most runs one comparison may ask for: each is analysed (a run of 2,000 took 74 s)."""
MAX_QUERY = 4096
"""Longest query string, in bytes (20 run ids and the runs page's filters fit many times)."""
MAX_PATH = 1024
"""Longest path, in bytes (a run id is 12 characters)."""

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")

SECURITY_HEADERS = {
    # Pages load only this server's script and style sheet; no inline script or style, no
    # plugin, no framing by another site, forms post nowhere else.
    "content-security-policy": ("default-src 'self'; img-src 'self' data:; object-src 'none'; "
                                "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"),
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cross-origin-resource-policy": "same-origin",
}
_ENCODED = [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
METHODS = ("GET", "HEAD")


def host_pattern(host: str) -> str:
    """A bind address or host name as the Host header spells it (IPv6 literals bracketed)."""
    host = host.strip().lower()
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def allowed_host(name: str) -> str:
    """An --allow-host value as the Host header spells it; a wildcard, a port, a URL or
    anything that is not one host name or address is refused (exit 2)."""
    pattern = host_pattern(name)
    parsed = parse_host_header(pattern)
    if not pattern or "*" in pattern or parsed is None or parsed.port is not None:
        raise VirtbenchError(f"--allow-host {name!r}: not a host name or address (one name, "
                             "no port, no wildcard)")
    return pattern


class RequestGuard:
    """The rules above, around ``app``; ``allowed_hosts`` are added to the loopback names."""

    def __init__(self, app: ASGIApp, allowed_hosts: Iterable[str] = ()) -> None:
        hosts = dict.fromkeys([*LOOPBACK_HOSTS, *(host_pattern(h) for h in allowed_hosts)])
        self.hosts = [h for h in hosts if h and h != "*"]  # "*" would switch the check off
        self.app = TrustedHostMiddleware(app, allowed_hosts=self.hosts, www_redirect=False)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = SECURITY_HEADERS.keys()
                kept = [(k, v) for k, v in message.get("headers", [])
                        if k.decode("latin-1").lower() not in names]
                message = {**message, "headers": [*kept, *_ENCODED]}
            await send(message)

        refusal = self.refusal(scope)
        if refusal is not None:
            await refusal(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)

    @staticmethod
    def refusal(scope: Scope) -> PlainTextResponse | None:
        """The answer to a request the app must not serve, or None."""
        if scope["method"] not in METHODS:
            return PlainTextResponse(f"405: {scope['method']} not allowed: this server is "
                                     "read-only (GET, HEAD)\n", 405,
                                     headers={"Allow": ", ".join(METHODS)})
        path = scope.get("raw_path") or scope["path"].encode()
        if len(path) > MAX_PATH:
            return PlainTextResponse(f"400: the path is longer than {MAX_PATH} bytes\n", 400)
        query = scope.get("query_string", b"")
        if len(query) > MAX_QUERY:
            return PlainTextResponse(
                f"400: the query string is longer than {MAX_QUERY} bytes\n", 400)
        if "\x00" in scope["path"] or b"%00" in query or b"\x00" in query:
            # no stored name holds one (PostgreSQL refuses NUL in text): a probe, not a query
            return PlainTextResponse("400: NUL character in the request\n", 400)
        return None
