"""`virtbench parse TOOL FILE`: its options, declared once for the app. What a parse does is
virtbench.cli.parsing's, which the entry point (virtbench.cli.entry) also calls straight away
for a plain call, without this module or the app."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from virtbench.cli.options import JsonOpt

__all__ = ["app", "parse"]

app = typer.Typer()


@app.command()
def parse(
    tool: Annotated[str, typer.Argument(help="e.g. iperf3, irtt, fio, bonnie++, varnishstat")],
    file: Annotated[Path, typer.Argument(help="a saved output of the tool, plain or gzip/xz/"
                                         "zstd ('-' for stdin)")],
    as_json: JsonOpt = False,
    flow: Annotated[str | None, typer.Option(
        help="pcap only: udp, tcp, tcp:5201 or PROTO:SRC:SPORT:DST:DPORT")] = None,
) -> None:
    """Turn a saved tool output (or a pcap/pcapng capture, per flow) into normalised metrics."""
    from virtbench.cli.parsing import parse_command

    parse_command(tool, file, as_json, flow)
