"""Fixtures: a real static web lab (nginx + varnishd on 127.0.0.1) that always cleans up."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from webhelpers import make_lab

from virtbench.labs.web import WebLab


@pytest.fixture
def lab_root(open_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = open_dir / "labroot"
    monkeypatch.setenv("VIRTBENCH_LAB_ROOT", str(root))
    return root


@pytest.fixture
def static_lab(open_dir: Path, lab_root: Path) -> Iterator[WebLab]:
    lab = make_lab(open_dir)
    try:
        lab.up()
        yield lab
    finally:
        lab.down()
