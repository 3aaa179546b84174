"""A test client over the app on the parametrised store (SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from served import BASE_URL
from starlette.testclient import TestClient

from virtbench.serve import create_app
from virtbench.store import Store


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    """The app over the parametrised store (SQLite and PostgreSQL, tests/conftest.py)."""
    with TestClient(create_app(store), base_url=BASE_URL) as test_client:
        yield test_client
