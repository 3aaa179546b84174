"""The explanation's flame graphs in a real browser (Debian's chromium driven by Playwright): the
standalone SVG that `compare --explain-dir` writes, the HTML report of `virtbench report -f
html`, and `serve`'s run page under its Content-Security-Policy. The store holds the real perf
profiles of tests/data/perf-folded as trial artifacts; any console error or dialog other than
the search prompt fails the test."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import CHROMIUM, chromium, chromium_tab, serving
from profiled import HARDWARE, HARDWARE_TRIALS, SOFTWARE, SOFTWARE_TRIALS, add_profiled_run

from virtbench.store import Store

HOSTILE = "<script>alert(1)</script>"
MATCH = "#e600e6"

pytestmark = [pytest.mark.slow, pytest.mark.lab, pytest.mark.timeout(300), pytest.mark.skipif(
    not CHROMIUM.exists(), reason="chromium is not installed (apt-get install chromium)")]


def _virtbench(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "virtbench.cli", *args], check=True,
                          capture_output=True, text=True, timeout=120, cwd=cwd)


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two runs (SSE4.2 masked, granted) and one run with both variants, profiles stored;
    the masked run's profiles carry a hostile frame name too."""
    tmp = tmp_path_factory.mktemp("explain")
    db = str(tmp / "store.db")
    store = Store(db)
    try:
        hostile = [t + f"python;{HOSTILE} 60\n".encode() for t in SOFTWARE_TRIALS]
        base = add_profiled_run(store, {"masked": hostile})
        new = add_profiled_run(store, {"granted": HARDWARE_TRIALS})
        both = add_profiled_run(store, {"masked": SOFTWARE_TRIALS,
                                        "granted": HARDWARE_TRIALS})
    finally:
        store.close()
    _virtbench("compare", base, new, "--store", db, "--explain-dir", str(tmp / "graphs"),
               cwd=tmp)
    _virtbench("report", both, "--store", db, "-f", "html", "-o", str(tmp / "report.html"),
               cwd=tmp)
    return {"tmp": tmp, "db": db, "both": both, "base": base, "new": new}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    answers: list[str] = []
    with chromium_tab(browser, answers) as (tab, problems):
        tab.answers = answers  # what the search prompt is answered with, in order
        yield tab
    assert problems == []


def _fill_of(page: Any, root: str, name: str) -> str:
    return str(page.locator(f"{root} g.vbf[data-name='{name}'] rect").first
               .get_attribute("fill"))


def _matched_pct(text: str) -> float:
    return float(text.split(", ")[-1].split(" %")[0])


def test_standalone_svg_opens_and_its_search_finds_the_crc(stored: dict[str, Any],
                                                           page: Any) -> None:
    graphs = stored["tmp"] / "graphs"
    page.goto((graphs / "explain-1-base.svg").as_uri())
    assert page.locator("g.vbf").count() > 3
    names = page.locator("g.vbf").evaluate_all(
        "gs => gs.map(g => g.getAttribute('data-name'))")
    assert SOFTWARE in names and HOSTILE in names  # the name as text, never run
    page.answers.append("sw_slicing")
    page.click(".vbf-search")
    matched = page.locator(".vbf-matched").text_content() or ""
    assert "sw_slicing" in matched and _matched_pct(matched) > 80
    assert _fill_of(page, "svg", SOFTWARE) == MATCH
    page.click(".vbf-reset")
    assert _fill_of(page, "svg", SOFTWARE) != MATCH
    assert page.locator(".vbf-matched").text_content() == ""

    page.goto((graphs / "explain-1-diff.svg").as_uri())
    page.answers.append("hw_adler")
    page.click(".vbf-search")
    assert _matched_pct(page.locator(".vbf-matched").text_content() or "") > 80


def test_report_explains_and_searches(stored: dict[str, Any], page: Any) -> None:
    page.goto((stored["tmp"] / "report.html").as_uri())
    link = page.locator(".callout a[href='#explain-crc32c']").first
    link.click()
    assert page.url.endswith("#explain-crc32c")
    assert page.locator("#explain-crc32c").is_visible()
    rows = page.locator("#explain-crc32c table.explain tbody tr td.mono").all_inner_texts()
    assert set(rows[:2]) == {SOFTWARE, HARDWARE}
    assert page.locator("#explain-crc32c svg.vbf-root").count() == 3
    search = page.locator("input.vbf-input").first
    target = search.get_attribute("data-flame")
    search.fill("hw_adler")
    matched = page.locator(f"#{target} .vbf-matched").text_content() or ""
    assert _matched_pct(matched) > 80
    assert _fill_of(page, f"#{target}", HARDWARE) == MATCH
    search.fill("")
    assert _fill_of(page, f"#{target}", HARDWARE) != MATCH


def test_serve_run_and_compare_pages_search_under_its_csp(stored: dict[str, Any],
                                                          page: Any) -> None:
    env = os.environ | {"XDG_CACHE_HOME": str(stored["tmp"] / "cache")}
    with serving(stored["db"], stored["tmp"], env) as base_url:
        page.goto(f"{base_url}/runs/{stored['both']}")
        search = page.locator("#explain-crc32c input.vbf-input").first
        target = search.get_attribute("data-flame")
        search.fill("crc32c_hw")
        matched = page.locator(f"#{target} .vbf-matched").text_content() or ""
        assert _matched_pct(matched) > 80  # the script ran: the CSP allowed the server's own
        page.goto(f"{base_url}/compare?run={stored['base']}&run={stored['new']}")
        search = page.locator("#explain-1 ~ figure.flame input.vbf-input").first
        target = search.get_attribute("data-flame")
        search.fill("crc32c_hw")
        matched = page.locator(f"#{target} .vbf-matched").text_content() or ""
        assert _matched_pct(matched) > 80
