"""`virtbench serve`: the read-only web app over a store (virtbench.serve). A bad option, a
missing store or a busy port is refused before the web app is imported."""

from __future__ import annotations

from typing import Annotated

import typer

from virtbench import safetext
from virtbench.cli import consoles
from virtbench.cli.options import DEFAULT_SERVE_PORT, DEFAULT_STORE, PortOpt, StoreOpt

__all__ = ["app", "serve"]

app = typer.Typer()


@app.command()
def serve(
    store: StoreOpt = DEFAULT_STORE,
    port: PortOpt = DEFAULT_SERVE_PORT,
    host: Annotated[str, typer.Option(
        help="address to bind; anything but loopback exposes the results to the network")]
    = "127.0.0.1",
    allow_host: Annotated[list[str] | None, typer.Option(
        "--allow-host", help="a host name the pages may be reached by, besides loopback "
                             "names and --host (repeatable)")] = None,
) -> None:
    """A read-only web app over the store: runs, live progress, reports, downloads."""
    from virtbench.serve.guard import allowed_host
    from virtbench.serve.server import run_server
    from virtbench.store.redaction import shown

    names = [allowed_host(name) for name in allow_host or []]

    def announce(url: str) -> None:  # called once the socket is bound
        if host not in ("127.0.0.1", "localhost", "::1"):
            consoles.err.print(f"[yellow]warning:[/] binding {safetext.markup(host)}: anyone who "
                               "reaches this address can read every result in the store "
                               "(the app has no login)", highlight=False)
        consoles.err.print(safetext.text(f"serving {shown(store)} at {url} (read-only; Ctrl-C "
                                         "stops)"), highlight=False)

    run_server(store, host, port, announce, names)
