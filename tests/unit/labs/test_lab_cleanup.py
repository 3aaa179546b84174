"""labs.cleanup (what `virtbench lab clean` runs): which manifests it cleans, skips and keeps."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

from virtbench import plugins
from virtbench.cli.root import app
from virtbench.labs import cleanup
from virtbench.labs.lab_contract import Lab, LabState, Manifest
from virtbench.plugins import all_labs


def _dead_pid() -> int:
    proc = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True, check=True,
                          timeout=60)
    return int(proc.stdout)


def _manifest(root: Path, name: str, lab: str, objects: dict[str, list[Any]],
              pid: int | None = None) -> Path:
    path = root / f"{name}.json"
    path.write_text(json.dumps({"lab": lab, "pid": pid or _dead_pid(), "objects": objects}))
    return path


class StubbornLab(Lab):
    """Removes its "dir" objects, never its "stuck" ones."""

    name: ClassVar[str] = "stubborn"
    description: ClassVar[str] = "test stand-in"

    def enter(self, variant: str, knobs: Mapping[str, Any]) -> LabState:
        return LabState()

    @classmethod
    def clean(cls, manifest: Manifest) -> list[str]:
        done = []
        for path in manifest.items("dir"):
            Path(path).rmdir()
            manifest.remove("dir", path)
            done.append(f"directory {path}")
        return done


@pytest.fixture
def labs(monkeypatch: pytest.MonkeyPatch) -> dict[str, type[Lab]]:
    """Every lab plus the stubborn one, for clean_leftovers and for `virtbench lab clean`."""
    with_stubborn: dict[str, type[Lab]] = {**all_labs(), "stubborn": StubbornLab}
    monkeypatch.setattr(plugins, "all_labs", lambda: with_stubborn)
    return with_stubborn


def test_clean_removes_skips_and_keeps(tmp_path: Path, labs: dict[str, type[Lab]]) -> None:
    gone, stuck = tmp_path / "gone", tmp_path / "stuck"
    gone.mkdir()
    stuck.mkdir()
    done = _manifest(tmp_path, "a", "stubborn", {"dir": [str(gone)]})
    alive = _manifest(tmp_path, "b", "stubborn", {"dir": [str(stuck)]}, pid=os.getppid())
    unknown = _manifest(tmp_path, "c", "no-such-lab", {"dir": [str(stuck)]})
    kept = _manifest(tmp_path, "d", "stubborn", {"stuck": [str(stuck)]})
    outcome = cleanup.clean_leftovers(labs, tmp_path)
    texts = [(e.kind, e.text) for e in outcome.events]
    assert ("removed", f"removed directory {gone}") in texts
    assert ("skipped", f"skipping b.json: its run (pid {os.getppid()}) is still alive") in texts
    assert ("skipped", "skipping c.json: unknown lab 'no-such-lab'") in texts
    assert ("kept", f"kept {kept}: could not remove {{'stuck': ['{stuck}']}}") in texts
    assert not gone.exists() and stuck.exists()
    assert not done.exists() and alive.exists() and unknown.exists() and kept.exists()
    assert not outcome.complete
    assert outcome.summary() == ("lab clean: 1 objects removed; 1 manifests still list objects "
                                 "(see above)")


def test_manifest_of_the_former_fs_lab_is_cleaned_by_the_storage_lab(tmp_path: Path) -> None:
    scratch = tmp_path / "vbfs-scratch"
    scratch.mkdir()
    old = _manifest(tmp_path, "vbfs-1-abc", "fs", {"dir": [str(scratch)]})
    outcome = cleanup.clean_leftovers(all_labs(), tmp_path)
    assert [e.text for e in outcome.events] == [f"removed directory {scratch}"]
    assert outcome.complete and not old.exists() and not scratch.exists()


def test_cli_prints_events_and_fails_when_objects_are_kept(tmp_path: Path,
                                                           labs: dict[str, type[Lab]],
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    monkeypatch.setenv("VIRTBENCH_LAB_ROOT", str(tmp_path))
    stuck = tmp_path / "stuck[1]"  # brackets: printed as text, never read as markup
    stuck.mkdir()
    _manifest(tmp_path, "d", "stubborn", {"stuck": [str(stuck)]})
    result = CliRunner().invoke(app, ["lab", "clean"])
    assert result.exit_code == 1
    assert "stuck[1]" in result.output
    assert "lab clean: 0 objects removed; 1 manifests still list objects" in result.output
