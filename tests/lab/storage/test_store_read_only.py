"""A store on a read-only filesystem is read by every reading command: `runs`, `report`,
`export`, `compare` (SQLite's mode=ro, immutable=1 where a WAL store's -shm cannot be made).
The filesystem is a tmpfs made here and remounted read-only; a writing command there fails
with one line."""

from __future__ import annotations

import gc
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from virtbench.cli.root import app
from virtbench.model import Artifact, Better, Measurement, Metric
from virtbench.store import Store, TrialRecord
from virtbench.targets.local import LocalTarget

pytestmark = [pytest.mark.lab, pytest.mark.timeout(120)]

if os.geteuid() != 0:
    pytest.skip("needs root (mounts a tmpfs)", allow_module_level=True)


def _fill(store: Store) -> str:
    run_id = store.create_run(experiment="ro", description="", spec_yaml="name: ro\n",
                              spec_path="ro.yaml", seed=1, host="h", target="local",
                              baseline="a", version="t")
    store.add_variants(run_id, [("a", {}), ("b", {})], "a")
    store.add_workload(run_id, "w", "cpu.test", 0, {},
                       [Metric("time_s", "s", Better.LOWER, "time", primary=True)])
    for rep in range(3):
        for i, variant in enumerate(("a", "b")):
            store.record_trial(run_id, TrialRecord(variant, "w", rep, 2 * rep + i, False, "ok",
                                                   "", 1000.0, 1001.0, "local", None, {}),
                               [Measurement("time_s", 1.0 + i + rep / 10)], {"time_s": "s"},
                               [Artifact("raw.txt", b"raw")])
    store.set_run_status(run_id, "complete", "done")
    return run_id


@pytest.fixture
def read_only_store(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A store in WAL mode, closed (no -wal or -shm left), on a tmpfs remounted read-only."""
    mount = tmp_path / f"vbstore-{uuid.uuid4().hex[:8]}"
    mount.mkdir()
    _root("mount", "-t", "tmpfs", "-o", "size=16m", "vbstoredtext", str(mount))
    try:
        store = Store(str(mount / "ro.db"))
        run_id = _fill(store)
        _fill(store)
        store.close()
        assert sorted(p.name for p in mount.iterdir()) == ["ro.db"]
        _root("mount", "-o", "remount,ro", str(mount))
        yield mount / "ro.db", run_id
    finally:
        gc.collect()  # the commands ran in this process: their readers' files are closed
        _root("umount", "--lazy", str(mount))


def _root(*argv: str) -> None:
    result = LocalTarget().run(list(argv), timeout=30)
    assert result.returncode == 0, result.stderr


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_reading_commands_read_a_store_on_a_read_only_filesystem(
        read_only_store: tuple[Path, str], tmp_path: Path) -> None:
    db, run_id = read_only_store
    code, out = _cli("runs", "--store", str(db))
    assert code == 0 and run_id in out, out
    code, out = _cli("report", run_id, "--store", str(db), "-f", "csv")
    assert code == 0 and "time_s" in out, out
    exported = tmp_path / "ro.json.gz"
    code, out = _cli("export", run_id, "--store", str(db), "-o", str(exported))
    assert code == 0 and exported.stat().st_size > 0, out
    code, out = _cli("compare", "ro", run_id, "--store", str(db))
    assert code == 0 and "time_s" in out, out
    code, out = _cli("import", str(exported), "--store", str(tmp_path / "copy.db"))
    assert code == 0, out
    assert sorted(p.name for p in db.parent.iterdir()) == ["ro.db"]


def test_a_writing_command_there_fails_with_one_line(read_only_store: tuple[Path, str],
                                                     tmp_path: Path) -> None:
    db, run_id = read_only_store
    code, out = _cli("import", str(tmp_path / "missing.json"), "--store", str(db))
    assert code == 2 and "Traceback" not in out, out
    exported = tmp_path / "x.json.gz"
    assert _cli("export", run_id, "--store", str(db), "-o", str(exported))[0] == 0
    code, out = _cli("import", str(exported), "--store", str(db), "--replace")
    assert code in (1, 2) and out.startswith("error: ") and "Traceback" not in out, out
    assert len(out.strip().splitlines()) == 1, out
