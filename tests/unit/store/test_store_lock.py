"""A trial keeps trying to store itself while another writer holds the SQLite file's lock."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
from waits import join

from virtbench.model import Measurement
from virtbench.store import Store, TrialRecord
from virtbench.store import store as store_module
from virtbench.store.store import StoreFailed


def _lock_for(path: Path, seconds: float) -> threading.Thread:
    locked = threading.Event()

    def hold() -> None:
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # the write lock, as another writer's long trial
        locked.set()
        threading.Event().wait(seconds)
        other.execute("COMMIT")
        other.close()

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    assert locked.wait(60), "the other writer never got the lock"
    return thread


def _record(store: Store, run_id: str) -> int:
    trial = TrialRecord("a", "w", 0, 0, False, "ok", "", 1.0, 2.0, "local", None, {})
    return store.record_trial(run_id, trial, [Measurement("time_s", 1.0)], {"time_s": "s"})


def _run(store: Store) -> str:
    run_id = store.create_run(experiment="e", description="d", spec_yaml="name: e\n",
                              spec_path="e.yaml", seed=1, host="h", target="local",
                              baseline="a", version="test")
    store.add_variants(run_id, [("a", {})], "a")
    return run_id


@pytest.fixture
def short_busy_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_MS", 100)


def test_a_trial_outwaits_a_lock_longer_than_the_busy_timeout(
        tmp_path: Path, short_busy_timeout: None) -> None:
    store = Store(str(tmp_path / "s.db"))
    run_id = _run(store)
    holder = _lock_for(tmp_path / "s.db", 1.0)  # ten busy timeouts
    try:
        assert _record(store, run_id) > 0
    finally:
        join(holder, 60, "the other writer")
    assert len(store.samples(run_id)) == 1
    store.close()


def test_without_patience_the_lock_is_reported_not_waited_out(
        tmp_path: Path, short_busy_timeout: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "TRIAL_LOCK_PATIENCE_S", 0.0)
    store = Store(str(tmp_path / "s.db"))
    run_id = _run(store)
    holder = _lock_for(tmp_path / "s.db", 1.0)
    try:
        with pytest.raises(StoreFailed, match="database is locked"):
            _record(store, run_id)
    finally:
        join(holder, 60, "the other writer")
    store.close()
