"""Options several commands share, declared once so that each means the same everywhere, the
parsers every numeric option uses (finite numbers, ports: virtbench.inputs.values), and how a
command opens the store its --store names."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from virtbench.inputs.values import number_parser, port_number

if TYPE_CHECKING:
    from virtbench.store import Store, StoreReader

__all__ = ["DEFAULT_SERVE_PORT", "DEFAULT_STORE", "JsonOpt", "OutputOpt", "PortOpt", "StoreOpt",
           "number_parser", "open_reader", "open_store", "port_number"]

StoreOpt = Annotated[str, typer.Option(
    "--store", "-s", envvar="VIRTBENCH_STORE",
    help="SQLite file or postgresql://user@host/db URL")]
DEFAULT_STORE = "virtbench.db"
DEFAULT_SERVE_PORT = 8023
OutputOpt = Annotated[Path | None, typer.Option("--output", "-o")]
JsonOpt = Annotated[bool, typer.Option("--json")]
PortOpt = Annotated[int, typer.Option(parser=port_number, metavar="PORT",
                                      help="TCP port (1-65535)")]


def open_store(location: str, *, create: bool = False) -> Store:
    """The store of a command; only `run`, `calibrate` and `import` create one that does not
    exist. (SQLAlchemy is imported here, by the commands that read or write a store.)"""
    from virtbench.store import Store

    return Store(location, create=create)


def open_reader(location: str) -> StoreReader:
    """The existing store of a command that only reads it: a current SQLite store without
    SQLAlchemy (store/sqlite_reader.py), any other as the full store."""
    from virtbench.store.sqlite_reader import open_reader as open_existing

    return open_existing(location)
