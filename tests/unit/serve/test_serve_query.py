"""Query values the pages cannot take are a 400 naming the parameter, never a guess
(``?page=-1`` was page 1, ``?any_spec=0`` was on); the progress JSON shows stored text with
its bidi and control characters as visible escapes, as the pages do."""

from __future__ import annotations

import json
import re

import pytest
from serve_fill import make_run
from starlette.testclient import TestClient

from virtbench.store import Store


def _error(answer: object) -> str:
    text = getattr(answer, "text", "")
    found = re.search(r'<p class="note" id="error">([^<]*)</p>', text)
    assert found, text[:300]
    return found.group(1)


@pytest.mark.parametrize("value", ["-1", "0", "abc", "1e9", "+1", " 1", "1.0", "2", "9" * 300])
def test_a_bad_page_is_refused(store: Store, client: TestClient, value: str) -> None:
    make_run(store)
    answer = client.get("/runs", params={"page": value})
    assert answer.status_code == 400
    message = _error(answer)
    assert message.startswith("page: ") and "this list has 1 page (1-1)" in message
    assert "\n" not in message


def test_page_one_and_no_page_are_the_same_list(store: Store, client: TestClient) -> None:
    make_run(store)
    assert client.get("/runs?page=1").status_code == 200
    assert client.get("/runs?page=1").text == client.get("/runs").text


@pytest.mark.parametrize(("query", "start"), [
    ("page=1&page=1", "page: given 2 times"),
    ("status=bogus", "status: 'bogus' is not a run status (abandoned, complete, failed, "),
    ("status=running&status=complete", "status: given 2 times"),
    ("since=2026-05-02&until=2026-05-01", "since: 2026-05-02 is after until (2026-05-01)"),
    ("since=yesterday", "since: 'yesterday' is not a date (YYYY-MM-DD)"),
    ("q=a&q=b", "q: given 2 times"),
])
def test_bad_filters_are_refused_on_the_page_and_its_downloads(
        store: Store, client: TestClient, query: str, start: str) -> None:
    make_run(store)
    answer = client.get(f"/runs?{query}")
    assert answer.status_code == 400
    assert _error(answer).startswith(start.replace("'", "&#39;"))
    if query.startswith("page"):  # the downloads hold the whole list: they take no page
        return
    for download in ("/runs.csv", "/runs.json"):
        assert client.get(f"{download}?{query}").status_code == 400


def test_history_flags_are_one_or_zero(store: Store, client: TestClient) -> None:
    for _ in range(3):
        make_run(store, "nightly")
    plain = client.get("/history?experiment=nightly")
    assert plain.status_code == 200
    off = client.get("/history?experiment=nightly&any_spec=0&any_host=0")
    assert off.status_code == 200 and off.text.count("<article") == plain.text.count("<article")
    assert client.get("/history?experiment=nightly&any_host=1").status_code == 200
    for query in ("any_spec=yes", "any_host=true", "any_spec=1&any_spec=1", "host=a&host=b"):
        answer = client.get(f"/history?experiment=nightly&{query}")
        assert answer.status_code == 400, query
        assert _error(answer).split(":")[0] == query.split("=")[0]
        assert client.get(f"/history.csv?experiment=nightly&{query}").status_code == 400


def test_progress_json_shows_bidi_and_control_characters_as_escapes(
        store: Store, client: TestClient) -> None:
    run_id = make_run(store, description="x")
    store.set_run_status(run_id, "complete", "done \u202eevil\u202c\x1b[2J")
    answer = client.get(f"/runs/{run_id}/progress")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("application/json")
    raw = answer.content.decode("utf-8")
    assert "\u202e" not in raw and "\x1b" not in raw
    shown = json.loads(raw)
    assert shown["stop_reason"] == "done \\u202eevil\\u202c\\x1b[2J"
    assert shown["id"] == run_id and shown["status"] == "complete"
