"""A SQLite store read through Python's own ``sqlite3``: the reads of :class:`StoreReader`
without importing SQLAlchemy, for the commands that only read (`runs`, `report`, `compare`,
`history`). Any other store (PostgreSQL, a schema this virtbench must migrate first, a URL
with options) is opened as the full :class:`~virtbench.store.store.Store`."""

from __future__ import annotations

import contextlib
import itertools
import sqlite3
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from virtbench.model import VirtbenchError
from virtbench.store.reading import (
    BUSY_TIMEOUT_MS,
    NO_STORE,
    SCHEMA_VERSION,
    StoreFailed,
    StoreReader,
    schema_number,
    store_url,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["SqliteReader", "open_reader"]


def open_reader(location: str) -> StoreReader:
    """The store at ``location`` to read (an existing one: nothing is created)."""
    url = store_url(location)
    if url.startswith("sqlite:///") and "?" not in url:
        path = Path(url.removeprefix("sqlite:///"))
        if not path.is_file() or path.stat().st_size == 0:
            raise VirtbenchError(NO_STORE.format(location))
        reader = SqliteReader(location, url, path)
        if reader.schema_version() == SCHEMA_VERSION:
            return reader
        reader.close()  # an older schema: the full store migrates it, as it always did
    from virtbench.store.store import Store

    return Store(location, create=False)


class SqliteReader(StoreReader):
    """Reads only: the connection refuses every write (``PRAGMA query_only``)."""

    def __init__(self, location: str, url: str, path: Path) -> None:
        self.location = location
        self.url = url
        self.dialect = "sqlite"
        try:
            self._connection = sqlite3.connect(path)
            self._connection.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            self._connection.execute("PRAGMA query_only=ON")
        except sqlite3.DatabaseError as exc:  # not a database, unreadable
            raise VirtbenchError(f"cannot open result store {location!r}: {exc}") from exc

    def schema_version(self) -> int:
        """The stored schema's version; 0 for a file without virtbench's tables."""
        try:
            row = self._connection.execute("SELECT version FROM schema_version").fetchone()
        except sqlite3.OperationalError:  # no such table
            return 0
        except sqlite3.DatabaseError as exc:
            raise VirtbenchError(f"cannot open result store {self.location!r}: {exc}") from exc
        return schema_number(row[0], self.location) if row else 0

    def close(self) -> None:
        self._connection.close()

    @contextlib.contextmanager
    def _said_once(self) -> Iterator[None]:
        """The database's own errors (locked, damaged) said once, as the full store says them,
        whether they come from running the SQL or from fetching its rows; an error in what was
        asked (bad SQL) stays as it is."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) or type(exc) is sqlite3.DatabaseError:
                raise StoreFailed(self.location, str(exc).strip()) from exc
            raise

    def _rows(self, sql: str, params: Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
        with self._said_once():
            return self._connection.execute(sql, dict(params or {})).fetchall()

    def _mappings(self, sql: str, params: Mapping[str, Any] | None = None
                  ) -> list[dict[str, Any]]:
        with self._said_once():
            cursor = self._connection.execute(sql, dict(params or {}))
            names = [column[0] for column in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def _float_table(self, sql: str, params: Mapping[str, Any], width: int
                     ) -> npt.NDArray[np.float64]:
        """As the base class, iterating the cursor itself (no generator step per row)."""
        import numpy as np

        with self._said_once():
            cursor = self._connection.execute(sql, dict(params))
            flat = itertools.chain.from_iterable(cursor)
            return np.fromiter(flat, np.float64).reshape(-1, width)

    def _stream(self, sql: str, params: Mapping[str, Any] | None = None
                ) -> Iterator[tuple[Any, ...]]:
        with self._said_once():
            cursor = self._connection.execute(sql, dict(params or {}))
            while rows := cursor.fetchmany(50_000):
                yield from rows
