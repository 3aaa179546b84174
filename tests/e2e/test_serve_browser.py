"""`virtbench serve` end to end in a real browser (Debian's chromium driven by Playwright).

The store holds real runs of cpu.crc32c made by `virtbench run`; a third run starts during the
test and its page follows it without a reload. Any console error in the browser fails the test.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import CHROMIUM, chromium, chromium_tab, serving
from waits import finish, sigint_default

from virtbench.report.formatting import fmt_value
from virtbench.store import Store

HOSTILE = "<script>alert(1)</script>"
SPEC = """\
name: serve-e2e
seed: 5
baseline: default
variants:
  - {{name: default, knobs: {{cpu_features: []}}}}
  - {{name: tuned, knobs: {{cpu_features: [sse4.2]}}}}
workloads:
  - {{name: cpu.crc32c, params: {{size_mib: 1, loops: 2}}}}
repetitions: {reps}
warmup: 0
"""

# lab: a real browser is a real component; its skip fails the session (tests/conftest.py)
pytestmark = [pytest.mark.slow, pytest.mark.lab, pytest.mark.timeout(600), pytest.mark.skipif(
    not CHROMIUM.exists(), reason="chromium is not installed (apt-get install chromium)")]


def _virtbench(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "virtbench.cli", *args], check=True,
                          capture_output=True, text=True, timeout=300, **kwargs)


def _hostile_run(location: str) -> None:
    """A run whose stored names are markup: the pages must show them as text."""
    store = Store(location)
    try:
        run_id = store.create_run(experiment=HOSTILE, description=HOSTILE, spec_yaml="",
                                  spec_path="", seed=1, host="vm", target="local",
                                  baseline=HOSTILE, version="0")
        store.add_variants(run_id, [(HOSTILE, {})], HOSTILE)
        store.set_run_status(run_id, "complete", HOSTILE)
    finally:
        store.close()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("serve")
    env = os.environ | {"XDG_CACHE_HOME": str(tmp / "cache")}
    (tmp / "small.yaml").write_text(SPEC.format(reps=3))
    (tmp / "long.yaml").write_text(SPEC.format(reps=400))
    db = str(tmp / "store.db")
    for _ in range(2):
        _virtbench("run", str(tmp / "small.yaml"), "--store", db, "--quiet", env=env, cwd=tmp)
    _hostile_run(db)
    with serving(db, tmp, env) as url:
        yield {"tmp": tmp, "db": db, "env": env, "url": url}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def page(site: dict[str, Any], browser: Any) -> Iterator[Any]:
    with chromium_tab(browser, accept_downloads=True) as (tab, problems):
        yield tab
    assert problems == []


def _wait_until(condition: Any, timeout_s: float, what: str) -> None:
    """Polls from Python (locators): the page's CSP has no 'unsafe-eval', so Playwright's
    wait_for_function, which evaluates a string in the page, is refused there — as it should."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(what)
        time.sleep(0.2)


def _run_ids(site: dict[str, Any]) -> list[str]:
    with urllib.request.urlopen(f"{site['url']}/runs.json?experiment=serve-e2e") as answer:
        return [row["id"] for row in json.loads(answer.read())]


def test_runs_filter_run_report_and_download(site: dict[str, Any], page: Any,
                                             tmp_path: Path) -> None:
    page.goto(f"{site['url']}/runs")
    assert page.locator("#runs tbody tr").count() == 3
    experiments = page.locator("#runs tbody td:nth-child(3)").all_inner_texts()
    assert HOSTILE in experiments  # shown as text, never run (a dialog would fail the test)
    page.select_option("select[name=experiment]", "serve-e2e")
    page.click("#filters button[type=submit]")
    page.wait_for_url("**/runs?*experiment=serve-e2e*")
    rows = page.locator("#runs tbody tr")
    assert rows.count() == 2
    run_id = rows.first.get_attribute("data-run")
    assert run_id
    page.click(f"a[href='/runs/{run_id}']")
    page.wait_for_url(f"**/runs/{run_id}")

    # a key result against `virtbench report --json` of the same run
    row = page.locator("#summary tbody tr", has_text="time_per_checksum_s")
    cells = row.locator("td").all_inner_texts()
    best, shown_mean = cells[3].strip(), cells[4].strip()
    document = json.loads(_virtbench("report", run_id, "--store", site["db"], "-f", "json",
                                     env=site["env"]).stdout)
    (result,) = [r for r in document["results"] if r["variant"] == best
                 and r["workload"] == "cpu.crc32c" and r["metric"] == "time_per_checksum_s"]
    assert shown_mean == fmt_value(result["mean"], result["unit"])

    with page.expect_download() as download_info:
        page.click(f"a[href='/runs/{run_id}/download/csv']")
    saved = tmp_path / "run.csv"
    download_info.value.save_as(saved)
    text = saved.read_text()
    assert "time_per_checksum_s" in text and best in text


def test_compare_two_selected_runs_and_history(site: dict[str, Any], page: Any) -> None:
    page.goto(f"{site['url']}/runs?experiment=serve-e2e")
    boxes = page.locator("#runs tbody input[type=checkbox]")
    boxes.nth(0).check()
    boxes.nth(1).check()
    page.click("#compare")
    page.wait_for_url("**/compare?*")
    assert page.locator("main.wide > h1").inner_text() == "Compare 2 runs"
    assert page.locator("#report-body #summary").is_visible()
    new, base = _run_ids(site)  # newest first; the page takes the oldest as BASE
    verdicts = json.loads(_virtbench("compare", base, new, "--json", "--store", site["db"],
                                     env=site["env"]).stdout)
    shown = [text.split()[0] for text in page.locator("td.verdict").all_inner_texts()]
    assert shown and shown == [row["verdict"] for row in verdicts["rows"]]

    page.goto(f"{site['url']}/runs/{new}")
    page.click("a[href^='/history?']")
    page.wait_for_url("**/history?experiment=serve-e2e")
    assert page.locator("main.wide > h1").inner_text() == "History of serve-e2e"
    assert page.locator("article.history").count() == 4  # 2 variants × 2 metrics
    assert page.locator("article.history svg").count() == 4


PHONE = {"width": 390, "height": 844}


def test_a_phone_sees_the_content_first_and_the_contents_folded(site: dict[str, Any],
                                                                 browser: Any) -> None:
    run_id = _run_ids(site)[0]
    with chromium_tab(browser, viewport=PHONE) as (tab, problems):
        tab.goto(f"{site['url']}/runs/{run_id}")
        toggle, contents = tab.locator(".toc-toggle"), tab.locator(".toc-list")
        assert toggle.is_visible() and not contents.is_visible()  # folded to one line
        bar = toggle.bounding_box()
        assert bar is not None and bar["height"] < 60
        live = tab.locator("#live").bounding_box()  # the run's own figures on the first screen
        assert live is not None and live["y"] < 200 and live["y"] >= bar["y"] + bar["height"]
        main = tab.locator("main#content").bounding_box()
        assert main is not None and main["width"] <= PHONE["width"]  # no side column
        toggle.click()  # a tap opens the contents; a link in them goes to its section
        assert contents.is_visible()
        contents.locator("a[href='#summary']").click()
        tab.wait_for_url("**#summary")
        toggle.click()
        assert not contents.is_visible()
        for route in ("/runs", "/history?experiment=serve-e2e"):  # the other pages fit too
            tab.goto(f"{site['url']}{route}")
            heading = tab.locator("h1").bounding_box()
            assert heading is not None and heading["x"] + heading["width"] <= PHONE["width"]
    assert problems == []
    with chromium_tab(browser, viewport={"width": 1280, "height": 900}) as (tab, problems):
        tab.goto(f"{site['url']}/runs/{run_id}")  # a wide screen: the contents in a column
        assert not tab.locator(".toc-toggle").is_visible()
        assert tab.locator(".toc-list").is_visible()
        nav, main = (tab.locator(sel).bounding_box() for sel in ("nav.toc", "main#content"))
        assert nav is not None and main is not None and nav["x"] + nav["width"] <= main["x"]
    assert problems == []


def test_clicking_a_header_sorts_the_table(site: dict[str, Any], page: Any) -> None:
    page.goto(f"{site['url']}/runs")
    with urllib.request.urlopen(f"{site['url']}/runs.json") as answer:
        listed = json.loads(answer.read())
    rows = page.locator("#runs tbody tr")
    shown = [rows.nth(i).get_attribute("data-run") for i in range(rows.count())]
    assert shown == [r["id"] for r in listed]  # the server's order: newest first
    header = page.locator("#runs thead th", has_text="duration")
    header.click()  # by duration in seconds (data-sort), shortest first
    by_duration = sorted(listed, key=lambda r: r["duration_s"])
    shown = [rows.nth(i).get_attribute("data-run") for i in range(rows.count())]
    assert shown == [r["id"] for r in by_duration]
    assert header.get_attribute("aria-sort") == "ascending"
    header.click()  # again: longest first
    shown = [rows.nth(i).get_attribute("data-run") for i in range(rows.count())]
    assert shown == [r["id"] for r in reversed(by_duration)]
    assert header.get_attribute("aria-sort") == "descending"
    # the report's tables sort too
    page.goto(f"{site['url']}/runs/{_run_ids(site)[0]}")
    assert page.locator("#summary thead th button.sort").count() > 0


def test_the_sort_compares_numbers_with_units_as_numbers(browser: Any) -> None:
    """tables.js on a table of the report's formats (SI prefixes, %, ratios, "–") in a real
    Chromium: numbers by value, text in natural order, empty cells last either way."""
    script = Path(__file__).parents[2] / "src/virtbench/serve/static/tables.js"
    values = ["4.16 ms", "980 µs", "12 s", "–", "2 ms", "1.5e-3 s"]
    names = ["run-10", "run-2", "run-1", "b", "A", "run-3"]
    body = "".join(f"<tr><td>{n}</td><td>{v}</td></tr>" for n, v in zip(names, values,
                                                                           strict=True))
    with chromium_tab(browser) as (tab, problems):
        tab.set_content(f"<table id='t'><thead><tr><th>name</th><th>time</th></tr></thead>"
                        f"<tbody>{body}</tbody></table>")
        tab.add_script_tag(path=str(script))
        cells = tab.locator("#t tbody td:nth-child(2)")
        tab.locator("#t th", has_text="time").click()
        assert cells.all_inner_texts() == ["980 µs", "1.5e-3 s", "2 ms", "4.16 ms", "12 s", "–"]
        tab.locator("#t th", has_text="time").click()
        assert cells.all_inner_texts() == ["12 s", "4.16 ms", "2 ms", "1.5e-3 s", "980 µs", "–"]
        tab.locator("#t th", has_text="name").click()
        assert tab.locator("#t tbody td:nth-child(1)").all_inner_texts() == [
            "A", "b", "run-1", "run-2", "run-3", "run-10"]
    assert problems == []


def test_a_run_started_during_the_test_appears_and_advances(site: dict[str, Any],
                                                             page: Any) -> None:
    before = set(_run_ids(site))
    writer = subprocess.Popen(
        [sys.executable, "-m", "virtbench.cli", "run", str(site["tmp"] / "long.yaml"),
         "--store", site["db"], "--quiet"], cwd=site["tmp"], env=site["env"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=sigint_default)
    try:
        deadline = time.monotonic() + 60
        new: set[str] = set()
        while not new:
            assert time.monotonic() < deadline, "the new run never appeared"
            time.sleep(0.5)
            new = set(_run_ids(site)) - before
        (run_id,) = new
        page.goto(f"{site['url']}/runs?status=running")
        assert page.locator(f"#runs tbody tr[data-run='{run_id}']").is_visible()
        page.click(f"a[href='/runs/{run_id}']")
        page.wait_for_url(f"**/runs/{run_id}")
        assert page.locator("#live-status").inner_text() == "running"
        first = int(page.locator("#live-samples").inner_text())
        # no reload from here on: the page's own script follows the run
        _wait_until(lambda: int(page.locator("#live-samples").inner_text()) > first + 4, 60,
                    "the live sample count never advanced")
        _wait_until(lambda: page.locator("#report-body #summary tbody tr").count() > 0, 30,
                    "the live report never showed its summary")
    finally:
        writer.send_signal(signal.SIGINT)  # ended by its PID, as a user's Ctrl-C
        finish(writer, 60)
    _wait_until(lambda: page.locator("#live-status").inner_text() != "running", 30,
                "the live page still says running after the run ended")
