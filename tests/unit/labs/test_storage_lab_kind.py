"""The storage lab is named `storage` on both sides (labs/storage_lab.py, workloads/storage/); the
former kind `fs` still runs, with a notice naming the file line."""

from pathlib import Path

import pytest

from virtbench.plugins import all_labs
from virtbench.spec import parse_experiment

EXAMPLES = Path(__file__).parents[3] / "examples"


def _experiment(kind: str) -> str:
    return f"""\
name: fs-rename
baseline: a
variants:
  - name: a
    knobs: {{filesystem: tmpfs}}
workloads:
  - name: storage.fio
lab:
  kind: {kind}
"""


def test_storage_lab_is_registered_as_storage_not_fs() -> None:
    labs = all_labs()
    assert labs["storage"].__module__ == "virtbench.labs.storage_lab"
    assert "fs" not in labs


def test_former_kind_fs_runs_as_storage_with_a_notice_naming_the_line() -> None:
    with pytest.warns(FutureWarning, match=r"old\.yaml:9: lab\.kind 'fs' is deprecated.*"
                                           r"`kind: storage`"):
        exp = parse_experiment(_experiment("fs"), "old.yaml")
    assert exp.lab.kind == "storage"


def test_current_kind_gives_no_notice(recwarn: pytest.WarningsRecorder) -> None:
    assert parse_experiment(_experiment("storage"), "new.yaml").lab.kind == "storage"
    assert not [w for w in recwarn if issubclass(w.category, FutureWarning)]


def test_storage_examples_use_the_new_kind() -> None:
    for name in ("storage-study.yaml", "storage-study-exact.yaml"):
        text = (EXAMPLES / name).read_text()
        assert "kind: storage" in text and "kind: fs" not in text, name
