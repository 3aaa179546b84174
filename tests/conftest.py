"""Shared fixtures: result stores on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from virtbench.store import Store

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """VIRTBENCH_TEST_PG_URL (scripts/test.sh starts a server), else start one here."""
    url = os.environ.get("VIRTBENCH_TEST_PG_URL")
    if url:
        yield url
        return
    if not list(Path("/usr/lib/postgresql").glob("*/bin/initdb")):
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    workdir = tempfile.mkdtemp(prefix="vb-pg.")
    script = str(REPO / "scripts" / "postgres.sh")
    url = subprocess.run(["bash", script, "start", workdir], check=True, capture_output=True,
                         text=True).stdout.strip()
    try:
        yield url
    finally:
        subprocess.run(["bash", script, "stop", workdir], check=False)
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        st = Store(str(tmp_path / "store.db"))
    else:
        st = Store(request.getfixturevalue("postgres_url"))
        _wipe(st)
    yield st
    st.close()


def _wipe(st: Store) -> None:
    for run in st.runs():
        st.delete_run(run.id)
    with st.engine.begin() as conn:
        from virtbench.store import schema

        conn.execute(schema.saved_state.delete())


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A private directory the nginx and varnish users can traverse (pytest's tmp is 0700)."""
    path = Path(tempfile.mkdtemp(prefix="vb-test-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
