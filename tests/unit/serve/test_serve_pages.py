"""The app's pages over real SQLite and PostgreSQL stores: escaping, filters, cache, downloads."""

from __future__ import annotations

import gzip
import json
import re
import threading
import time
from collections.abc import Callable

from serve_fill import HOSTILE, add_trial, make_run
from served import BASE_URL
from starlette.testclient import TestClient
from waits import join

from virtbench.analysis import analyse
from virtbench.plugins import build_sections
from virtbench.report.html import render_html
from virtbench.serve import create_app
from virtbench.serve.svgstyle import presentation_attributes
from virtbench.store import Store


def test_names_from_the_store_render_as_text(store: Store, client: TestClient) -> None:
    hostile = make_run(store, HOSTILE, host=HOSTILE, variants=(HOSTILE, "plain"),
                       workload=HOSTILE, label=HOSTILE, description=HOSTILE)
    other = make_run(store, "exp")
    pages = [f"/runs?q={HOSTILE}", f"/runs/{hostile}", f"/runs/{hostile}/body",
             f"/compare?run={hostile}&run={other}", f"/compare?run={HOSTILE}&run={other}"]
    for url in pages:
        response = client.get(url)
        assert HOSTILE not in response.text, url
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in response.text, url
    assert client.get(f"/runs/{hostile}").status_code == 200


def test_filters_and_search_select_runs(store: Store, client: TestClient) -> None:
    a = make_run(store, "alpha", host="h1")
    b = make_run(store, "beta", host="h2", description="needle in here")
    running = make_run(store, "beta", host="h1")
    store.set_run_status(running, "running")

    def listed(query: str) -> set[str]:
        rows = json.loads(client.get(f"/runs.json?{query}").text)
        return {row["id"] for row in rows}

    assert listed("") == {a, b, running}
    assert listed("experiment=beta") == {b, running}
    assert listed("host=h1&experiment=beta") == {running}
    assert listed("status=running") == {running}
    assert listed("q=NEEDLE") == {b}
    assert listed("since=2000-01-01&until=2000-12-31") == set()
    page = client.get("/runs?experiment=alpha").text
    assert a in page and b not in page
    bad = client.get("/runs?since=yesterday")
    assert bad.status_code == 400 and "since" in bad.text


def test_run_page_is_the_html_report_body(store: Store, client: TestClient) -> None:
    run_id = make_run(store)
    body = _svg_ids(client.get(f"/runs/{run_id}/body").text).strip()
    toc = client.get(f"/runs/{run_id}/toc").text.strip()
    # the same partial, the same context; the page's charts carry their styles as attributes
    analysis = analyse(store, [run_id])
    html = render_html(analysis, sections=build_sections(analysis))
    report = _svg_ids(presentation_attributes(html))
    assert "<svg" in body and body in report
    assert body in _svg_ids(client.get(f"/runs/{run_id}").text)
    assert toc and toc in html


def _svg_ids(html: str) -> str:
    """matplotlib names clip paths and markers at random per drawing."""
    return re.sub(r"\b([pm])[0-9a-f]{10}\b", r"\1ID", html)


def test_analysis_is_cached_until_the_sample_count_changes(store: Store) -> None:
    run_id = make_run(store, reps=3)
    app = create_app(store)
    with TestClient(app, base_url=BASE_URL) as client:
        first = client.get(f"/runs/{run_id}/body").text
        client.get(f"/runs/{run_id}")
        cache = app.state.reports.cache
        assert cache.computed == 1
        add_trial(store, run_id, "base", "cpu.demo", 3, 1.5)
        progress = client.get(f"/runs/{run_id}/progress").json()
        assert progress["samples"] == 7 and progress["trials_ok"] == 7
        second = client.get(f"/runs/{run_id}/body").text
        assert cache.computed == 2 and second != first


def test_downloads_of_a_run_and_of_the_list(store: Store, client: TestClient) -> None:
    run_id = make_run(store)
    exported = client.get(f"/runs/{run_id}/download/export")
    document = json.loads(gzip.decompress(exported.content))
    assert document["format"] == "virtbench-results"
    assert len(document["tables"]["samples"]) == 8
    as_json = json.loads(client.get(f"/runs/{run_id}/download/json").text)
    assert {row["variant"] for row in as_json["results"]} == {"base", "fast"}
    csv_text = client.get(f"/runs/{run_id}/download/csv").text
    assert csv_text.splitlines()[0].startswith(("run", "variant", "workload"))
    listing = client.get("/runs.csv").text.splitlines()
    assert listing[0].startswith("id,experiment") and run_id in listing[1]
    assert client.get(f"/runs/{run_id}/download/xls").status_code == 404


def test_a_read_only_store_refuses_writes(store: Store) -> None:
    reader = Store(store.url, read_only=True)
    try:
        make_run(store)  # the writer still writes
        assert len(reader.runs()) == 1
        try:
            reader.set_run_status(reader.runs()[0].id, "tampered")
        except Exception as exc:  # the database itself refuses (SQLite or PostgreSQL)
            assert "read" in str(exc).lower()
        else:
            raise AssertionError("a read-only store wrote")
    finally:
        reader.close()


def test_many_readers_while_a_run_writes(store: Store) -> None:
    run_id = make_run(store, reps=2)
    store.set_run_status(run_id, "running")
    app = create_app(Store(store.url, read_only=True))
    seen: list[list[int]] = [[] for _ in range(3)]
    failures: list[str] = []
    done = threading.Event()

    def read(slot: int) -> None:
        with TestClient(app, base_url=BASE_URL) as reader:
            while not done.is_set():
                for url in (f"/runs/{run_id}/progress", f"/runs/{run_id}/body", "/runs"):
                    answer = reader.get(url)
                    if answer.status_code != 200:
                        failures.append(f"{url}: {answer.status_code}")
                    elif url.endswith("progress"):
                        seen[slot].append(answer.json()["samples"])

    readers = [threading.Thread(target=read, args=(i,)) for i in range(3)]
    for thread in readers:
        thread.start()
    try:
        _until(lambda: all(seen), "every reader answered once")
        for rep in range(2, 40):
            add_trial(store, run_id, "base", "cpu.demo", rep, 1.0 + rep / 100)
        _until(lambda: all(counts[-1] == 42 for counts in seen), "every reader saw the end")
    finally:
        done.set()
        for thread in readers:
            join(thread, 60, "a reader of the live pages")
    assert failures == []
    for counts in seen:  # each reader saw the run grow, never shrink
        assert counts and counts == sorted(counts)
    assert all(len(set(counts)) > 1 for counts in seen)


def _until(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_pages_need_no_inline_style_or_script(store: Store, client: TestClient) -> None:
    """The CSP forbids inline styles and scripts: the pages have none, and the charts keep
    every drawing property matplotlib gave them, as SVG presentation attributes."""
    runs = [make_run(store, "exp", reps=3, scale=1.0 + i) for i in range(2)]
    analysis = analyse(store, runs[:1])
    report = render_html(analysis, sections=build_sections(analysis))
    pages = [f"/runs/{runs[0]}", f"/runs/{runs[0]}/body", f"/compare?run={runs[0]}&run={runs[1]}",
             "/history?experiment=exp", "/runs"]
    for url in pages:
        page = client.get(url).text
        assert not re.search(r"<style|\sstyle=|<script>|\son[a-z]+=", page), url
    body = client.get(f"/runs/{runs[0]}/body").text
    for declaration in ('fill: #ffffff', "stroke-width: 0.8"):
        name, value = declaration.split(": ")
        assert declaration in report and f'{name}="{value}"' in body
    assert body.count("<svg") == report.count("<svg") and 'stroke-linejoin="round"' in body
    css = client.get("/static/virtbench.css")
    assert css.headers["content-type"].startswith("text/css") and "header.site" in css.text
