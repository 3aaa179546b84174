"""A store location's passwords, masked wherever a location is shown (store/redaction.py): as
SQLAlchemy's ``render_as_string(hide_password=True)`` masks a URL's, plus the query's
password parameters and a libpq connection string's, and refused where a password would be
split or written into a file name. The commands themselves: tests/unit/cli/test_store_secrets.py."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import make_url

from virtbench.model import VirtbenchError
from virtbench.store import Store
from virtbench.store.redaction import check_location, scrubbed, shown

EXAMPLES = 200

PASSWORD = "Vb-pw-9q2z"


@pytest.mark.parametrize("url", [
    f"postgresql://bench:{PASSWORD}@db.example/virtbench",
    f"postgresql+psycopg://bench:{PASSWORD}@db.example:5433/virtbench",
    f"postgresql://bench:{PASSWORD}@/virtbench?host=/run/postgresql",
    f"postgresql://bench:{PASSWORD}@[::1]:5432/virtbench",
    "postgresql://bench:@db.example/virtbench",  # an empty password is masked too
    "postgresql://bench@db.example/virtbench",  # no password: as given
    "postgresql://db.example:5432/virtbench",
    f"postgresql://user@server:{PASSWORD}@db.example/virtbench",  # Azure's user@server names
])
def test_a_url_is_masked_as_sqlalchemy_masks_it(url: str) -> None:
    # the same URL as SQLAlchemy reads it (its rendering re-encodes: "/" as %2F), "***" for
    # the password SQLAlchemy's rendering hides
    given, masked = make_url(url), make_url(shown(url))
    assert masked.password == (None if given.password is None else "***")
    assert masked.set(password="x") == given.set(password="x")
    assert PASSWORD not in shown(url)


@pytest.mark.parametrize(("url", "masked"), [
    (f"postgresql://bench@/vb?host=/tmp/pg&password={PASSWORD}",
     "postgresql://bench@/vb?host=/tmp/pg&password=***"),
    (f"postgresql://bench:{PASSWORD}@h/vb?sslpassword={PASSWORD}x&sslmode=require",
     "postgresql://bench:***@h/vb?sslpassword=***&sslmode=require"),
    (f"postgresql://bench@h/vb?PASSWORD={PASSWORD}", "postgresql://bench@h/vb?PASSWORD=***"),
    (f"postgresql://bench@h/vb?p%61ssword={PASSWORD}", "postgresql://bench@h/vb?p%61ssword=***"),
])
def test_a_password_parameter_of_the_query_is_masked(url: str, masked: str) -> None:
    assert shown(url) == masked


def test_a_conninfo_password_is_masked_quoted_or_not() -> None:
    conninfo = f"host=/tmp user=bench password='{PASSWORD} it\\'s' dbname=vb"
    assert shown(conninfo) == "host=/tmp user=bench password=*** dbname=vb"
    assert shown(f"password={PASSWORD} host=h") == "password=*** host=h"
    assert scrubbed(f"said: {PASSWORD} it's.", conninfo) == "said: ***."


@pytest.mark.parametrize("path", ["virtbench.db", "/data/results:v2@x.db", "sqlite:////tmp/x.db",
                                  "runs/2026-01-01T10:00.db", "mysql://u@127.0.0.1/x"])
def test_a_location_without_password_is_shown_as_given(path: str) -> None:
    assert shown(path) == path
    assert scrubbed(f"cannot open {path}", path) == f"cannot open {path}"


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.text(min_size=1, max_size=30))
@example("p@ss/w?rd:#&password=x")
def test_any_password_as_written_or_encoded_is_masked_whole(password: str) -> None:
    """Unencoded, a password may hold ``@``, ``/``, ``?``: masked up to the last ``@`` (where
    SQLAlchemy would split it, the URL is refused)."""
    assert shown(f"postgresql://u:{password}@h/d") == "postgresql://u:***@h/d"
    assert shown(f"postgresql://u:{quote(password, safe='')}@h/d") == "postgresql://u:***@h/d"
    assert shown(f"postgresql://u@h/d?password={quote_plus(password)}") == (
        "postgresql://u@h/d?password=***")
    said = f"failed for {password!r} ({quote(password, safe='')})"
    assert password not in scrubbed(said, f"postgresql://u:{quote(password, safe='')}@h/d")


@pytest.mark.parametrize(("location", "reason"), [
    (f"host=/tmp/pg user=bench password={PASSWORD} dbname=vb", "a libpq connection string"),
    (f"postgresql:/bench:{PASSWORD}@h/vb", "not a URL"),
    (f"postgres:bench:{PASSWORD}@h/vb", "not a URL"),
    (f"postgresql://bench:{PASSWORD}@x@h/vb", "more than one '@'"),
])
def test_what_would_leak_a_password_is_refused_without_it(location: str, reason: str,
                                                          tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(VirtbenchError) as refused:
        check_location(location)
    assert reason in str(refused.value) and PASSWORD not in str(refused.value)
    assert "PGPASSWORD" in str(refused.value)
    with pytest.raises(VirtbenchError, match=reason):
        Store(location)  # opened as a SQLite file before: the password in its name
    assert list(tmp_path.iterdir()) == []


def test_a_file_name_with_an_equals_sign_is_still_a_file(tmp_path: Path) -> None:
    check_location("results=2026.db")
    check_location("hostile=x y=z.db")  # not libpq's keywords: a file name
