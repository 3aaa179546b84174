"""Study 000 end to end on this host: real crc32c, cryptography/OpenSSL and ffmpeg/x265.

Effects are asserted as large ratios (several times), never as wall-clock limits.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from virtbench.cli.root import app

# A bound for a hang, not a speed: generous for a loaded 2-core machine.
pytestmark = pytest.mark.timeout(600)

SPEC = """\
name: e2e-cpu
seed: 3
baseline: default
variants:
  - {name: default, knobs: {cpu_features: []}}
  - {name: tuned, knobs: {cpu_features: [ssse3, sse4.1, sse4.2, aes]}}
workloads:
  - {name: cpu.crc32c, params: {size_mib: 4, loops: 3}}
  - {name: cpu.aes, params: {mode: both, ops: 200, bulk_mib: 8}}
  - {name: media.x265, params: {clip: quick, duration_s: 0.5, width: 320, height: 180}}
repetitions: 3
warmup: 0
"""


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    tmp = tmp_path_factory.mktemp("e2e")
    spec = tmp / "exp.yaml"
    spec.write_text(SPEC)
    store = str(tmp / "store.db")
    runner = CliRunner()
    result = runner.invoke(app, ["run", str(spec), "--store", store, "--quiet"],
                           env={"XDG_CACHE_HOME": str(tmp / "cache")})
    assert result.exit_code == 0, result.output
    report = runner.invoke(app, ["report", "--store", store, "--format", "json"])
    assert report.exit_code == 0, report.output
    return tmp, json.loads(report.stdout)


def _row(document: dict[str, object], variant: str, workload: str,
         metric: str) -> dict[str, object]:
    for row in document["results"]:  # type: ignore[attr-defined]
        if (row["variant"], row["workload"], row["metric"]) == (variant, workload, metric):
            return dict(row)
    raise AssertionError(f"no row for {variant} {workload} {metric}")


def test_aes_without_aesni_is_several_times_slower(study: tuple[Path, dict[str, object]]) -> None:
    _tmp, doc = study
    bulk = _row(doc, "tuned", "cpu.aes", "bulk_throughput_Bps")
    assert bulk["n"] == 3
    assert bulk["speedup"] > 3, bulk  # type: ignore[operator]
    assert bulk["speedup_ci_low"] > 1  # type: ignore[operator]
    encrypt = _row(doc, "tuned", "cpu.aes", "encrypt_time_s")
    assert encrypt["speedup"] > 1.5  # type: ignore[operator]


def test_crc32c_software_path_is_several_times_slower(
        study: tuple[Path, dict[str, object]]) -> None:
    _tmp, doc = study
    row = _row(doc, "tuned", "cpu.crc32c", "time_per_checksum_s")
    assert row["speedup"] > 2, row  # type: ignore[operator]


def test_x265_runs_with_each_simd_level(study: tuple[Path, dict[str, object]]) -> None:
    _tmp, doc = study
    row = _row(doc, "tuned", "media.x265", "encode_time_s")
    assert row["n"] == 3 and row["mean"] > 0  # type: ignore[operator]
    settings = {(r["variant"], r["workload_id"]): r["settings"]
                for r in doc["realisations"]}  # type: ignore[attr-defined]
    assert settings[("default", "media.x265")]["asm"] == "sse2"
    assert settings[("tuned", "media.x265")]["asm"] == "sse4.2"
    assert settings[("default", "cpu.crc32c")]["path"] == "software"


def test_report_formats_and_export(study: tuple[Path, dict[str, object]]) -> None:
    tmp, _doc = study
    store = str(tmp / "store.db")
    runner = CliRunner()
    csv_out = runner.invoke(app, ["report", "--store", store, "-f", "csv"])
    assert csv_out.exit_code == 0
    assert csv_out.stdout.splitlines()[0].startswith("variant,reference,workload,metric,unit")
    md = runner.invoke(app, ["report", "--store", store, "-f", "markdown"])
    assert "## cpu.aes · bulk&#95;throughput&#95;Bps" in md.stdout  # safetext.markdown_text
    exported = tmp / "run.json.gz"
    out = runner.invoke(app, ["export", "latest", "--store", store, "-o", str(exported)])
    assert out.exit_code == 0, out.output
    other = str(tmp / "other.db")
    assert runner.invoke(app, ["import", str(exported), "--store", other]).exit_code == 0
    again = runner.invoke(app, ["report", "--store", other, "-f", "json"])
    assert json.loads(again.stdout)["results"] == _doc["results"]


def test_facts_were_stored_before_and_after(study: tuple[Path, dict[str, object]]) -> None:
    from virtbench.store import Store

    tmp, _doc = study
    st = Store(str(tmp / "store.db"))
    phases = [phase for _id, phase, _t, _data in st.facts(st.run().id)]
    # The noise preflight stores its checks as facts too, between the two snapshots.
    assert [p for p in phases if not p.startswith("preflight ")] == ["before", "after"]
    assert phases[0] == "before" and phases[1] == "preflight start" and phases[-1] == "after"
    data = st.facts(st.run().id)[0][3]
    assert data["cpu"]["flags"] and "kernel" in data
