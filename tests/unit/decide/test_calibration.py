"""Noise profiles and drift-aware compare: the false-alarm rates of the gate on drifting runs
with and without a profile (seeded simulation), profiles built from stored runs and found by
compare, `compare B1 B2 -- N1 N2` on run means, and stores from before profiles existed."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from synthetic import add_run, facts

from virtbench.decide.calibration import NoiseProfile, build_profile, find_profile, plan_rows
from virtbench.decide.compare import compare_run_sets, compare_runs
from virtbench.decide.runs import RunData, load_run
from virtbench.decide.validation import drift_gate_rates
from virtbench.store import Store
from virtbench.store.migrations import MIGRATIONS
from virtbench.store.portable import export_run, import_run

# A/A levels of five calibration runs: SD of their logs ≈ 3.4 %
CALIBRATION_LEVELS = (0.97, 1.0, 1.03, 0.96, 1.04)


def test_drift_makes_the_old_gate_cry_wolf_and_the_profile_does_not() -> None:
    """Between-run SD 3 %, CV 2 % within a run, n = 10, `--fail-if-worse 2`, the same
    configuration on both sides; the profile estimated afresh for each comparison from five A/A
    runs, as `calibrate` does by default."""
    old, profiled = drift_gate_rates(between_sd=0.03, within_cv=0.02, n=10, fail_pct=2.0,
                                     calibration_runs=5, seed=20261126)
    assert old.trials == profiled.trials >= 4000
    assert old.rate > 0.15, old  # the independent model: far above 5 %
    assert profiled.rate <= 0.06, profiled
    # at the null's boundary (NEW truly 2 % worse) the profile-aware test holds α; the old one
    # fires in about a third of the comparisons
    old_edge, edge = drift_gate_rates(between_sd=0.03, within_cv=0.02, n=10, fail_pct=2.0,
                                      calibration_runs=5, seed=5, planted_pct=2.0)
    assert edge.rate <= 0.05 + 3 * edge.mc_error and old_edge.rate > 0.25, (old_edge, edge)
    # and the profile-aware gate still catches a large regression (25 % worse)
    _, caught = drift_gate_rates(between_sd=0.03, within_cv=0.02, n=10, fail_pct=2.0,
                                 calibration_runs=5, seed=7, planted_pct=25.0)
    assert caught.rate >= 0.5, caught


def _levels_run(st: Store, level: float, seed: int, n: int = 10, cv: float = 0.01,
                **kwargs: Any) -> str:
    rng = np.random.default_rng(seed)
    return add_run(st, {"default": level * rng.lognormal(0.0, cv, n)}, **kwargs)


def _calibrate(st: Store, levels: Sequence[float] = CALIBRATION_LEVELS, **kwargs: Any
               ) -> NoiseProfile:
    ids = [_levels_run(st, level, 100 + i, **kwargs) for i, level in enumerate(levels)]
    profile = build_profile([load_run(i, lambda: st) for i in ids])
    profile.id = st.add_noise_profile(
        fingerprint=profile.fingerprint, experiment_hash=profile.experiment_hash,
        experiment=profile.experiment, host=profile.host, variant=profile.variant,
        run_ids=profile.run_ids, data=profile.data())
    return profile


def test_a_profile_round_trips_through_the_store(sqlite_store: Store) -> None:
    built = _calibrate(sqlite_store)
    probe = load_run(built.run_ids[0], lambda: sqlite_store)
    found = find_profile(sqlite_store, probe)
    assert found is not None and found.id == built.id and found.run_ids == built.run_ids
    time_noise = found.for_metric("w", "time_s")
    assert time_noise is not None
    assert time_noise == built.for_metric("w", "time_s")
    assert 0.02 < time_noise.between_sd < 0.05 and time_noise.within_sd < 0.02
    rows = {r["metric"]: r for r in plan_rows(found, 10, detect_pct=5.0)}
    assert rows["time_s"]["runs"] == 5 and rows["time_s"]["values"] == 50
    assert [d["runs_per_side"] for d in rows["time_s"]["detectable_pct"]] == [1, 2, 4]
    assert rows["time_s"]["detect"]["runs_per_side_at_n"] >= 2  # drift: one run is not enough


def test_a_profile_belongs_to_one_host_and_one_experiment_file(sqlite_store: Store) -> None:
    _calibrate(sqlite_store)
    other_host = load_run(_levels_run(sqlite_store, 1.0, 1, host="host-b"),
                          lambda: sqlite_store)
    other_cpu = load_run(_levels_run(sqlite_store, 1.0, 2, run_facts=facts(model="Other")),
                         lambda: sqlite_store)
    other_file = load_run(_levels_run(sqlite_store, 1.0, 3, spec_yaml="name: exp\n# edited\n"),
                          lambda: sqlite_store)
    for run in (other_host, other_cpu, other_file):
        assert find_profile(sqlite_store, run) is None


def test_the_latest_profile_counts(sqlite_store: Store) -> None:
    _calibrate(sqlite_store)
    latest = _calibrate(sqlite_store, (1.0, 1.0, 1.0))
    probe = load_run(latest.run_ids[0], lambda: sqlite_store)
    found = find_profile(sqlite_store, probe)
    assert found is not None and found.id == latest.id


def _drifted_pair(st: Store) -> tuple[str, str]:
    """Two runs of one configuration whose levels differ by 5 % (drift), CV 1 %, n = 10."""
    return _levels_run(st, 1.0, 11), _levels_run(st, 1.05, 12)


def test_compare_uses_the_profile_of_news_host_and_file(sqlite_store: Store, cli,  # type: ignore[no-untyped-def]
                                                        tmp_path: Path) -> None:
    store = str(tmp_path / "decide.db")
    base, new = _drifted_pair(sqlite_store)
    code, out, _ = cli("compare", base, new, "-s", store, "--fail-if-worse", "2", "--json")
    document = json.loads(out)
    assert code == 1 and document["variance_model"]["kind"] == "independent"
    assert "run `virtbench calibrate`" in document["variance_model"]["text"]
    profile = _calibrate(sqlite_store)
    code, out, _ = cli("compare", base, new, "-s", store, "--fail-if-worse", "2", "--json")
    document = json.loads(out)
    assert code == 0, out
    model = document["variance_model"]
    assert model["kind"] == "profile" and model["profile_id"] == profile.id
    assert model["text"].startswith("noise profile from 5 runs on this host")
    assert all(row["between_run_sd"] > 0.02 for row in document["rows"])
    code, out, _ = cli("compare", base, new, "-s", store, "--fail-if-worse", "2")
    assert code == 0 and "variance model: noise profile from 5 runs" in " ".join(out.split())
    code, out, _ = cli("compare", base, new, "-s", store, "--fail-if-worse", "2", "--json",
                       "--no-profile")
    assert code == 1 and "--no-profile" in json.loads(out)["variance_model"]["text"]
    # every CI format says which model it used
    code, out, _ = cli("compare", base, new, "-s", store, "--fail-if-worse", "2", "-f", "junit")
    assert code == 0 and 'name="variance_model" value="noise profile from 5 runs' in out
    code, out, _ = cli("compare", base, new, "-s", store, "--fail-if-worse", "2", "-f",
                       "markdown")
    assert code == 0 and "variance model: noise profile from 5 runs" in out


def test_without_a_profile_the_output_says_runs_are_taken_as_independent(
        sqlite_store: Store) -> None:
    base, new = (load_run(r, lambda: sqlite_store) for r in _drifted_pair(sqlite_store))
    result = compare_runs(base, new, fail_pct=2.0)
    assert result.variance.kind == "independent" and result.regressions
    assert result.variance.text == ("runs independent (no profile: the verdict assumes runs "
                                    "don't drift; run `virtbench calibrate`)")
    from virtbench.report.gate.comparison_rows import explanation, summary_line

    assert result.variance.text in summary_line(result, False)
    assert result.variance.text in explanation(result, result.rows[0])


def _runs(st: Store, levels: Sequence[float], seed: int) -> list[RunData]:
    return [load_run(_levels_run(st, level, seed + i), lambda: st)
            for i, level in enumerate(levels)]


def test_run_sets_are_judged_on_run_means(sqlite_store: Store) -> None:
    bases = _runs(sqlite_store, (1.0, 1.03, 0.98), 20)
    same = _runs(sqlite_store, (1.02, 0.99, 1.04), 30)
    slower = _runs(sqlite_store, (1.2, 1.24, 1.18), 40)
    result = compare_run_sets(bases, same, fail_pct=2.0)
    assert result.variance.kind == "run-means" and not result.regressions
    assert result.variance.text.startswith("run means of 3 and 3 runs")
    row = next(r for r in result.rows if r.metric.name == "time_s")
    assert row.result.n_base == row.result.n_new == 3
    means = [r.values[("default", "w", "time_s")].mean() for r in same]
    assert row.result.mean_new == pytest.approx(np.mean(means))
    assert compare_run_sets(bases, slower, fail_pct=2.0).regressions
    # the same runs as one run each side would be called a regression (5 % apart)
    assert compare_runs(bases[2], same[2], fail_pct=2.0).regressions


def test_run_sets_on_the_command_line(sqlite_store: Store, cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    store = str(tmp_path / "decide.db")
    bases = [r.id for r in _runs(sqlite_store, (1.0, 1.03, 0.98), 20)]
    news = [r.id for r in _runs(sqlite_store, (1.2, 1.24, 1.18), 40)]
    code, out, err = cli("compare", *bases, "--", *news, "-s", store, "--fail-if-worse", "2",
                         "--json")
    assert code == 1, err
    document = json.loads(out)
    assert [r["id"] for r in document["new_runs"]] == news
    assert document["variance_model"] == {
        "kind": "run-means", "text": "run means of 3 and 3 runs (each run one value: drift "
                                     "estimated from the runs themselves)",
        "profile_id": None, "profile_runs": None, "base_runs": 3, "new_runs": 3}
    code, out, _ = cli("compare", *bases, "--", *news, "-s", store, "--fail-if-worse", "2")
    flat = " ".join(out.split())
    assert code == 1 and "run means of 3 and 3 runs" in flat and "regression" in flat
    assert all(i in out for i in bases + news)
    code, out, _ = cli("compare", *bases, "--", *news, "-s", store, "-f", "junit",
                       "--fail-if-worse", "2")
    assert code == 1 and f'name="new_run" value="{",".join(news)}"' in out
    code, _, _ = cli("compare", *bases, "--", *news, "-s", store, "--strict")
    assert code == 0  # same facts and settings: nothing refused, no gate asked
    other_cpu = _levels_run(sqlite_store, 1.0, 70, run_facts=facts(model="Other CPU"))
    code, _, err = cli("compare", *bases, "--", news[0], other_cpu, "-s", store, "--strict")
    assert code == 2 and "--strict" in err and "Other CPU" in err
    code, _, err = cli("compare", bases[0], "--", *news, "-s", store)
    assert code == 2 and "at least 2 runs on each side" in err
    code, _, err = cli("compare", *bases, "--", "-s", store)
    assert code == 2 and "each side" in err
    code, _, err = cli("compare", *bases, "--", *news, "-s", store, "-f", "csv")
    assert code == 2 and "BASE... -- NEW..." in err
    # one run a side is `compare BASE NEW`
    code, out, _ = cli("compare", bases[0], "--", news[0], "-s", store, "--json")
    assert code == 0 and json.loads(out)["variance_model"]["kind"] == "independent"


def test_a_side_from_two_experiment_files_is_refused(sqlite_store: Store) -> None:
    from virtbench.model import VirtbenchError

    bases = _runs(sqlite_store, (1.0, 1.0), 50)
    edited = load_run(_levels_run(sqlite_store, 1.0, 60, spec_yaml="name: exp\n# v2\n"),
                      lambda: sqlite_store)
    with pytest.raises(VirtbenchError, match="different experiment files"):
        compare_run_sets(bases, [bases[0], edited])


def test_a_store_from_before_profiles_gains_the_table(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old = Store(str(path))
    run_id = _levels_run(old, 1.0, 1)
    old.close()
    with sqlite3.connect(path) as conn:  # what a schema-5 store looks like
        conn.execute("DROP TABLE noise_profiles")
        conn.execute("UPDATE schema_version SET version = 5")
    store = Store(str(path))
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchone()[0] == len(MIGRATIONS)
        indexes = {r[1] for r in conn.execute("PRAGMA index_list(noise_profiles)")}
    assert "ix_noise_profiles_key" in indexes
    run = load_run(run_id, lambda: store)  # the old run reads as before
    assert run.values[("default", "w", "time_s")].size == 10
    assert find_profile(store, run) is None
    profile = _calibrate(store)
    assert find_profile(store, load_run(profile.run_ids[0], lambda: store)) is not None


def test_export_and_import_ignore_profiles(sqlite_store: Store, tmp_path: Path) -> None:
    profile = _calibrate(sqlite_store)
    exported = tmp_path / "run.json.gz"
    export_run(sqlite_store, profile.run_ids[0], exported)
    other = Store(str(tmp_path / "other.db"))
    assert import_run(other, exported) == profile.run_ids[0]
    assert find_profile(other, load_run(profile.run_ids[0], lambda: other)) is None


def test_calibrate_table_states_components_detectable_effects_and_definitions(
        sqlite_store: Store) -> None:
    from rich.console import Console

    from virtbench.decide.calibration import plan_document
    from virtbench.report.decide_text import render_calibration

    profile = _calibrate(sqlite_store)
    console = Console(record=True, width=160, file=open("/dev/null", "w"))  # noqa: SIM115
    render_calibration(plan_document(profile, 10, 5.0, "--budget 60 s: stopped"), console)
    text = " ".join(console.export_text().split())
    for expected in ("noise profile from 5 runs of variant default",
                     "within SD", "between SD [95 % CI]", "R = 1", "R = 4",
                     "n for 5 %", "R for 5 %", "w · time_s ↓", "never",
                     "(z₀.₉₅ + z₀.₈)·√(2(σ_b² + σ_w²/n)/R)",
                     "w · time_s: s, lower is better: wall time of one operation",
                     "drift between runs outweighs the noise within a run",
                     "--budget 60 s: stopped"):
        assert expected in text, expected


def test_profiles_and_their_migration_on_postgresql(postgres_url: str) -> None:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    admin = create_engine(postgres_url.replace("postgresql://", "postgresql+psycopg://"),
                          isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text("DROP DATABASE IF EXISTS vbstore_profiles WITH (FORCE)"))
        conn.execute(text("CREATE DATABASE vbstore_profiles"))
    url = make_url(postgres_url).set(database="vbstore_profiles").render_as_string(
        hide_password=False)
    try:
        old = Store(url)
        run_id = _levels_run(old, 1.0, 1)
        with old.engine.begin() as conn:  # back to schema 5: no profiles table
            conn.execute(text("DROP TABLE noise_profiles"))
            conn.execute(text("UPDATE schema_version SET version = 5"))
        old.close()
        store = Store(url)
        assert find_profile(store, load_run(run_id, lambda: store)) is None
        profile = _calibrate(store)
        found = find_profile(store, load_run(profile.run_ids[0], lambda: store))
        assert found is not None and found.id == profile.id
        assert found.for_metric("w", "time_s") == profile.for_metric("w", "time_s")
        store.close()
    finally:
        with admin.connect() as conn:
            conn.execute(text("DROP DATABASE IF EXISTS vbstore_profiles WITH (FORCE)"))
        admin.dispose()


def test_probability_uses_the_same_variance_model(sqlite_store: Store) -> None:
    """--probability's likelihood is the gate's: with a profile, drift makes 'at least 2 %
    worse' less certain for two runs 5 % apart; on run means it is computed from the runs."""
    base, new = (load_run(r, lambda: sqlite_store) for r in _drifted_pair(sqlite_store))
    plain = compare_runs(base, new, probability_pct=2.0)
    profile = _calibrate(sqlite_store)
    drifting = compare_runs(base, new, probability_pct=2.0, profile=profile)
    for p_plain, p_drift in zip((r.probability_worse for r in plain.rows),
                                (r.probability_worse for r in drifting.rows), strict=True):
        assert 0.99 < p_plain <= 1.0 and 0.5 < p_drift < 0.95
    bases = _runs(sqlite_store, (1.0, 1.03, 0.98), 20)
    news = _runs(sqlite_store, (1.02, 0.99, 1.04), 30)
    sets = compare_run_sets(bases, news, probability_pct=2.0)
    assert all(0.0 < r.probability_worse < 0.9 for r in sets.rows)
