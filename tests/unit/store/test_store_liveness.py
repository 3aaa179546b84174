"""A run still marked running whose process is gone reads as abandoned, with the resume
command, in `runs`, `report` and serve's run listing and run page."""

from __future__ import annotations

import subprocess
from pathlib import Path

from served import BASE_URL
from sqlalchemy import update
from starlette.testclient import TestClient
from store_helpers import cli, make_run

from virtbench.serve import create_app
from virtbench.store import Store, schema
from virtbench.store.liveness import OwnerState, owner_state, this_owner


def _gone_pid() -> int:
    finished = subprocess.Popen(["true"])
    finished.wait()
    return finished.pid


def _crashed_run(path: Path) -> tuple[Store, str, int]:
    """A run whose process was killed (kill -9): still 'running' in the store."""
    store = Store(str(path))
    run_id = make_run(store)
    pid = _gone_pid()
    with store.engine.begin() as conn:
        conn.execute(update(schema.runs).values(status="running", ended_at=None, stop_reason="",
                                                owner_pid=pid))
    return store, run_id, pid


def test_owner_states() -> None:
    me = this_owner()
    assert owner_state(me.pid, me.host, me.boot_id) == OwnerState.ALIVE
    assert owner_state(_gone_pid(), me.host, me.boot_id) == OwnerState.GONE
    assert owner_state(me.pid, me.host, "another-boot") == OwnerState.GONE
    assert owner_state(me.pid, "another-host", me.boot_id) == OwnerState.UNKNOWN
    assert owner_state(None, None, None) == OwnerState.UNKNOWN


def test_runs_and_report_say_abandoned_with_the_resume_command(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    _store, run_id, pid = _crashed_run(db)
    resume = f"resume with `virtbench run x.yaml --resume {run_id}`"
    listing = cli("runs", "--store", str(db))
    assert listing.exit_code == 0, listing.output
    assert "abandoned" in listing.output and "running" not in listing.output
    assert f"run {run_id}: abandoned (process {pid} on " in listing.output
    assert listing.output.rstrip().endswith(resume)  # one line, copyable
    report = cli("report", run_id, "-f", "json", "--store", str(db))
    assert report.exit_code == 0, report.output
    assert '"status": "abandoned"' in report.stdout and resume in report.stdout
    assert f"process {pid} on" in report.stdout


def test_serve_lists_and_shows_the_run_as_abandoned(tmp_path: Path) -> None:
    store, run_id, _pid = _crashed_run(tmp_path / "s.db")
    with TestClient(create_app(store), base_url=BASE_URL) as client:
        listing = client.get("/runs")
        assert listing.status_code == 200
        assert ">abandoned<" in listing.text and ">running<" not in listing.text
        page = client.get(f"/runs/{run_id}")
        assert page.status_code == 200
        assert 'data-status="abandoned"' in page.text and "in progress" not in page.text
        assert f"--resume {run_id}" in page.text
        assert client.get(f"/runs/{run_id}/progress").json()["status"] == "abandoned"


def test_a_running_run_of_a_live_process_stays_running(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "s.db"))
    run_id = make_run(store)
    store.set_run_status(run_id, "running")  # this process owns it: alive
    assert store.run(run_id).status == "running"


def test_serve_notices_a_process_that_died_while_it_served(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "s.db"))
    run_id = make_run(store)
    owner = subprocess.Popen(["sleep", "60"])
    try:
        with store.engine.begin() as conn:
            conn.execute(update(schema.runs).values(status="running", ended_at=None,
                                                    owner_pid=owner.pid))
        with TestClient(create_app(store), base_url=BASE_URL) as client:
            assert ">running<" in client.get("/runs").text
            owner.kill()
            owner.wait()
            assert ">abandoned<" in client.get("/runs").text  # the cached table is re-read
            assert client.get(f"/runs/{run_id}/progress").json()["status"] == "abandoned"
    finally:
        owner.kill()
        owner.wait()


def test_an_imported_run_that_was_running_is_abandoned_and_resumable(tmp_path: Path) -> None:
    """A run exported while it ran carries its owner (this boot, a live pid: here our own):
    imported, it stayed "running" for ever and --resume refused it. The process wrote another
    store: an imported run has no owner here, reads as abandoned and can be resumed."""
    from virtbench.runner.record import refuse_if_running
    from virtbench.store.portable import export_run, import_run

    source = Store(str(tmp_path / "source.db"))
    run_id = make_run(source)
    source.set_run_status(run_id, "running")  # this process owns it: alive
    assert source.run(run_id).status == "running"
    export_run(source, run_id, tmp_path / "run.json.gz")
    store = Store(str(tmp_path / "target.db"))
    import_run(store, tmp_path / "run.json.gz")
    info = store.run(run_id)
    assert info.status == "abandoned" and info.recorded_status == "running"
    assert info.owner_pid is None and info.owner_host is None and info.owner_boot_id is None
    assert info.stop_reason.startswith(f"abandoned (imported from {tmp_path / 'run.json.gz'} "
                                       "while it ran elsewhere) — resume with `virtbench run ")
    assert info.stop_reason.endswith(f"--resume {run_id}`")
    refuse_if_running(info)  # resumable: nobody runs it here
    with TestClient(create_app(store), base_url=BASE_URL) as client:
        assert ">abandoned<" in client.get("/runs").text
        before = store.runs_version()
        assert store.claim_run(info)  # what --resume does first: this process owns it now
        assert store.runs_version() != before  # serve re-reads its runs table
        assert store.run(run_id).status == "running"
        assert ">running<" in client.get("/runs").text
