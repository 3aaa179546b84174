"""Which facts and settings differ between two runs, and which of them --strict refuses."""

from __future__ import annotations

import numpy as np
from synthetic import SPEC, add_run, facts

from virtbench.decide.comparability import differences, strict_differences
from virtbench.decide.runs import load_run
from virtbench.store import Store


def test_differences_name_what_changed(sqlite_store: Store) -> None:
    rng = np.random.default_rng(0)
    base = add_run(sqlite_store, {"x": rng.normal(1, 0.01, 3)}, knobs={"x": {"cpu_features": []}})
    new_facts = facts(flags=["aes", "avx2"], kernel="Linux 6.12") | {
        "tools": {"openssl": "OpenSSL 3.5.0"}}
    new = add_run(sqlite_store, {"x": rng.normal(1, 0.01, 3)}, run_facts=new_facts,
                  spec_yaml=SPEC.replace("kind: host", "kind: fs"),
                  knobs={"x": {"cpu_features": ["sse4.2"]}})
    diffs = differences(load_run(base, lambda: sqlite_store), load_run(new, lambda: sqlite_store))
    by_what = {d.what: d for d in diffs}
    assert by_what["CPU flags"].base == "only here: sse4.2"
    assert by_what["CPU flags"].new == "only here: avx2"
    assert by_what["kernel"].new == "Linux 6.12"
    assert by_what["tool openssl"].new == "OpenSSL 3.5.0"
    assert "fs" in by_what["lab settings"].new
    assert "experiment file hash" in by_what
    assert "sse4.2" in by_what["variant x knobs"].new
    assert strict_differences(diffs) == []  # none of these refuses a comparison


def test_identical_settings_have_no_differences(sqlite_store: Store) -> None:
    rng = np.random.default_rng(1)
    a = add_run(sqlite_store, {"x": rng.normal(1, 0.01, 3)})
    b = add_run(sqlite_store, {"x": rng.normal(1, 0.01, 3)})
    assert differences(load_run(a, lambda: sqlite_store), load_run(b, lambda: sqlite_store)) == []
