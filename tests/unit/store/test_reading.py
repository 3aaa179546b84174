"""The reads of a SQLite store through ``sqlite3`` (SqliteReader, no SQLAlchemy) give what the
full store gives through SQLAlchemy, and opening one refuses or falls back as the store does."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from store_helpers import METRIC, make_run

from virtbench.model import Measurement, VirtbenchError
from virtbench.store import Store, StoreFailed, TrialRecord
from virtbench.store.migrations import MIGRATIONS
from virtbench.store.reading import SCHEMA_VERSION
from virtbench.store.rows import TABLES
from virtbench.store.sqlite_reader import SqliteReader, open_reader


def _filled(path: Path) -> tuple[Store, list[str]]:
    """Two runs with every kind of row (:func:`_filled_into`) in a new SQLite store."""
    store = Store(str(path))
    return store, _filled_into(store)


def test_every_read_gives_what_the_full_store_gives(tmp_path: Path) -> None:
    store, run_ids = _filled(tmp_path / "s.db")
    reader = open_reader(str(tmp_path / "s.db"))
    assert isinstance(reader, SqliteReader)
    assert reader.runs() == store.runs() and len(reader.runs()) == 3
    assert reader.runs_version() == store.runs_version()
    assert reader.run("latest") == store.run("latest")
    assert reader.run("exp") == store.run("exp")
    assert reader.run(run_ids[1][:8]) == store.run(run_ids[1][:8])
    assert reader.sample_counts() == store.sample_counts()
    assert reader.sample_counts(run_ids[:1]) == store.sample_counts(run_ids[:1])
    assert reader.group_moments(run_ids) == store.group_moments(run_ids)
    assert reader.facts_of_runs(run_ids) == store.facts_of_runs(run_ids)
    for run_id in run_ids:
        for name in ("variants", "workloads", "metrics", "facts", "realisations", "trials",
                     "completed_trials", "next_order_index", "trial_progress", "sample_count",
                     "series_rows", "status_counts", "artifacts", "series_count",
                     "series_ranges"):
            mine, theirs = getattr(reader, name)(run_id), getattr(store, name)(run_id)
            assert mine == theirs, name
            assert repr(mine) == repr(theirs), name  # the same types too (bool, not 0/1)
        for table in TABLES:  # export's rows, the same values and types on both ways
            mine, theirs = reader.table_rows(table, run_id), store.table_rows(table, run_id)
            assert repr(mine) == repr(theirs), table
        assert list(reader.scalar_values(run_id)) == list(store.scalar_values(run_id))
        assert reader.samples(run_id) == store.samples(run_id)
        assert (reader.samples(run_id, workload_id="w", metric="time_s", series_only=True)
                == store.samples(run_id, workload_id="w", metric="time_s", series_only=True))
        for variant in ("a", "b"):
            reps, values = reader.group_values(run_id, variant, "w", METRIC.name)
            their_reps, their_values = store.group_values(run_id, variant, "w", METRIC.name)
            assert reps.tolist() == their_reps.tolist()
            assert values.tolist() == their_values.tolist()
            only = reader.group_values_only(run_id, variant, "w", METRIC.name)
            assert only.tolist() == values.tolist()
            assert only.tolist() == store.group_values_only(run_id, variant, "w",
                                                            METRIC.name).tolist()
            top = int(reps.max()) if reps.size else -1
            for bound in (0, top, top + 1):
                reached = reader.group_reaches(run_id, variant, "w", METRIC.name, bound)
                assert reached == store.group_reaches(run_id, variant, "w", METRIC.name, bound)
                assert reached == (0 <= bound <= top)
            series, labels = reader.range_series(run_id, variant, "w", METRIC.name)
            their_series, their_labels = store.range_series(run_id, variant, "w", METRIC.name)
            assert series.tolist() == their_series.tolist() and labels == their_labels
    # what the comparisons above rest on: the rows are there
    assert reader.trials(run_ids[0])[0]["warmup"] is True
    assert [r[7] for r in reader.series_rows(run_ids[0])] == ["GET /", None]
    assert reader.status_counts(run_ids[0]) == {("a", "w", "time_s", "timeout"): 1}
    assert reader.metrics(run_ids[0])[("w", "time_s")] == METRIC
    assert reader.load_state("kvm/a_b%c") == store.load_state("kvm/a_b%c") == {"xml": "<domain/>"}
    assert reader.load_state("missing") is None
    assert reader.state_keys("kvm/a_b%") == store.state_keys("kvm/a_b%") == ["kvm/a_b%c"]
    assert reader.state_keys("kvm/") == store.state_keys("kvm/") == ["kvm/a_b%c", "kvm/other"]
    assert reader.noise_profile("f", "h") == store.noise_profile("f", "h")
    assert reader.noise_profile("f", "other") is None
    reader.close()
    store.close()


def test_a_reader_refuses_to_write(tmp_path: Path) -> None:
    store, _ = _filled(tmp_path / "s.db")
    store.close()
    reader = open_reader(str(tmp_path / "s.db"))
    assert isinstance(reader, SqliteReader)
    with pytest.raises(StoreFailed, match=r"readonly|read-only|query_only"):
        reader._rows("DELETE FROM runs")
    assert len(reader.runs()) == 3


def test_an_older_schema_is_opened_by_the_full_store_which_migrates_it(tmp_path: Path) -> None:
    store, _ = _filled(tmp_path / "s.db")
    store.close()
    with sqlite3.connect(tmp_path / "s.db") as db:
        db.execute("UPDATE schema_version SET version = 6")
    reader = open_reader(str(tmp_path / "s.db"))
    assert isinstance(reader, Store)
    assert len(reader.runs()) == 3
    reader.close()
    assert isinstance(open_reader(str(tmp_path / "s.db")), SqliteReader)


def test_what_is_not_a_store_is_said_as_the_store_says_it(tmp_path: Path) -> None:
    with pytest.raises(VirtbenchError, match=r"no store at .*none\.db"):
        open_reader(str(tmp_path / "none.db"))
    (tmp_path / "empty.db").touch()
    with pytest.raises(VirtbenchError, match=r"no store at .*empty\.db"):
        open_reader(str(tmp_path / "empty.db"))
    (tmp_path / "text.db").write_text("not a database, a note\n" * 100)
    with pytest.raises(VirtbenchError, match=r"cannot open result store .*not a database"):
        open_reader(str(tmp_path / "text.db"))
    # a damaged page that only a query reaches: the store's own error, not a traceback
    store, _ = _filled(tmp_path / "s.db")
    store.close()
    with sqlite3.connect(tmp_path / "s.db") as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray((tmp_path / "s.db").read_bytes())
    page = 4096
    data[3 * page:] = b"\xff" * (len(data) - 3 * page)
    (tmp_path / "s.db").write_bytes(bytes(data))
    with pytest.raises(VirtbenchError, match=r"malformed|not a database|cannot open"):
        reader = open_reader(str(tmp_path / "s.db"))
        reader.samples(reader.runs()[0].id)


def test_the_schema_version_is_the_number_of_migrations() -> None:
    assert len(MIGRATIONS) == SCHEMA_VERSION


def test_reading_imports_no_sqlalchemy() -> None:
    code = ("import sys; from virtbench.store import open_reader, RunInfo, StoreReader; "
            "import virtbench.store.reading; print('sqlalchemy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "False"


def test_the_reads_on_both_databases(store: Store, tmp_path: Path) -> None:
    """What the SQL text gets from each database: booleans as such, the series label from
    its JSON, escaped LIKE prefixes, bytes, the latest noise profile."""
    first, second, running = _filled_into(store)
    trials = store.trials(first)
    assert [t["warmup"] for t in trials[:2]] == [True, True]
    assert all(t["warmup"] is False for t in trials[2:])
    assert trials[0]["notes"] == {"k": "v"}
    assert [r[7] for r in store.series_rows(first)] == ["GET /", None]
    assert store.status_counts(first) == {("a", "w", "time_s", "timeout"): 1}
    table, labels = store.range_series(first, "a", "w", "time_s")
    assert table[:, 3:].tolist() == [[0.25, 0.5], [0.5, 0.7]] and labels == ["GET /", None]
    assert store.series_count(first) == 2 and store.series_count(second) == 0
    assert store.series_ranges(first) == [("w", "time_s", "a")]
    assert store.completed_trials(second) == {(v, "w", r) for v in "ab" for r in range(2)}
    assert store.trial_progress(second)[:2] == (4, 0)
    assert store.next_order_index(second) == 6
    assert store.sample_counts([first, second]) == {first: 11, second: 4}
    assert store.variants(first)[0] == ("a", {"cpu_features": []}, True)
    assert store.metrics(first)[("w", "time_s")] == METRIC
    assert store.realisations(first)[0]["env"] == {"OMP": "1", "unset": None}
    assert store.artifacts(first)[0]["content"] == b"raw"
    assert store.state_keys("kvm/a_b%") == ["kvm/a_b%c"]
    assert store.noise_profile("f", "h")["run_ids"] == [first, second]  # type: ignore[index]
    assert store.run("live").id == running
    assert store.group_reaches(first, "a", "w", "time_s", 3)  # make_run's reps 0..3
    assert not store.group_reaches(first, "a", "w", "time_s", 4)  # the series' rep 9: t set
    assert store.group_values_only(second, "b", "w", "time_s").tolist() == [0.5, 0.51]
    moments = {(r[1], r[2]): r[4:] for r in store.group_moments([second])}
    assert moments[("a", "w")] == (2, 1.0 + 1.01, 1.0 + 1.01 ** 2)
    assert store.facts_of_runs([first, second])[second] == {"kernel": "6.1"}
    values = list(store.scalar_values(second))  # streamed (a server-side cursor on PostgreSQL)
    assert values == sorted(values, key=lambda v: (v[1], v[2], v[0])) and len(values) == 4
    assert [s.labels for s in store.samples(first, series_only=True)] == [
        {"series": "GET /", "x": "1"}, {"x": "2"}]


def _filled_into(store: Store) -> list[str]:
    first = make_run(store, "exp", reps=4)
    second = make_run(store, "other", reps=2)
    store.add_realisation(first, "b", "w", "libvirt", {"cpu": "host"}, ["no aes"],
                          {"OMP": "1", "unset": None})
    series = TrialRecord("a", "w", 9, 99, False, "ok", "", 2000.0, 2001.0, "local", None, {})
    store.record_trial(first, series, [
        Measurement("time_s", 0.5, t=0.25, labels={"series": "GET /", "x": "1"}),
        Measurement("time_s", 0.7, t=0.5, labels={"x": "2"}),
        Measurement("time_s", None, status="timeout"),
    ], {"time_s": "s"})
    store.save_state("kvm/a_b%c", {"xml": "<domain/>"})
    store.save_state("kvm/other", [1, 2])
    store.add_noise_profile(fingerprint="f", experiment_hash="h", experiment="exp", host="h",
                            variant="a", run_ids=[first, second], data={"sd": 0.1})
    running = store.create_run(experiment="live", description="", spec_yaml="", spec_path="",
                               seed=2, host="h", target="local", baseline="a", version="t")
    return [first, second, running]


def test_a_file_of_another_program_is_said_so(tmp_path: Path) -> None:
    """Stored text is not trusted: a schema version that is no number, a current version
    without virtbench's tables: a clear error from either way of opening, no traceback."""
    with sqlite3.connect(tmp_path / "text.db") as db:
        db.execute("CREATE TABLE schema_version (version TEXT)")
        db.execute("INSERT INTO schema_version VALUES ('7; DROP TABLE runs')")
    for opener in (open_reader, lambda at: Store(at, create=False)):
        with pytest.raises(VirtbenchError, match=r"schema version is '7; DROP.*not a number"):
            opener(str(tmp_path / "text.db"))
    with sqlite3.connect(tmp_path / "bare.db") as db:
        db.execute("CREATE TABLE schema_version (version INTEGER)")
        db.execute(f"INSERT INTO schema_version VALUES ({SCHEMA_VERSION})")
    reader = open_reader(str(tmp_path / "bare.db"))
    with pytest.raises(StoreFailed, match=r"no such table: runs \(a file of another program"):
        reader.runs()
