"""The regression gate end to end: real cpu.crc32c runs, one with SSE4.2 masked.

CRC32C falls back to its software path without SSE4.2 (about 8× slower here, LABNOTES), so
`compare --fail-if-worse 5` must exit 1; two runs of one configuration must exit 0, no row a
regression, their ratio near 1. Their verdict may still be "better" or "worse": two runs minutes
apart on a shared machine drift by a few %, beyond the 2 % equivalence margin, and the verdict
says so (CI saw 'better' once). Nothing is timed against a wall clock.
"""

from __future__ import annotations

import json
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from virtbench.store import Store

# A bound for a hang, not a speed: generous for a loaded 2-core machine.
pytestmark = pytest.mark.timeout(600)

SPEC = """\
name: e2e-gate
seed: 5
baseline: cpu
variants:
  - {{name: cpu, knobs: {{cpu_features: {features}}}}}
workloads:
  - {{name: cpu.crc32c, params: {{size_mib: 1, loops: 21}}}}
repetitions: 8
warmup: 1
"""
WITH_SSE42 = "[ssse3, sse4.1, sse4.2]"
WITHOUT_SSE42 = "[ssse3, sse4.1]"  # cpu_features without sse4.2: the software CRC32C path
VIRTBENCH = [sys.executable, "-m", "virtbench.cli"]


def _virtbench(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*VIRTBENCH, *args], cwd=cwd, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "XDG_CACHE_HOME": str(cwd / "cache"),
                               "COLUMNS": "80"}, timeout=600)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """Three real runs in one store: with SSE4.2, without it, with it again."""
    tmp = tmp_path_factory.mktemp("gate")
    ids = {}
    for name, features in (("with", WITH_SSE42), ("without", WITHOUT_SSE42),
                           ("again", WITH_SSE42)):
        spec = tmp / f"{name}.yaml"
        spec.write_text(SPEC.format(features=features))
        done = _virtbench("run", str(spec), "--store", "store.db", "--quiet", cwd=tmp)
        assert done.returncode == 0, done.stderr
        with closing(Store(str(tmp / "store.db"))) as store:  # (no report process for an id)
            ids[name] = store.run("latest").id
    return tmp, ids


def test_masking_sse42_trips_the_gate(runs: tuple[Path, dict[str, str]]) -> None:
    tmp, ids = runs
    done = _virtbench("compare", ids["with"], ids["without"], "--store", "store.db",
                      "--fail-if-worse", "5", cwd=tmp)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "regression" in done.stdout
    assert "sse4.2" in done.stdout  # the comparability block names the changed knob


def test_the_same_configuration_passes_the_gate(runs: tuple[Path, dict[str, str]]) -> None:
    tmp, ids = runs
    # The tolerance is above this machine's drift between two runs minutes apart under the
    # suite's load (one run each side: 16 % worse, its CI [6 %, 26 %], seen once; 28 % once),
    # far below SSE4.2's ~8x. A 5 % gate on single runs is what `virtbench calibrate` is for.
    done = _virtbench("compare", ids["with"], ids["again"], "--store", "store.db",
                      "--fail-if-worse", "40", "--json", "--strict", cwd=tmp)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = json.loads(done.stdout)["rows"]
    assert {row["metric"] for row in rows} == {"time_per_checksum_s", "throughput_Bps"}
    for row in rows:
        assert not row["regression"], row
        # the same configuration: far from SSE4.2's ~8x; runs minutes apart on the loaded
        # suite drift (1.28 once), which is what `virtbench calibrate` is for
        assert 0.5 < row["ratio"] < 2.0 and row["verdict"] != "insufficient", row


def test_an_exported_file_compares_without_import(runs: tuple[Path, dict[str, str]]) -> None:
    tmp, ids = runs
    exported = tmp / "without.json.gz"
    done = _virtbench("export", ids["without"], "-o", str(exported), "--store", "store.db",
                      cwd=tmp)
    assert done.returncode == 0, done.stderr
    done = _virtbench("compare", ids["with"], str(exported), "--store", "store.db",
                      "--fail-if-worse", "5", "--json", cwd=tmp)
    assert done.returncode == 1, done.stdout + done.stderr
    document = json.loads(done.stdout)
    assert document["new"]["source"] == str(exported)
    assert all(row["verdict"] == "worse" and row["regression"] for row in document["rows"])
