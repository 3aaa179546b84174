"""What a plain report imports (`virtbench report` of a small store within 1.5 s of CPU beyond
the interpreter): SciPy when its statistics are evaluated (scipy.special's distributions for
intervals, scipy.stats' Shapiro–Wilk once two variants have 3 values), but a terminal table
never matplotlib (the charts' second of import), nor SQLAlchemy (a SQLite store is read through
sqlite3, store/sqlite_reader.py), nor the YAML reader or the capacity search's model when no
search and no compare_by are stored."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from virtbench.model import Better, Measurement, Metric
from virtbench.store import Store, TrialRecord

TIME = Metric("time_s", "s", Better.LOWER, "time", primary=True)

# What `virtbench report` does for the default table format (the CLI's _report), then which of
# the libraries the probe names were imported.
PROBE = """
import json, sys
from rich.console import Console
from virtbench.analysis import analyse
from virtbench.plugins import build_sections
from virtbench.report import text
from virtbench.store import open_reader

st = open_reader(sys.argv[1])
analysis = analyse(st, ["latest"])
print(sorted({r.significance.test for r in analysis.rows if r.significance}))
text.render_terminal(analysis, Console(file=open("/dev/null", "w")), False,
                     sections=build_sections(analysis))
print(json.dumps([m for m in ("scipy", "scipy.special", "scipy.stats") if m in sys.modules]))
print(json.dumps([m for m in json.loads(sys.argv[2]) if m in sys.modules]))
"""


def _store(path: Path, variants: list[str], reps: int) -> Path:
    st = Store(str(path))
    run_id = st.create_run(experiment="x", description="", spec_yaml="name: x\n", spec_path="",
                           seed=1, host="h", target="local", baseline=variants[0], version="t")
    st.add_variants(run_id, [(v, {}) for v in variants], variants[0])
    st.add_workload(run_id, "w", "test.w", 0, {}, [TIME])
    order = 0
    for rep in range(reps):
        for i, name in enumerate(variants):
            st.record_trial(run_id, TrialRecord(name, "w", rep, order, False, "ok", "", 0.0, 1.0,
                                                "local", None, {}),
                            [Measurement("time_s", 1.0 + i + rep / 7)], {"time_s": "s"})
            order += 1
    st.set_run_status(run_id, "complete")
    st.close()
    return path


NO_SEARCH = ["ruamel.yaml", "virtbench.search.spec"]


@pytest.mark.parametrize(("variants", "reps", "scipy"), [
    (["a"], 2, []),  # no interval (n < 3), nothing compared: SciPy is never imported
    (["a"], 5, ["scipy", "scipy.special"]),  # intervals: t quantiles
    (["a", "b"], 2, ["scipy", "scipy.special"]),  # Welch's test
    (["a", "b"], 5, ["scipy", "scipy.special", "scipy.stats"]),  # Shapiro-Wilk; speedup intervals
    (["a", "b", "c"], 12, ["scipy", "scipy.special", "scipy.stats"]),  # the same with more values
])
def test_a_plain_report_imports_neither_matplotlib_nor_sqlalchemy(
        tmp_path: Path, variants: list[str], reps: int, scipy: list[str]) -> None:
    store = _store(tmp_path / "s.db", variants, reps)
    absent = ["matplotlib", "sqlalchemy", *NO_SEARCH]
    out = subprocess.run([sys.executable, "-c", PROBE, str(store), json.dumps(absent)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
    # SciPy only as far as the statistics evaluated need it (each module imports it inside
    # the function that uses it)
    assert json.loads(out.stdout.strip().splitlines()[-2]) == scipy
    tests = json.loads(out.stdout.strip().splitlines()[0].replace("'", '"'))
    assert tests == ([] if len(variants) == 1 else ["welch"])  # the rows were compared
