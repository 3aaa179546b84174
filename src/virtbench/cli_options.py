"""Options several commands share, declared once so that each means the same everywhere."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["DEFAULT_STORE", "JsonOpt", "OutputOpt", "StoreOpt"]

StoreOpt = Annotated[str, typer.Option(
    "--store", "-s", envvar="VIRTBENCH_STORE",
    help="SQLite file or postgresql://user@host/db URL")]
DEFAULT_STORE = "virtbench.db"
OutputOpt = Annotated[Path | None, typer.Option("--output", "-o")]
JsonOpt = Annotated[bool, typer.Option("--json")]
