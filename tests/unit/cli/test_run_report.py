"""`virtbench run FILE --report PATH`: the terminal table and the HTML file come from one
analysis of the run (analysing a large run twice cost the time of a second `report`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

SPEC = """\
name: reported
baseline: a
variants: [{name: a}, {name: b}]
workloads: [{name: exec.command, params: {argv: ["true"]}}]
repetitions: 2
warmup: 0
"""


def test_run_with_report_analyses_the_run_once(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import virtbench.analysis
    from virtbench.cli.root import app

    real = virtbench.analysis.analyse
    analysed: list[list[str]] = []

    def counted(store: object, run_ids: list[str], **kw: object) -> object:
        analysed.append(list(run_ids))
        return real(store, run_ids, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(virtbench.analysis, "analyse", counted)
    spec = tmp_path / "reported.yaml"
    spec.write_text(SPEC)
    html = tmp_path / "report.html"
    result = CliRunner().invoke(app, ["run", str(spec), "--store", str(tmp_path / "s.db"),
                                      "--report", str(html), "--quiet"])
    assert result.exit_code == 0, result.output
    assert len(analysed) == 1
    assert html.read_text().lstrip().lower().startswith("<!doctype html")
    assert "exec.command" in result.output  # the terminal table, from the same analysis
