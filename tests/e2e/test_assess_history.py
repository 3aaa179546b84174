"""Two assessments of this machine are two runs of one experiment file: `virtbench history`
shows each measured what-if over both, and `virtbench compare` compares them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from virtbench.cli import app

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def _json(output: str) -> dict:  # type: ignore[type-arg]
    return json.loads(output[output.index("{"): output.rindex("}") + 1])


def test_history_and_compare_over_two_assessments(tmp_path: Path) -> None:
    cpuinfo = Path("/proc/cpuinfo").read_text()
    has_flags = all(f" {flag}" in cpuinfo for flag in ("aes", "sse4_2", "ssse3"))
    store = str(tmp_path / "assess.db")
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    runs = []
    for _ in range(2):
        result = CliRunner().invoke(app, ["assess", "--budget", "30s", "--json", "--store",
                                          store], env=env)
        assert result.exit_code == 0, result.output
        runs.append(_json(result.output)["run_id"])
    if not has_flags:
        # Documented (docs/assess.md): without the flags nothing is masked or stored, so there
        # is no history of the what-if; the assessments still answer, with cited gains.
        assert runs == [None, None]
        return
    assert None not in runs and runs[0] != runs[1]

    result = CliRunner().invoke(app, ["history", "assess", "--json", "--store", store])
    assert result.exit_code == 0, result.output
    history = _json(result.output)
    assert history["runs"] == runs and history["excluded"] == {}
    series = {(s["variant"], s["workload_id"], s["metric"]): s for s in history["series"]}
    for workload, metric in (("cpu.aes", "bulk_throughput_Bps"),
                             ("cpu.crc32c", "time_per_checksum_s")):
        for variant in ("without-flags", "as-found"):  # this machine has the flags
            points = series[(variant, workload, metric)]["runs"]
            assert [p["run_id"] for p in points] == runs
    # The two runs' speedups agree: the what-if is the same experiment both times.
    result = CliRunner().invoke(app, ["compare", runs[0], runs[1], "--json", "--store", store])
    assert result.exit_code == 0, result.output
    assert "cpu.aes" in result.output
