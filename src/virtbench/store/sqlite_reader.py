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

from virtbench import safetext
from virtbench.model import VirtbenchError
from virtbench.store.columns import COLUMNS
from virtbench.store.reading import (
    BUSY_TIMEOUT_MS,
    NO_STORE,
    READABLE_SCHEMAS,
    StoreFailed,
    StoreReader,
    schema_number,
    store_url,
)
from virtbench.store.redaction import shown

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["SqliteReader", "check_store_file", "connect_read_only", "open_reader"]

# virtbench's own tables (store/columns.py); SQLite's own are named sqlite_*.
_OURS = frozenset(COLUMNS)


def connect_read_only(path: Path, *, check_same_thread: bool = True) -> sqlite3.Connection:
    """A connection that reads ``path`` and can write nothing, also on a read-only filesystem:
    ``mode=ro``, then (when SQLite cannot open that, as for a store in WAL mode whose -shm
    file it may not create) ``immutable=1``, which reads the file as it is and needs no lock:
    only where nothing can write it either (no writer keeps a -shm beside it).
    ``check_same_thread``: False for SQLAlchemy's pool, which hands connections to threads."""
    uri = path.as_uri()
    connection = sqlite3.connect(f"{uri}?mode=ro", uri=True,
                                 check_same_thread=check_same_thread)
    try:
        connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError as exc:
        if "unable to open" not in str(exc):
            connection.close()
            raise
        connection.close()
        connection = sqlite3.connect(f"{uri}?immutable=1", uri=True,
                                     check_same_thread=check_same_thread)
    connection.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    connection.execute("PRAGMA query_only=ON")
    return connection


def check_store_file(path: Path, location: str) -> None:
    """Refuse, touching nothing, a ``path`` that a writing command must not use as its store:
    anything but a regular file (a device such as /dev/null, a directory, a FIFO), and a
    SQLite database holding tables of another program (virtbench would add its own beside
    them). A path that does not exist yet, or an empty file, is a new store."""
    if not path.exists():
        return
    if not path.is_file():
        kind = "a directory" if path.is_dir() else "a device, FIFO or socket"
        raise VirtbenchError(f"cannot use {location!r} as a result store: it is {kind}, not a "
                             "file (give the path of a new or existing store)")
    if path.stat().st_size == 0:
        return
    try:
        connection = connect_read_only(path)
        try:
            names = [row[0] for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        finally:
            connection.close()
    except sqlite3.DatabaseError as exc:  # not a database: said as the store says it
        raise VirtbenchError(f"cannot open result store {location!r}: {exc}") from exc
    foreign = [name for name in names if name not in _OURS and not name.startswith("sqlite_")]
    if foreign:
        names_shown = ", ".join(safetext.visible(name)[:60] for name in foreign[:5])
        more = f" and {len(foreign) - 5} more" if len(foreign) > 5 else ""
        raise VirtbenchError(f"cannot use {location!r} as a result store: it is a SQLite "
                             f"database of another program (tables {names_shown}{more}); give "
                             "another file")


def open_reader(location: str) -> StoreReader:
    """The store at ``location`` to read (an existing one: nothing is created)."""
    url = store_url(location)
    if url.startswith("sqlite:///") and "?" not in url:
        path = Path(url.removeprefix("sqlite:///"))
        if not path.is_file() or path.stat().st_size == 0:
            raise VirtbenchError(NO_STORE.format(shown(location)))
        reader = SqliteReader(location, url, path)
        if reader.schema_version() in READABLE_SCHEMAS:  # current, or read as it is
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
            self._connection = connect_read_only(path)
        except sqlite3.DatabaseError as exc:  # not a database, unreadable
            raise VirtbenchError(f"cannot open result store {shown(location)!r}: {exc}") from exc

    def schema_version(self) -> int:
        """The stored schema's version; 0 for a file without virtbench's tables."""
        try:
            row = self._connection.execute("SELECT version FROM schema_version").fetchone()
        except sqlite3.OperationalError:  # no such table
            return 0
        except sqlite3.DatabaseError as exc:
            raise VirtbenchError(f"cannot open result store {self.shown!r}: {exc}") from exc
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
