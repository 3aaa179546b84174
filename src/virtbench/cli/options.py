"""Options several commands share, declared once so that each means the same everywhere, and
the parsers every numeric option uses (finite numbers, ports: virtbench.inputs.values)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from virtbench.inputs.values import number_parser, port_number

__all__ = ["DEFAULT_SERVE_PORT", "DEFAULT_STORE", "JsonOpt", "OutputOpt", "PortOpt", "StoreOpt",
           "number_parser", "port_number"]

StoreOpt = Annotated[str, typer.Option(
    "--store", "-s", envvar="VIRTBENCH_STORE",
    help="SQLite file or postgresql://user@host/db URL")]
DEFAULT_STORE = "virtbench.db"
DEFAULT_SERVE_PORT = 8023
OutputOpt = Annotated[Path | None, typer.Option("--output", "-o")]
JsonOpt = Annotated[bool, typer.Option("--json")]
PortOpt = Annotated[int, typer.Option(parser=port_number, metavar="PORT",
                                      help="TCP port (1-65535)")]
