"""A real exported run (SQLite), a fresh copy per test to damage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from store_helpers import make_run

from virtbench.store import Store
from virtbench.store.portable import export_run


@pytest.fixture
def document(tmp_path: Path) -> dict[str, Any]:
    """The parsed export of :func:`make_run` (a fresh copy per test, to damage)."""
    store = Store(str(tmp_path / "source.db"))
    path = tmp_path / "source.json"
    export_run(store, make_run(store), path)
    store.close()
    parsed: dict[str, Any] = json.loads(path.read_text())
    return parsed
