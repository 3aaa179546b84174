"""Result store: schema, migrations, reading and writing runs, portable export/import.

The names are looked up when first used: a command that only reads a SQLite store imports
:mod:`virtbench.store.reading` and never SQLAlchemy (store/sqlite_reader.py says why)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from virtbench.store.reading import RunInfo, SampleRow, StoreFailed, StoreReader, store_url
    from virtbench.store.sqlite_reader import open_reader
    from virtbench.store.store import Store, TrialRecord

__all__ = ["RunInfo", "SampleRow", "Store", "StoreFailed", "StoreReader", "TrialRecord",
           "open_reader", "store_url"]

_READING = frozenset({"RunInfo", "SampleRow", "StoreFailed", "StoreReader", "store_url"})


def __getattr__(name: str) -> Any:
    # static imports (the layer test reads them), each module only when a name of it is asked
    module: Any
    if name in _READING:
        from virtbench.store import reading as module
    elif name == "open_reader":
        from virtbench.store import sqlite_reader as module
    elif name in ("Store", "TrialRecord"):
        from virtbench.store import store as module
    else:
        raise AttributeError(f"module 'virtbench.store' has no attribute {name!r}")
    return getattr(module, name)
