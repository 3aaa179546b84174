"""Compare and history pages show virtbench.decide's verdicts and change points."""

from __future__ import annotations

import json
import re

from serve_fill import make_run
from starlette.testclient import TestClient

from virtbench.decide.compare import compare_runs
from virtbench.decide.history import build_history
from virtbench.decide.runs import load_run
from virtbench.report.formatting import json_safe
from virtbench.serve.decided import history_view
from virtbench.store import Store


def test_compare_page_shows_the_verdicts_of_decide(store: Store, client: TestClient) -> None:
    base = make_run(store, "exp")
    slower = make_run(store, "exp", scale=1.5)  # every time 50 % longer: worse
    page = client.get(f"/compare?run={slower}&run={base}").text  # order does not matter
    shown = re.findall(r'<td class="verdict [^"]*">(\w+)', page)
    expected = compare_runs(load_run(base, lambda: store), load_run(slower, lambda: store))
    assert shown == [row.result.verdict for row in expected.rows]
    assert set(shown) == {"worse"}
    document = json.loads(client.get(f"/compare.json?run={base}&run={slower}").text)
    (comparison,) = document["comparisons"]
    assert comparison["base"]["id"] == base and comparison["new"]["id"] == slower
    assert [r["verdict"] for r in comparison["rows"]] == shown
    rows = client.get(f"/compare.csv?run={base}&run={slower}").text.splitlines()
    assert rows[0].startswith("base,new,variant") and len(rows) == 1 + len(shown)


def test_history_page_is_decides_history(store: Store, client: TestClient) -> None:
    runs = [make_run(store, "nightly", scale=1.0 if i < 4 else 2.0) for i in range(8)]
    page = client.get("/history?experiment=nightly").text
    assert "History of nightly" in page and "8 runs on hostA" in page
    assert page.count("<article class=\"metric history\">") == 2  # base, fast
    expected = json_safe(build_history(store, "nightly").as_dict())
    assert json.loads(client.get("/history.json?experiment=nightly").text) == expected
    steps = [s for series in expected["series"] for s in series["change_points"]]
    assert steps  # the doubling after run 4 is found
    for step in steps:  # every change point decide finds is on the page, with its runs
        assert step["first_after"] in page and step["last_before"] in page
    csv_rows = client.get("/history.csv?experiment=nightly").text.splitlines()
    assert len(csv_rows) == 1 + 2 * len(runs)
    assert client.get("/history?experiment=nosuch").status_code == 400


def test_history_charts_are_bounded(store: Store) -> None:
    """Hundreds of series would keep the server drawing: charts stop at a budget, every
    series keeps its change points."""
    for i in range(4):
        make_run(store, "many", variants=("a", "b", "c"), scale=1.0 + (i > 1))
    view = history_view(build_history(store, "many"), chart_budget=2)
    assert [s["chart"] is not None for s in view["series"]] == [True, True, False]
    assert view["charts_left_out"] == 1 and all("steps" in s for s in view["series"])
