"""Calibration runs in the run commands: `runs` marks them; `run --resume` neither picks one
('latest') nor continues one (its experiment is the baseline alone: `calibrate --resume`)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from virtbench.store import Store

SPEC = """\
name: tagged
baseline: a
variants: [{name: a}, {name: b}]
workloads: [{name: exec.command, params: {argv: ["true"]}}]
repetitions: 2
warmup: 0
"""


def _cli(*args: str) -> tuple[int, str]:
    from virtbench.cli import consoles
    from virtbench.cli.root import app

    # The console is made once per process: COLUMNS set now would not reach it when another
    # test (same pytest worker) made it first at the default 80 columns.
    width = consoles.console.width
    consoles.console.width = 160
    try:
        result = CliRunner().invoke(app, list(args), env={"COLUMNS": "160"})
    finally:
        consoles.console.width = width
    return result.exit_code, result.output


def _open(store: Store, run_id: str, calibration: str | None) -> None:
    store.create_run(experiment="tagged", description="", spec_yaml=SPEC, spec_path="x.yaml",
                     seed=1, host="h", target="local", baseline="a", version="t",
                     run_id=run_id, calibration=calibration)
    store.add_variants(run_id, [("a", {})], "a")
    store.set_run_status(run_id, "interrupted", "paused")


def test_runs_marks_calibration_runs_and_resume_leaves_them_to_calibrate(
        tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    store = Store(db)
    _open(store, "plain-1", None)
    _open(store, "cal-12ab34cd-1", "cal-12ab34cd")
    store.close()
    code, out = _cli("runs", "--store", db)
    assert code == 0, out
    rows = {line.split("│")[-2].strip(): line for line in out.splitlines()
            if line.count("│") > 2 and ("plain-1" in line or "cal-12ab34cd-1" in line)}
    assert [c.strip() for c in rows["cal-12ab34cd-1"].split("│")][2] == "calibration"
    assert [c.strip() for c in rows["plain-1"].split("│")][2] == "run"
    spec = tmp_path / "x.yaml"
    spec.write_text(SPEC)
    code, out = _cli("run", str(spec), "--store", db, "--resume", "cal-12ab34cd-1")
    assert code == 2, out
    assert ("run cal-12ab34cd-1 is a calibration run; `virtbench calibrate" in " ".join(out.split())
            and "--resume cal-12ab34cd` continues it" in " ".join(out.split()))
    store = Store(db)  # --resume latest skips it: the latest unfinished normal run
    store.delete_run("plain-1")
    store.close()
    code, out = _cli("run", str(spec), "--store", db, "--resume", "latest")
    assert code == 2 and "no unfinished run of tagged" in " ".join(out.split()), out


def test_calibrate_resume_refuses_what_it_cannot_continue(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    store = Store(db)
    for index in (1, 2):
        _open(store, f"cal-12ab34cd-{index}", "cal-12ab34cd")
    store.close()
    spec = tmp_path / "x.yaml"
    spec.write_text(SPEC)
    edited = tmp_path / "edited.yaml"
    edited.write_text(SPEC + "# edited\n")
    for args, message in (
            ((str(spec), "--resume", "../x"), "--resume: calibration id '../x' is not a run id"),
            ((str(spec), "--resume", "cal-none"), "--resume cal-none: no calibration of that id"),
            ((str(spec), "--resume", "cal-12ab34cd", "--runs", "3"),
             "--runs 3: calibration cal-12ab34cd has 2 runs"),
            ((str(edited), "--resume", "latest"),
             "calibration cal-12ab34cd was started from a different experiment file")):
        code, out = _cli("calibrate", *args, "--store", db)
        assert code == 2 and message in " ".join(out.split()), out
    empty = str(tmp_path / "empty.db")
    Store(empty).close()
    code, out = _cli("calibrate", str(spec), "--resume", "latest", "--store", empty)
    assert code == 2 and "no calibration of tagged in the store" in out, out
