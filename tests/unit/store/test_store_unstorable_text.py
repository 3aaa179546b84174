"""What no database keeps (NUL, lone surrogates) in a failed trial's error and a run's stop
reason, and run references that are not text: SQLite and PostgreSQL alike (the `store` fixture
runs each test on both)."""

from __future__ import annotations

from pathlib import Path

import pytest

from virtbench.model import Better, Metric, VirtbenchError
from virtbench.store import Store, TrialRecord
from virtbench.store.reading import store_url

# A failing command's stderr with NUL (`printf 'a\0b' >&2`) stopped a PostgreSQL run ("text
# fields cannot contain NUL") where SQLite stored the failed trial; a lone surrogate stopped
# both (no UTF-8 encoder writes one).
ERROR = "CommandFailed: sh exited 1: a\x00b \udcff"
SHOWN = "CommandFailed: sh exited 1: a\\x00b \\udcff"  # as safetext.visible shows them
METRIC = Metric("wall_time_s", "s", Better.LOWER, "time", primary=True)


def _run(store: Store) -> str:
    run_id = store.create_run(experiment="exp", description="", spec_yaml="", spec_path="",
                              seed=1, host="h", target="local", baseline="a", version="test")
    store.add_variants(run_id, [("a", {})], "a")
    store.add_workload(run_id, "w", "exec.command", 0, {}, [METRIC])
    return run_id


def test_a_failed_trial_with_nul_is_stored_alike(store: Store) -> None:
    run_id = _run(store)
    store.record_trial(run_id, TrialRecord("a", "w", 0, 0, False, "failed", ERROR, 1.0, 2.0,
                                           "local", None, {"stderr": "x\x00"}), [], {})
    store.set_run_status(run_id, "failed", f"3 trials failed in a row; last: {ERROR}")
    (trial,) = store.trials(run_id)
    assert trial["status"] == "failed" and trial["error"] == SHOWN
    assert store.run(run_id).stop_reason == f"3 trials failed in a row; last: {SHOWN}"


@pytest.mark.parametrize("ref", ["\udcff", "a\udcffb", "\ud800", "a\x00b"])
def test_a_run_reference_that_is_not_text_is_refused(store: Store, ref: str) -> None:
    _run(store)
    with pytest.raises(VirtbenchError, match="is neither a run id nor an experiment name"):
        store.run(ref)


def test_a_store_location_that_cannot_be_a_file(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(VirtbenchError, match="a symlink loop"):
        store_url(str(tmp_path / "a"))
    with pytest.raises(VirtbenchError, match="character 2 is NUL"):
        store_url("a\x00b")
    with pytest.raises(VirtbenchError, match="lone surrogate"):
        store_url(str(tmp_path / "\ud800"))
    with pytest.raises(VirtbenchError, match=r"not a URL: .*lone surrogate \\udcff"):
        store_url("postgresql://h/\udcff")
    # a file name may hold any byte: an undecodable one is that byte again
    assert store_url(str(tmp_path / "\udcff.db")).endswith("/\udcff.db")
