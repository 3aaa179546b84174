"""The pages on a phone and their sortable tables, as HTML (the browser test,
tests/e2e/test_serve_browser.py, clicks them in Chromium)."""

from __future__ import annotations

import re

from serve_fill import make_run
from starlette.testclient import TestClient

from virtbench.store import Store


def test_every_page_loads_the_table_sorter_from_this_server(store: Store,
                                                             client: TestClient) -> None:
    runs = [make_run(store, "exp", reps=3, scale=1.0 + i) for i in range(2)]
    for url in ("/runs", f"/runs/{runs[0]}", f"/compare?run={runs[0]}&run={runs[1]}",
                "/history?experiment=exp", "/runs/nosuch"):
        page = client.get(url).text
        assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
        assert page.count('<script src="/static/tables.js"></script>') == 1, url
    script = client.get("/static/tables.js")
    assert script.status_code == 200
    assert script.headers["content-type"].startswith(("text/javascript",
                                                      "application/javascript"))
    assert "data-sort" in script.text and "Intl.Collator" in script.text


def test_the_run_page_puts_its_content_before_its_contents(store: Store,
                                                          client: TestClient) -> None:
    run_id = make_run(store)
    page = client.get(f"/runs/{run_id}").text
    main, nav = page.index('<main id="content">'), page.index('<nav class="toc"')
    assert main < nav  # content first in the page's order
    switch = page.index('<input type="checkbox" id="toc-open" class="toc-switch">')
    label = page.index('<label for="toc-open" class="toc-toggle">')
    listed = page.index('<div class="toc-list">')
    assert nav < switch < label < listed < page.index('<div id="report-toc">')
    css = client.get("/static/virtbench.css").text
    narrow = css[css.index("@media screen and (max-width: 1000px)"):]
    # folded on a narrow screen until the checkbox is ticked, shown above the content
    assert ".toc-list { display: none;" in narrow
    assert ".toc-switch:checked ~ .toc-list { display: block; }" in narrow
    assert re.search(r"\.run-page > nav\.toc \{ order: -1;", narrow)


def test_runs_table_cells_sort_by_their_values(store: Store, client: TestClient) -> None:
    """Times and durations sort by number (data-sort), not by their text ("1 h 02 min" <
    "9 min 00 s" as text)."""
    make_run(store)
    (run,) = store.runs()
    page = client.get("/runs").text
    started = re.findall(r'<td data-sort="([^"]+)">\d{4}-\d\d-\d\d \d\d:\d\d</td>', page)
    assert [float(s) for s in started] == [run.started_at]
    durations = re.findall(r'<td data-sort="([^"]+)">\d+ min \d\d s</td>', page)
    assert run.ended_at is not None
    assert [float(d) for d in durations] == [run.ended_at - run.started_at]
