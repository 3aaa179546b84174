"""Folded stacks as stored text: real perf output, and hostile or damaged artifacts."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from hypothesis import example, given, settings
from hypothesis import strategies as st
from profiled import HARDWARE, SOFTWARE, folded, samples

from virtbench.decide.explain import mean_stacks
from virtbench.decide.stack_shares import (
    MAX_COUNT,
    MAX_DEPTH,
    MAX_FRAME_CHARS,
    Frame,
    FrameKind,
    frame,
    parse_folded,
)
from virtbench.report.flamegraph import flame_svg


def test_real_perf_profile_parses_whole() -> None:
    content = folded("software-1")
    profile = parse_folded(content)
    assert profile.skipped_lines == 0 and profile.notes == []
    assert profile.samples == samples(content) > 1000
    leaves = {stack[-1] for stack in profile.stacks}
    assert Frame(SOFTWARE, FrameKind.USER) in leaves
    assert all(stack[0] == Frame("python", FrameKind.PROCESS) for stack in profile.stacks)
    kinds = {f.kind for stack in profile.stacks for f in stack}
    assert {FrameKind.KERNEL, FrameKind.UNRESOLVED, FrameKind.USER} <= kinds
    assert HARDWARE not in {f.name for stack in profile.stacks for f in stack}


def test_frame_kinds_from_the_collapser_annotations() -> None:
    assert frame("ksys_read_[k]") == Frame("ksys_read", FrameKind.KERNEL)
    assert frame("vmx_vcpu_run_[g]") == Frame("vmx_vcpu_run", FrameKind.GUEST)
    assert frame("[unknown]").kind is FrameKind.UNRESOLVED
    assert frame("[libcrypto.so.3]").kind is FrameKind.UNRESOLVED
    assert frame("main").kind is FrameKind.USER
    assert frame("_[k]") == Frame("_[k]", FrameKind.USER)  # nothing before the suffix
    assert Frame("f", FrameKind.KERNEL) != Frame("f", FrameKind.USER)
    assert Frame("ksys_read", FrameKind.KERNEL).label == "ksys_read [kernel]"


def test_hostile_and_damaged_lines() -> None:
    text = (b"p;<script>alert(1)</script>;leaf 5\n"
            b"p;a;;b 3\n"                         # empty frame dropped
            b"p;a\n"                              # no count
            b"p;a -4\n"                           # negative
            b"p;a 1.5\n"                          # not whole
            + f"p;a {MAX_COUNT + 1}\n".encode()   # out of range
            + b" 7\n"                             # no frame
            b";;; 2\n"                            # only separators
            b"p;\xff\xfename 2\n"                 # not UTF-8
            b"p;a 99999999999999999999999999999999999999\n"
            b"\n\n")
    profile = parse_folded(text)
    stacks = {tuple(f.name for f in s): c for s, c in profile.stacks.items()}
    assert stacks[("p", "<script>alert(1)</script>", "leaf")] == 5
    assert stacks[("p", "a", "b")] == 3
    assert stacks[("p", "\ufffd\ufffdname")] == 2
    assert profile.skipped_lines == 7
    assert profile.samples == 10
    assert any("not UTF-8" in n for n in profile.notes)
    assert any("7 line(s) skipped" in n for n in profile.notes)


def test_bounds_on_depth_and_names() -> None:
    deep = ";".join(["p", *(f"f{i}" for i in range(MAX_DEPTH + 50))]) + " 1\n"
    long = "p;" + "x" * (MAX_FRAME_CHARS * 3) + " 2\n"
    profile = parse_folded(deep + long)
    lengths = sorted(len(s) for s in profile.stacks)
    assert lengths == [2, MAX_DEPTH]
    (name,) = [s[1].name for s in profile.stacks if len(s) == 2]
    assert len(name) == MAX_FRAME_CHARS and name.endswith("…")
    assert any("deeper than" in n for n in profile.notes)


def test_nothing_usable() -> None:
    for content in (b"", b"garbage\n", b"\x00\x01\x02"):
        profile = parse_folded(content)
        assert profile.samples == 0 and profile.stacks == {}


FRAGMENTS = st.sampled_from([";", ";;", " ", "\n", "\r", "\x00", "<script>", "]]>", "&amp;",
                             "_[k]", "_[g]", "[unknown]", "\u202e", "\ufffd", "-1", "1e9",
                             "99999999999999999999"])
HOSTILE_TEXT = st.lists(st.one_of(FRAGMENTS, st.text(max_size=12)), max_size=40).map("".join)


@settings(max_examples=60, deadline=None)  # 200: 22 s of the suite's unit line
@given(st.one_of(HOSTILE_TEXT.map(lambda t: t.encode("utf-8", "surrogatepass")),
                 st.binary(max_size=400)))
@example(b"p;a;;b 3\np;\xff 1\n;;; 2\n")
def test_any_artifact_parses_and_draws_well_formed(data: bytes) -> None:
    """Whatever a stored artifact holds: no exception, counts in range, every frame named,
    and a flame graph of it that parses as XML with no raw markup from the names."""
    profile = parse_folded(data)
    assert all(0 < c <= MAX_COUNT for c in profile.stacks.values())
    assert all(stack and all(f.name.strip() for f in stack) for stack in profile.stacks)
    svg = flame_svg(mean_stacks([profile]), title=data.decode("utf-8", "replace"))
    root = ET.fromstring(svg.encode())
    assert not [e for e in root.iter() if e.tag.endswith("}script") and e.text
                and "alert" in e.text]
    assert "<script>" not in svg.split("<script type=")[0]
