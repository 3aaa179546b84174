"""The store contract, on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

from pathlib import Path

import pytest

from virtbench.model import Artifact, Better, Measurement, Metric, VirtbenchError
from virtbench.store import Store, TrialRecord
from virtbench.store.portable import export_run, import_run

METRIC = Metric("time_s", "s", Better.LOWER, "time", primary=True)


def _run(store: Store, name: str = "exp") -> str:
    run_id = store.create_run(experiment=name, description="d", spec_yaml="name: x\n",
                              spec_path="x.yaml", seed=1, host="h", target="local",
                              baseline="a", version="test")
    store.add_variants(run_id, [("a", {"cpu_features": []}), ("b", {"cpu_features": ["aes"]})],
                       "a")
    store.add_workload(run_id, "w", "cpu.test", 0, {"size": 1}, [METRIC])
    return run_id


def _trial(store: Store, run_id: str, variant: str, rep: int, values: list[float],
           warmup: bool = False, status: str = "ok") -> int:
    record = TrialRecord(variant=variant, workload_id="w", repetition=rep, order_index=rep,
                         warmup=warmup, status=status, error="", started_at=1.0, ended_at=2.0,
                         target="local", facts_id=None, notes={"k": "v"})
    return store.record_trial(run_id, record, [Measurement("time_s", v) for v in values],
                              {"time_s": "s"}, [Artifact("raw.txt", b"raw output")])


def test_samples_keep_their_context(store: Store) -> None:
    run_id = _run(store)
    facts_id = store.add_facts(run_id, "before", {"cpu": {"model": "x"}})
    assert facts_id > 0
    _trial(store, run_id, "a", 0, [1.5])
    (row,) = store.samples(run_id)
    assert (row.variant, row.workload_id, row.metric, row.value, row.unit, row.repetition) == (
        "a", "w", "time_s", 1.5, "s", 0)
    assert store.run("latest").experiment == "exp"
    assert store.metrics(run_id)[("w", "time_s")] == METRIC
    assert store.variants(run_id)[1] == ("b", {"cpu_features": ["aes"]}, False)
    assert store.artifacts(run_id)[0]["content"] == b"raw output"
    assert store.facts(run_id)[0][3] == {"cpu": {"model": "x"}}


def test_warmup_trials_store_no_samples(store: Store) -> None:
    run_id = _run(store)
    _trial(store, run_id, "a", -1, [9.0], warmup=True)
    assert store.samples(run_id) == []
    assert store.completed_trials(run_id) == set()


def test_completed_trials_and_order(store: Store) -> None:
    run_id = _run(store)
    _trial(store, run_id, "a", 0, [1.0])
    _trial(store, run_id, "b", 0, [2.0], status="failed")
    assert store.completed_trials(run_id) == {("a", "w", 0)}
    assert store.next_order_index(run_id) == 1
    assert list(store.scalar_values(run_id)) == [("a", "w", "time_s", 1.0), ("b", "w", "time_s",
                                                                              2.0)]


def test_unmeasured_values_are_counted_not_dropped(store: Store) -> None:
    run_id = _run(store)
    record = TrialRecord("a", "w", 0, 0, False, "ok", "", 1.0, 2.0, "local", None, {})
    store.record_trial(run_id, record, [Measurement("time_s", None, status="too_fast")],
                       {"time_s": "s"})
    assert store.status_counts(run_id) == {("a", "w", "time_s", "too_fast"): 1}
    assert list(store.scalar_values(run_id)) == []


def test_a_per_request_trial_keeps_every_sample_and_its_labels(store: Store) -> None:
    # Many samples (PostgreSQL takes a trial's samples by COPY: store._trial_writes); labels
    # with the characters COPY's text format must escape.
    run_id = _run(store)
    facts_id = store.add_facts(run_id, "before", {"cpu": {"model": "x"}})
    record = TrialRecord("b", "w", 3, 7, False, "ok", "", 1.0, 2.0, "host-1", facts_id, {})
    sent = [Measurement("time_s", i / 7 if i % 50 else None, t=i * 0.01 if i % 3 else None,
                        labels={"url": f"/p\\{i}\t\n'\"", "status": "200"} if i % 2 else {},
                        status="ok" if i % 50 else "not_measured")
            for i in range(250)]
    trial_id = store.record_trial(run_id, record, sent, {"time_s": "s"},
                                  [Artifact("raw.txt", b"raw")])
    rows = store.samples(run_id)
    assert [(r.value, r.t, r.labels, r.status) for r in rows] == [
        (m.value, m.t, m.labels, m.status) for m in sent]
    assert {(r.variant, r.workload_id, r.repetition, r.unit, r.trial_id) for r in rows} == {
        ("b", "w", 3, "s", trial_id)}
    assert store.artifacts(run_id)[0]["trial_id"] == trial_id
    (trial,) = store.trials(run_id)
    assert (trial["id"], trial["target"], trial["facts_id"]) == (trial_id, "host-1", facts_id)
    store.record_trial(run_id, TrialRecord("b", "w", -1, 8, True, "ok", "", 1.0, 2.0, "host-1",
                                           facts_id, {}), sent, {"time_s": "s"})
    assert store.sample_count(run_id) == len(sent)  # a warm-up trial stores no samples


def test_run_lookup(store: Store) -> None:
    first = _run(store, "one")
    second = _run(store, "two")
    assert store.run(first[:6]).id == first
    assert store.run("two").id == second
    with pytest.raises(VirtbenchError, match="no run matches"):
        store.run("nothing-like-this")


def test_saved_state_round_trip(store: Store) -> None:
    store.save_state("kvm:dom1", {"xml": "<domain/>"})
    assert store.load_state("kvm:dom1") == {"xml": "<domain/>"}
    store.delete_state("kvm:dom1")
    assert store.load_state("kvm:dom1") is None


def test_export_import_round_trip(store: Store, tmp_path: Path) -> None:
    run_id = _run(store)
    store.add_facts(run_id, "before", {"kernel": "6.1"})
    for rep in range(3):
        _trial(store, run_id, "a", rep, [1.0 + rep])
        _trial(store, run_id, "b", rep, [0.5 + rep])
    path = tmp_path / "run.json.gz"
    assert export_run(store, run_id, path) == 6
    other = Store(str(tmp_path / "other.db"))
    assert import_run(other, path) == run_id
    assert sorted(other.scalar_values(run_id)) == sorted(store.scalar_values(run_id))
    assert other.run(run_id).imported_from == str(path)
    assert other.facts(run_id)[0][3] == {"kernel": "6.1"}
    with pytest.raises(VirtbenchError, match="already in the store"):
        import_run(other, path)
    import_run(other, path, replace=True)
    assert len(other.samples(run_id)) == 6


def test_import_reads_a_recompressed_export_and_names_damage(tmp_path: Path) -> None:
    import gzip

    import zstandard

    store = Store(str(tmp_path / "s.db"))
    run_id = _run(store)
    _trial(store, run_id, "a", 0, [1.0])
    exported = tmp_path / "run.json.gz"
    export_run(store, run_id, exported)
    recompressed = tmp_path / "run.json.zst"  # a user's archive: gunzip, then zstd
    recompressed.write_bytes(zstandard.ZstdCompressor().compress(
        gzip.decompress(exported.read_bytes())))
    assert import_run(Store(str(tmp_path / "other.db")), recompressed) == run_id
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(exported.read_bytes()[:-30])
    with pytest.raises(VirtbenchError, match=r"cut.json.gz: truncated or damaged \(gzip: .+\); "
                                             "export the run again"):
        import_run(Store(str(tmp_path / "third.db")), cut)


def test_import_rejects_foreign_file(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"hello": 1}')
    with pytest.raises(VirtbenchError, match="not a virtbench result file"):
        import_run(Store(str(tmp_path / "s.db")), path)


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    from sqlalchemy import update

    from virtbench.store import schema

    st = Store(str(tmp_path / "s.db"))
    with st.engine.begin() as conn:
        conn.execute(update(schema.schema_version).values(version=99))
    st.close()
    with pytest.raises(VirtbenchError, match="newer than this virtbench supports"):
        Store(str(tmp_path / "s.db"))


def test_series_rows_extract_the_series_label(store: Store) -> None:
    run_id = _run(store)
    record = TrialRecord("a", "w", 0, 0, False, "ok", "", 1.0, 2.0, "local", None, {})
    store.record_trial(run_id, record, [
        Measurement("time_s", 0.5, t=1.0, labels={"series": "interval", "url": "/a"}),
        Measurement("time_s", 0.7, t=2.0, labels={"url": "/b"}),
        Measurement("time_s", None, t=3.0, status="timeout"),
        Measurement("time_s", 0.9),
    ], {"time_s": "s"})
    rows = store.series_rows(run_id)
    assert [(r[5], r[6], r[7]) for r in rows] == [(1.0, 0.5, "interval"), (2.0, 0.7, None)]
    assert list(store.scalar_values(run_id)) == [("a", "w", "time_s", 0.9)]
