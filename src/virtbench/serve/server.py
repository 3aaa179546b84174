"""Run the app with uvicorn in this process (one worker: the cache lives in it).

The socket is bound before anything is announced: a busy port or an address this machine
does not have is one clear error (exit 1), never a "serving at" line followed by a failure.
"""

from __future__ import annotations

import errno
import ipaddress
import re
import socket
from collections.abc import Callable, Sequence

from virtbench.inputs.ascii_numbers import is_digits
from virtbench.model import RunFailed, VirtbenchError

__all__ = ["bind", "check_host", "check_port", "run_server"]

_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")


def check_port(port: int) -> int:
    """``port`` if it is a TCP port (1-65535); else the option's error (exit 2)."""
    if not 1 <= port <= 65535:
        raise VirtbenchError(f"--port {port}: not a TCP port (1-65535)")
    return port


def check_host(host: str) -> str:
    """``host`` if it is an IP address or a host name (RFC 1123 labels; all-numeric dotted
    names must be IPv4 addresses); else the option's error (exit 2), before any lookup."""
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    labels = host.removesuffix(".").split(".")
    if (len(host) > 253 or not all(_LABEL.fullmatch(label) for label in labels)
            or all(is_digits(label) for label in labels)):
        raise VirtbenchError(f"--host {host!r}: not an IP address or host name")
    return host


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host``:``port``; RunFailed (exit 1) saying why not."""
    try:
        family, kind, proto, _name, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except (OSError, UnicodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise RunFailed(f"cannot serve at --host {host!r}: not an address of this machine "
                        f"({reason})") from exc
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise RunFailed(f"cannot serve at {host}:{port}: the port is in use (another "
                            "`virtbench serve`?); choose another with --port") from exc
        raise RunFailed(f"cannot serve at {host}:{port}: {exc.strerror or exc}") from exc
    return sock


def run_server(location: str, host: str, port: int, announce: Callable[[str], None],
               allowed_hosts: Sequence[str] = ()) -> None:
    """Open the store, bind, then announce the URL and serve until Ctrl-C."""
    check_port(port)
    check_host(host)
    from virtbench.store import Store

    store = Store(location, read_only=True)
    try:
        sock = bind(host, port)
        with sock:
            # Imported once the socket is bound: a refusal above costs no more than start-up;
            # and before the URL is announced, so the app answers as soon as it is shown.
            import uvicorn

            from virtbench.serve.app import create_app

            app = create_app(store, allowed_hosts, bind_host=host)
            shown = f"[{host}]" if ":" in host else host
            announce(f"http://{shown}:{port}/")
            config = uvicorn.Config(app, log_level="warning", access_log=False)
            uvicorn.Server(config).run(sockets=[sock])
    finally:
        store.close()
