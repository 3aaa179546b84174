"""The report's SVG charts are drawn through a renderer that measures each text once
(report/charts.py, _svg): the markup must stay what matplotlib's own savefig writes."""

from __future__ import annotations

import io
import re

from matplotlib import rcParams
from matplotlib.figure import Figure

from virtbench.report import charts


def _without_metadata(svg: str) -> str:  # the metadata block holds the time of drawing
    return re.sub(r"<metadata>.*?</metadata>", "", svg, count=1, flags=re.S)


def _figure() -> Figure:
    fig = Figure(figsize=(4.0, 2.0))
    ax = fig.add_subplot()
    ax.barh([0, 1, 2], [1.0, 2.5, 0.5], xerr=[0.1, 0.2, 0.05], color=["#6b7280", "#3b6fb6",
                                                                      "#1b8a5a"])
    for i, label in enumerate(["default", "sse4.2+aes", "default"]):  # a label drawn twice
        ax.text(-0.01, i, label, transform=ax.get_yaxis_transform(), ha="right")
    ax.set_xlabel("mean time_s (s) · lower is better")
    return fig


def test_the_chart_markup_is_what_savefig_writes_and_sizes_last_one_session() -> None:
    with charts.chart_style():
        fig = _figure()
        rcParams["svg.hashsalt"] = "same"
        ours = charts._svg(fig)
        assert ("default", False) in {key[:2] for key in charts._text_sizes}
        again = charts._svg(_figure())  # its texts' sizes come from the first figure's
        buf = io.StringIO()
        fig.savefig(buf, format="svg")
        assert _without_metadata(ours) == _without_metadata(buf.getvalue())
        assert _without_metadata(again) == _without_metadata(ours)
        assert ">sse4.2+aes<" in ours and fig.dpi == 100  # drawn at 72 dpi, then restored
    assert not charts._text_sizes  # measured anew in the next session (its rcParams)
