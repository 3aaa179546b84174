"""Flame graph SVGs: well-formed, every stored name escaped, widths and colours as documented."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
from profiled import HARDWARE, HARDWARE_TRIALS, SOFTWARE, SOFTWARE_TRIALS

from virtbench.decide.explain import mean_stacks
from virtbench.decide.stack_shares import parse_folded
from virtbench.report.flamegraph import MAX_LEVELS, flame_svg, search_script

NS = {"s": "http://www.w3.org/2000/svg"}
HOSTILE = '<script>alert(1)</script>"&\u202e\x01]]>'


def _frames(svg: str) -> dict[str, ET.Element]:
    root = ET.fromstring(svg.encode())
    return {g.attrib["data-name"]: g for g in root.iterfind(".//s:g[@class='vbf']", NS)}


def _width(g: ET.Element) -> float:
    rect = g.find("s:rect", NS)
    assert rect is not None
    return float(rect.attrib["width"])


def test_plain_graph_of_real_profiles() -> None:
    stacks = mean_stacks(parse_folded(c) for c in SOFTWARE_TRIALS)
    svg = flame_svg(stacks, title="crc32c · masked")
    frames = _frames(svg)
    root = ET.fromstring(svg.encode())
    plot = float(root.attrib["data-plot-width"])
    assert _width(frames["python"]) == pytest.approx(plot, abs=0.01)
    assert 0.9 * plot < _width(frames[SOFTWARE]) < plot
    assert HARDWARE not in frames
    assert frames[SOFTWARE].attrib["data-kind"] == "user"
    assert any(g.attrib["data-kind"] == "kernel" for g in frames.values())
    title = frames[SOFTWARE].find("s:title", NS)
    assert title is not None and "% of samples" in (title.text or "")
    # standalone: XML declaration, the search script and its button
    assert svg.startswith("<?xml") and "<script" in svg and 'class="vbf-search"' in svg


def test_differential_graph_colours_growth_red_and_uses_new_shape() -> None:
    base = mean_stacks(parse_folded(c) for c in SOFTWARE_TRIALS)
    new = mean_stacks(parse_folded(c) for c in HARDWARE_TRIALS)
    frames = _frames(flame_svg(new, base=base, title="diff"))
    assert SOFTWARE not in frames  # only BASE had it: NEW's shape
    rect = frames[HARDWARE].find("s:rect", NS)
    assert rect is not None
    r, g, b = map(int, re.findall(r"\d+", rect.attrib["fill"]))
    assert r == 255 and g == b < 100  # grew by ~83 pp: full red
    title = frames[HARDWARE].find("s:title", NS)
    assert title is not None and "BASE 0.00 %" in (title.text or "")
    assert "change +8" in (title.text or "")


def test_hostile_names_are_escaped_and_the_svg_stays_well_formed() -> None:
    folded = f"proc;{HOSTILE};leaf_[k] 5\nproc;other 5\n".encode()
    stacks = mean_stacks([parse_folded(folded)])
    for standalone in (True, False):
        svg = flame_svg(stacks, title=HOSTILE, subtitle=HOSTILE, standalone=standalone,
                        svg_id="x")
        assert "<script>alert" not in svg
        frames = _frames(svg)  # parses: the escaping kept it XML
        shown = next(name for name in frames if "alert" in name)
        assert shown.startswith("<script>alert(1)</script>")  # as text, in an attribute
        assert "\u202e" not in shown and "\\u202e" in shown  # bidi override shown as escape
        assert "leaf" in frames and frames["leaf"].attrib["data-kind"] == "kernel"
    inline = flame_svg(stacks, title="t", standalone=False, svg_id="flame-1")
    assert "<script" not in inline and not inline.startswith("<?xml")
    assert ET.fromstring(inline).attrib["id"] == "flame-1"


def test_no_samples_and_deep_stacks() -> None:
    empty = flame_svg({}, title="empty")
    assert "no samples" in empty and _frames(empty) == {}
    deep = ";".join(["p", *(f"f{i}" for i in range(MAX_LEVELS + 20))]) + " 1\n"
    svg = flame_svg(mean_stacks([parse_folded(deep.encode())]), title="deep")
    assert len(_frames(svg)) == MAX_LEVELS
    assert "deeper than" in svg


def test_search_script_is_safe_inside_svg_cdata_and_html() -> None:
    script = search_script()
    assert "]]>" not in script and "</script" not in script.lower()
    assert "innerHTML" not in script  # names reach the page as attributes and textContent
