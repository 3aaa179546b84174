"""One grammar for run ids and run references, wherever they enter: the store's API (used by
every command and by serve's URLs), `import` (test_store_import_checks.py), CLI arguments."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from served import BASE_URL
from starlette.testclient import TestClient
from store_helpers import cli, make_run

from virtbench.model import VirtbenchError
from virtbench.serve import create_app
from virtbench.store import Store
from virtbench.store.ids import NAME_PATTERN, RUN_ID_PATTERN, check_run_id, check_run_ref

EXAMPLES = 200
"""Examples of the property test (docs/cli.md counts them)."""
HOSTILE_IDS = ["../../../../tmp/x", "..", ".", "a/b", "a\r\nSet-Cookie: x=1", "a\x1b[2J",
               "", "x" * 201, "-rf", "a b", "a%2F..", "é"]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "s.db"
    make_run(Store(str(path)))
    return path


@pytest.mark.parametrize("ref", HOSTILE_IDS)
def test_cli_refuses_a_hostile_run_reference(db: Path, tmp_path: Path, ref: str) -> None:
    for args in (["report", ref], ["export", ref, "-o", str(tmp_path / "o.json")],
                 ["compare", "latest", ref] if "/" not in ref else ["report", "latest", ref]):
        result = cli(*args, "--store", str(db))
        assert result.exit_code == 2, (args, result.output)
        assert "Traceback" not in result.output
        if ref and not re.fullmatch(r"[-A-Za-z0-9._/]*", ref):
            assert "neither a run id nor an experiment name" in result.output, result.output
    assert not (tmp_path / "o.json").exists()


@pytest.mark.parametrize("ref", [r for r in HOSTILE_IDS if r not in ("", ".", "..")])
def test_serve_answers_404_to_a_hostile_run_in_a_url(db: Path, ref: str) -> None:
    from urllib.parse import quote

    with TestClient(create_app(Store(str(db), read_only=True)), base_url=BASE_URL) as client:
        for page in ("", "/progress", "/download/export"):
            response = client.get(f"/runs/{quote(ref, safe='')}{page}")
            assert response.status_code in (404, 307, 308), (ref, page, response.status_code)


def test_the_store_creates_and_finds_runs_by_the_grammar(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "s.db"))
    with pytest.raises(VirtbenchError, match="is not a run id"):
        store.create_run(experiment="e", description="", spec_yaml="", spec_path="", seed=1,
                         host="h", target="t", baseline="a", version="v", run_id="../x")
    run_id = make_run(store)
    assert re.fullmatch(RUN_ID_PATTERN, run_id)
    assert store.run(run_id[:5]).id == run_id and store.run("exp").id == run_id


def test_an_older_stores_id_outside_the_grammar_is_read_by_that_exact_id(db: Path) -> None:
    """Written before ids were checked: still readable (report, serve), by its exact id only;
    a prefix of it, or any other reference outside the grammar, is refused."""
    import sqlite3

    legacy = "a\r\nSet-Cookie: x=1"
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE runs SET id = ?", (legacy,))
    store = Store(str(db))
    assert store.run(legacy).id == legacy
    for ref in (legacy[:5], legacy + "x", "../../x"):
        with pytest.raises(VirtbenchError, match="neither a run id nor an experiment name"):
            store.run(ref)
    store.close()


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.text(max_size=40))
def test_a_reference_is_accepted_exactly_when_it_matches_the_grammar(ref: str) -> None:
    if re.fullmatch(NAME_PATTERN, ref):
        assert check_run_ref(ref) == ref
    else:
        with pytest.raises(VirtbenchError):
            check_run_ref(ref)
    if re.fullmatch(RUN_ID_PATTERN, ref):
        assert check_run_id(ref) == ref and not ref.startswith(".")
    else:
        with pytest.raises(VirtbenchError):
            check_run_id(ref)
