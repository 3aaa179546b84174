"""The report's inline SVG charts made acceptable to a strict Content-Security-Policy.

matplotlib writes every drawing property as a `style="..."` attribute and one `<style>` rule
per chart; a CSP without 'unsafe-inline' ignores both, and charts would lose their fills and
lines. SVG has the same properties as presentation attributes (`fill="#fff"`), which a CSP does
not govern: this rewrites one into the other. The report's HTML file (a self-contained
download) keeps matplotlib's output as it is.

Only markup the report rendered is rewritten: stored text reaches the HTML escaped by jinja2
(`"` and `<` as entities), so it can never look like a style attribute or element here.
"""

from __future__ import annotations

import html
import re

__all__ = ["PRESENTATION", "presentation_attributes"]

PRESENTATION = frozenset({
    "clip-path", "clip-rule", "color", "display", "dominant-baseline", "fill", "fill-opacity",
    "fill-rule", "font-family", "font-size", "font-style", "font-variant", "font-weight",
    "letter-spacing", "marker-end", "marker-mid", "marker-start", "opacity", "paint-order",
    "stroke", "stroke-dasharray", "stroke-dashoffset", "stroke-linecap", "stroke-linejoin",
    "stroke-miterlimit", "stroke-opacity", "stroke-width", "text-anchor", "text-decoration",
    "visibility", "word-spacing",
})
"""SVG presentation attributes (SVG 2, section 6.6): the CSS properties an attribute may set."""

_TAG = re.compile(r"<[A-Za-z][^<>]*>")  # a start tag: text (escaped) never holds a raw "<"
_STYLE_ATTRIBUTE = re.compile(r' style="([^"<>]*)"')
_STYLE_ELEMENT = re.compile(r'<style type="text/css">\*\{([^{}<>]*)\}</style>')


def _attributes(declarations: str) -> str:
    """`fill: #fff; stroke: none` as ` fill="#fff" stroke="none"` (unknown properties dropped:
    a chart looks the same without anything else matplotlib might write there)."""
    out = []
    for declaration in html.unescape(declarations).split(";"):
        name, _, value = declaration.partition(":")
        name, value = name.strip().lower(), value.strip()
        if name in PRESENTATION and value:
            out.append(f' {name}="{html.escape(value, quote=True)}"')
    return "".join(out)


def presentation_attributes(markup: str) -> str:
    """``markup`` (a report partial) with every inline SVG style as presentation attributes;
    a chart's `* {...}` rule becomes attributes of its `<svg>` element (they inherit)."""
    out: list[str] = []
    position = 0
    for chart_rule in _STYLE_ELEMENT.finditer(markup):
        start = markup.rfind("<svg", position, chart_rule.start())  # the rule's chart
        if start < 0:
            out.append(markup[position:chart_rule.start()])
        else:
            out.append(markup[position:start] + "<svg" + _attributes(chart_rule.group(1)))
            out.append(markup[start + len("<svg"):chart_rule.start()])
        position = chart_rule.end()
    out.append(markup[position:])
    return _TAG.sub(lambda tag: _STYLE_ATTRIBUTE.sub(lambda m: _attributes(m.group(1)),
                                                     tag.group(0)), "".join(out))
