"""Study sections in an 80-column terminal: labels (variant, metric) are never cut."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from virtbench.plugins import build_sections
from virtbench.report.text import render_terminal

from . import synthetic


@pytest.mark.parametrize("build", ["build_qos", "build_web", "build_storage", "build_vnf"])
def test_study_sections_fit_80_columns_without_cutting_labels(tmp_path: Path, build: str) -> None:
    store = synthetic.new_store(tmp_path)
    getattr(synthetic, build)(store)
    analysis = synthetic.analysed(store)
    console = Console(width=80, record=True, file=io.StringIO())
    render_terminal(analysis, console, sections=build_sections(analysis))
    text = console.export_text()
    assert not re.search(r"…\s*│", text)  # rich's ellipsis at a cell's end: a cell was cut
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert all(line.rstrip()[-1] in "│┃┓┩┤┘" for line in lines
               if line.startswith(("│", "┃", "┏", "┡", "├", "└")))
    for section in build_sections(analysis):
        for row in section.rows:  # the first (label) cell of every row is printed whole
            assert row[0] in text.replace("│", " ") or all(
                part in text for part in row[0].split()), row[0]
