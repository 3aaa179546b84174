"""Fixtures for report tests: a real SQLite store (report_fill.py fills it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from virtbench.store import Store


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(str(tmp_path / "results.sqlite"))
    yield s
    s.close()
