"""The HTML report's Explain section: built from a run's stored profiles, linked from the best
configuration box, its flame graphs well-formed inline and as standalone files, names escaped."""

from __future__ import annotations

import base64
import re
import xml.etree.ElementTree as ET

from profiled import HARDWARE, HARDWARE_TRIALS, SOFTWARE, SOFTWARE_TRIALS, add_profiled_run

from virtbench.analysis import analyse
from virtbench.decide.explain import explain_run
from virtbench.plugins import build_sections
from virtbench.report.html import render_html
from virtbench.store import Store

HOSTILE = "<script>alert(1)</script>"


def _report(store: Store, run_id: str) -> str:
    analysis = analyse(store, [run_id])
    explained = explain_run(store, run_id, [v.name for v in analysis.variants],
                            analysis.baseline)
    return render_html(analysis, sections=build_sections(analysis), explain=explained)


def _svgs(page: str) -> list[str]:
    return re.findall(r"<svg .*?</svg>", page, flags=re.S)


def test_explain_section_from_real_profiles(store: Store) -> None:
    run = add_profiled_run(store, {"masked": SOFTWARE_TRIALS, "granted": HARDWARE_TRIALS})
    page = _report(store, run)
    assert 'id="explain"' in page and 'id="explain-crc32c"' in page
    assert 'href="#explain-crc32c">Why: where the samples went' in page  # best-config box
    section = page.split('id="explain"', 1)[1]
    table = section.split("</table>", 1)[0]
    first, second = re.findall(r'<td class="mono">([^<]*)</td>', table)[:2]
    assert {first, second} == {SOFTWARE, HARDWARE}
    assert "profile.task_clock_ms" in section  # the counter that differs
    assert "unresolved frames: [unknown]" in section
    # these profiles do not say which samples are the workload's: said above the table
    assert ('<p class="small scope">Share of all samples recorded (every process, idle '
            'included).</p>') in section
    svgs = _svgs(section)
    assert len(svgs) == 3  # the differential one, then one per variant
    for svg in svgs:
        root = ET.fromstring(svg)
        assert root.attrib["id"].startswith("flame-") and "<script" not in svg
    searches = re.findall(r'data-flame="(flame-\d+)"', section)
    assert sorted(searches) == sorted(ET.fromstring(s).attrib["id"] for s in svgs)
    links = re.findall(r'href="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"', section)
    assert len(links) == 3
    standalone = base64.b64decode(links[0]).decode()
    assert standalone.startswith("<?xml") and "<script" in standalone
    ET.fromstring(standalone.encode())
    assert page.count("<script>") == 1  # the page's own search script


def test_hostile_names_no_symbols_and_missing_profiles(store: Store) -> None:
    hostile = f"p;{HOSTILE};[unknown] 90\np;main 10\n".encode()
    run = add_profiled_run(store, {"base": [hostile] * 3, "other": [None] * 3,
                                   "third": [b"p;main 5\n"] * 3})
    page = _report(store, run)
    assert HOSTILE not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    for svg in _svgs(page):
        ET.fromstring(svg)
    assert "variant other: no profile stored for this workload" in page
    assert "ran in an unresolved frame (no symbols" in page


def test_a_run_without_profiles_has_no_explain_section(store: Store) -> None:
    run = add_profiled_run(store, {"a": [None] * 3, "b": [None] * 3}, counters=False)
    page = _report(store, run)
    assert 'id="explain"' not in page and "<script" not in page and "Why:" not in page


def test_counters_without_profiles_are_said(store: Store) -> None:
    run = add_profiled_run(store, {"a": [None] * 3, "b": [None] * 3})  # counters, no profile
    page = _report(store, run)
    assert 'id="explain"' in page and "no profiles of its trials" in page
    assert "<svg class" not in page and "vbf-input" not in page
