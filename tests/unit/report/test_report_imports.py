"""What a plain report imports (issue "plan": `virtbench report` of a small store within 0.6 s
of CPU beyond the interpreter): SciPy's statistics module (about a second of import) only when a
report runs a test that needs it (Shapiro–Wilk and Mann–Whitney: two variants with three values
or more each), and SciPy itself not at all when no interval or comparison is computed; nor the
YAML reader or the capacity search's model when no search and no compare_by are stored."""

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
from virtbench.store import Store

st = Store(sys.argv[1], create=False)
analysis = analyse(st, ["latest"])
text.render_terminal(analysis, Console(file=open("/dev/null", "w")), False,
                     sections=build_sections(analysis))
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


@pytest.mark.parametrize(("variants", "reps", "absent"), [
    (["a"], 2, ["scipy", "scipy.stats", *NO_SEARCH]),  # no interval (n < 3), nothing compared
    (["a"], 5, ["scipy.stats", *NO_SEARCH]),  # intervals: t quantiles from scipy.special
    (["a", "b"], 2, ["scipy.stats", *NO_SEARCH]),  # Welch's test (Shapiro-Wilk from n = 3)
])
def test_a_plain_report_imports_no_more_of_scipy_than_it_uses(
        tmp_path: Path, variants: list[str], reps: int, absent: list[str]) -> None:
    store = _store(tmp_path / "s.db", variants, reps)
    out = subprocess.run([sys.executable, "-c", PROBE, str(store), json.dumps(absent)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
