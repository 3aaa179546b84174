"""Flame graphs as SVG: one per variant, and a differential one coloured by change.

A flame graph (Brendan Gregg's) stacks each sampled call path from the root at the bottom to
the leaf at the top; a frame's width is its share of the samples (here each variant's mean share
over its trials, decide.explain.mean_stacks), siblings are in name order. The differential graph
has NEW's shape, and each frame is coloured by the change of its share, NEW − BASE: red grew,
blue shrank, white unchanged (as in Gregg's differential flame graphs: a call path only BASE
has is not drawn; the explanation's table lists it).

Every name comes from stored text: it reaches the SVG through :func:`_xml` (control and bidi
characters shown as escapes, then XML-escaped), never as markup. The SVG uses presentation
attributes only (no `style`), so `serve`'s Content-Security-Policy keeps its colours; search is
the small script of templates/flamegraph.js.j2, inside the SVG when it is a standalone file and
the page's own script in the report.
"""

from __future__ import annotations

import html
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources

from virtbench import safetext
from virtbench.decide.stack_shares import Frame, FrameKind, Stack

__all__ = ["FRAME_HEIGHT", "MAX_LEVELS", "MIN_SHARE_PCT", "flame_svg", "search_script"]

FRAME_HEIGHT = 17
MIN_SHARE_PCT = 0.2
"""Frames holding less than this share of the samples (%) are not drawn (their samples still
count in their parents' width): single samples of rare call paths would otherwise make a graph
of tall, hair-thin towers."""
MAX_LEVELS = 128
"""Deepest level drawn; deeper frames are left out and the graph says how many."""
_FONT = 11
_CHAR_PX = 0.6 * _FONT
_TOP = 58
_SIDE = 10
_FONTS = "Verdana, DejaVu Sans, sans-serif"

_KIND_HUE = {  # (r, g, b) base and how far a name's hash moves it
    FrameKind.USER: ((225, 120, 50), (30, 100, 30)),
    FrameKind.KERNEL: ((70, 140, 200), (40, 60, 40)),
    FrameKind.GUEST: ((150, 100, 200), (40, 40, 40)),
    FrameKind.JIT: ((80, 170, 90), (40, 50, 40)),
    FrameKind.UNRESOLVED: ((170, 170, 170), (30, 30, 30)),
    FrameKind.PROCESS: ((205, 205, 190), (20, 20, 20)),
}
LEGEND = ("user: red–yellow · kernel: blue · guest: purple · JIT: green · unresolved: grey"
          " · process: beige")


def search_script() -> str:
    """The search script (templates/flamegraph.js.j2): one copy for every place it runs."""
    return (resources.files("virtbench.report") / "templates" / "flamegraph.js.j2").read_text(
        encoding="utf-8")


def _xml(value: object) -> str:
    return html.escape(safetext.visible(value), quote=True)


@dataclass
class _Node:
    frame: Frame | None
    value: float = 0.0
    children: dict[Frame, _Node] = field(default_factory=dict)


def _tree(stacks: Mapping[Stack, float]) -> _Node:
    root = _Node(None)
    for stack, value in stacks.items():
        root.value += value
        node = root
        for f in stack:
            node = node.children.setdefault(f, _Node(f))
            node.value += value
    return root


def _find(root: _Node, path: tuple[Frame, ...]) -> float:
    node: _Node | None = root
    for f in path:
        node = node.children.get(f) if node is not None else None
    return node.value if node is not None else 0.0


def _kind_colour(f: Frame) -> str:
    (r, g, b), (dr, dg, db) = _KIND_HUE[f.kind]
    h = zlib.crc32(f.name.encode("utf-8", "replace")) / 0xFFFFFFFF  # stable across runs
    return f"rgb({int(r + dr * (h - 0.5))},{int(g + dg * h)},{int(b + db * (h - 0.5))})"


def _diff_colour(delta: float, scale: float) -> str:
    """Red for growth, blue for a fall, white for none; full colour at |delta| = scale."""
    strength = 0.0 if scale <= 0 else min(1.0, abs(delta) / scale)
    fade = round(255 - 190 * strength)
    return f"rgb(255,{fade},{fade})" if delta > 0 else (
        f"rgb({fade},{fade},255)" if delta < 0 else "rgb(250,250,250)")


@dataclass(frozen=True)
class _Box:
    frame: Frame
    depth: int
    x: float
    width: float
    share: float
    base_share: float | None


def _layout(root: _Node, base: _Node | None, plot_width: float
            ) -> tuple[list[_Box], int, int]:
    """The frames to draw, the deepest level drawn, and how many frames were too narrow or too
    deep to draw."""
    boxes: list[_Box] = []
    hidden = 0
    total = root.value or 1.0
    todo: list[tuple[_Node, tuple[Frame, ...], float, int]] = [(root, (), 0.0, 0)]
    while todo:
        node, path, x, depth = todo.pop()
        for f in sorted(node.children, key=lambda f: (f.name, f.kind.value)):
            child = node.children[f]
            width = child.value / total * plot_width
            child_path = (*path, f)
            if 100.0 * child.value / total < MIN_SHARE_PCT or depth >= MAX_LEVELS:
                hidden += 1
            else:
                boxes.append(_Box(f, depth, x, width, 100.0 * child.value / total,
                                  None if base is None else
                                  100.0 * _find(base, child_path) / (base.value or 1.0)))
                todo.append((child, child_path, x, depth + 1))
            x += width
    return boxes, max((b.depth for b in boxes), default=0), hidden


def _label(text: str, width: float) -> str:
    fits = int((width - 4) / _CHAR_PX)
    if fits < 3:
        return ""
    return text if len(text) <= fits else text[:fits - 2] + ".."


def flame_svg(stacks: Mapping[Stack, float], *, title: str, subtitle: str = "",
              base: Mapping[Stack, float] | None = None, standalone: bool = True,
              svg_id: str = "flamegraph", width: int = 1200) -> str:
    """The flame graph of ``stacks`` (stack → share of samples, %), as SVG text.

    With ``base`` it is differential: NEW's shape (``stacks``), each frame coloured by its share
    in ``stacks`` minus its share in ``base`` (percentage points). ``standalone``: an SVG file of
    its own (XML declaration, the search script and a Search button inside); otherwise an
    element for an HTML page, whose search box is the page's (class ``vbf-input``,
    ``data-flame`` = ``svg_id``)."""
    plot_width = float(width - 2 * _SIDE)
    new_tree = _tree(stacks)
    base_tree = _tree(base) if base is not None else None
    boxes, deepest, hidden = _layout(new_tree, base_tree, plot_width)
    height = _TOP + (deepest + 1) * FRAME_HEIGHT + 24
    scale = max((abs(b.share - b.base_share) for b in boxes if b.base_share is not None),
                default=0.0)
    out: list[str] = []
    if standalone:
        out.append('<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n')
    out.append(f'<svg xmlns="http://www.w3.org/2000/svg" version="1.1" id="{_xml(svg_id)}" '
               f'class="vbf-root" width="{width}" height="{height}" '
               f'viewBox="0 0 {width} {height}" data-plot-width="{plot_width:.2f}" '
               f'font-family="{_FONTS}" font-size="{_FONT}" role="img" '
               f'aria-label="{_xml(title)}">\n')
    out.append(f'<title>{_xml(title)}</title>\n')
    out.append(f'<rect x="0" y="0" width="{width}" height="{height}" fill="#fdfdf8"/>\n')
    out.append(f'<text x="{width / 2:.0f}" y="18" text-anchor="middle" font-size="15">'
               f'{_xml(title)}</text>\n')
    legend = (f"colour: change of share NEW − BASE, red grew, blue shrank (full colour at "
              f"±{scale:.1f} pp); width: NEW's share" if base is not None else
              f"width: share of samples; {LEGEND}")
    out.append(f'<text x="{width / 2:.0f}" y="34" text-anchor="middle" fill="#555">'
               f'{_xml(subtitle + (" · " if subtitle else "") + legend)}</text>\n')
    if standalone:
        out.append(f'<text class="vbf-search" x="{width - _SIDE}" y="18" text-anchor="end" '
                   'cursor="pointer" fill="#333">Search</text>\n'
                   f'<text class="vbf-reset" x="{width - _SIDE - 60}" y="18" text-anchor="end" '
                   'cursor="pointer" fill="#333">Reset</text>\n')
    out.append(f'<text class="vbf-matched" x="{_SIDE}" y="52" fill="#333"></text>\n')
    if not boxes:
        out.append(f'<text x="{width / 2:.0f}" y="{_TOP + 14}" text-anchor="middle">'
                   'no samples</text>\n')
    bottom = height - 24
    for b in boxes:
        y = bottom - (b.depth + 1) * FRAME_HEIGHT
        label = b.frame.label
        if b.base_share is None:
            fill = _kind_colour(b.frame)
            tip = f"{label} — {b.share:.2f} % of samples"
        else:
            delta = b.share - b.base_share
            fill = _diff_colour(delta, scale)
            tip = (f"{label} — NEW {b.share:.2f} %, BASE {b.base_share:.2f} % of samples, "
                   f"change {delta:+.2f} pp")
        out.append(f'<g class="vbf" data-name="{_xml(b.frame.name)}" '
                   f'data-kind="{b.frame.kind.value}"><title>{_xml(tip)}</title>'
                   f'<rect x="{_SIDE + b.x:.2f}" y="{y}" width="{b.width:.2f}" '
                   f'height="{FRAME_HEIGHT - 1}" fill="{fill}" data-fill="{fill}" rx="2"/>')
        text = _label(label, b.width)
        if text:
            out.append(f'<text x="{_SIDE + b.x + 3:.2f}" y="{y + FRAME_HEIGHT - 5}">'
                       f'{_xml(text)}</text>')
        out.append("</g>\n")
    if hidden:
        out.append(f'<text x="{_SIDE}" y="{height - 8}" fill="#777">{hidden} call path(s) under '
                   f'{MIN_SHARE_PCT} % of the samples or deeper than {MAX_LEVELS} levels not '
                   'drawn</text>\n')
    if standalone:
        out.append('<script type="text/ecmascript"><![CDATA[\n' + search_script()
                   + "\n]]></script>\n")
    out.append("</svg>\n")
    return "".join(out)
