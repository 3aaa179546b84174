"""Third-party workloads register through the `virtbench.workloads` entry-point group."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from virtbench.workloads import registry

PLUGIN = '''
from virtbench.model import Better, Measurement, Metric
from virtbench.workloads.base import TrialResult, Workload


class Answer(Workload):
    name = "thirdparty.answer"
    description = "always 42"
    metrics = (Metric("answer", "1", Better.HIGHER, "the answer", primary=True),)

    def run(self, ctx):
        return TrialResult([Measurement("answer", 42.0)])


def register():
    return [Answer]
'''


def test_entry_point_plugin_is_discovered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "vb_thirdparty.py").write_text(PLUGIN)
    dist = tmp_path / "vb_thirdparty-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: vb-thirdparty\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[virtbench.workloads]\nanswer = vb_thirdparty:register\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry.all_workloads.cache_clear()
    try:
        workloads = registry.all_workloads()
        assert "thirdparty.answer" in workloads
        assert "cpu.crc32c" in workloads  # built-ins still there
        assert registry.get_workload("thirdparty.answer")().metrics[0].name == "answer"
    finally:
        sys.modules.pop("vb_thirdparty", None)
        registry.all_workloads.cache_clear()
