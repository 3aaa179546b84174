"""Opening a store: reading commands never create one; concurrent first opens both succeed."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from sqlalchemy import text
from store_helpers import cli, make_run

from virtbench.model import VirtbenchError
from virtbench.store import Store
from virtbench.store.migrations import MIGRATIONS, current_version


@pytest.mark.parametrize("args", [
    ["runs"], ["report"], ["report", "latest", "-f", "json"], ["export", "latest", "-o", "x.json"],
    ["compare", "a", "b"], ["history", "exp"], ["serve"],
])
def test_reading_commands_do_not_create_a_store(tmp_path: Path, args: list[str]) -> None:
    typo = tmp_path / "typo.db"
    result = cli(*args, "--store", str(typo))
    assert result.exit_code == 2, result.output
    # One wording wherever a store is missing (serve opens it read-only, the others not).
    assert f"no store at {typo}" in " ".join(result.output.split())
    assert "Traceback" not in result.output
    assert not typo.exists()


def test_run_and_import_create_it(tmp_path: Path) -> None:
    source = Store(str(tmp_path / "source.db"))
    run_id = make_run(source)
    assert cli("export", run_id, "-o", str(tmp_path / "r.json"), "--store",
               str(tmp_path / "source.db")).exit_code == 0
    result = cli("import", str(tmp_path / "r.json"), "--store", str(tmp_path / "new.db"))
    assert result.exit_code == 0, result.output
    assert Store(str(tmp_path / "new.db"), create=False).run(run_id).id == run_id


def test_an_empty_postgresql_database_is_no_store(postgres_url: str) -> None:
    """A database without virtbench's tables is 'no store' for a reading command."""
    from sqlalchemy import create_engine

    admin = create_engine(postgres_url.replace("postgresql://", "postgresql+psycopg://"),
                          isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text("DROP DATABASE IF EXISTS vbstore_empty"))
        conn.execute(text("CREATE DATABASE vbstore_empty"))
    try:
        url = _database(postgres_url, "vbstore_empty")
        with pytest.raises(VirtbenchError, match="no store at"):
            Store(url, create=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text("DROP DATABASE IF EXISTS vbstore_empty WITH (FORCE)"))
        admin.dispose()


def _database(url: str, name: str) -> str:
    """The URL of another database on the same server."""
    from sqlalchemy.engine import make_url

    return make_url(url).set(database=name).render_as_string(hide_password=False)


def _race(location: str, openers: int = 4) -> list[BaseException]:
    """``openers`` threads open (create) the store at once; the errors they met."""
    barrier = threading.Barrier(openers)
    errors: list[BaseException] = []

    def open_it() -> None:
        barrier.wait()
        try:
            Store(location).close()
        except BaseException as exc:  # collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(openers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def test_concurrent_first_opens_of_a_new_sqlite_store(tmp_path: Path) -> None:
    """Once one of two processes failed with 'table schema_version already exists'."""
    for attempt in range(8):
        path = tmp_path / f"new{attempt}.db"
        assert _race(str(path)) == []
        with Store(str(path)).engine.connect() as conn:
            assert current_version(conn) == len(MIGRATIONS)
            assert conn.execute(text("SELECT count(*) FROM schema_version")).scalar() == 1


def test_concurrent_first_opens_of_a_new_postgresql_store(postgres_url: str) -> None:
    from sqlalchemy import create_engine

    admin = create_engine(postgres_url.replace("postgresql://", "postgresql+psycopg://"),
                          isolation_level="AUTOCOMMIT")
    try:
        for attempt in range(4):
            name = f"vbstore_race{attempt}"
            with admin.connect() as conn:
                conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                conn.execute(text(f"CREATE DATABASE {name}"))
            url = _database(postgres_url, name)
            assert _race(url) == []
            store = Store(url)
            with store.engine.connect() as conn:
                assert conn.execute(text("SELECT count(*) FROM schema_version")).scalar() == 1
            store.close()
            with admin.connect() as conn:
                conn.execute(text(f"DROP DATABASE {name} WITH (FORCE)"))
    finally:
        admin.dispose()
