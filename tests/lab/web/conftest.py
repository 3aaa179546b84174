"""Fixtures: a real static web lab (nginx + varnishd on 127.0.0.1) that always cleans up."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from webhelpers import make_lab

from virtbench.labs.web import WebLab


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A private directory the nginx and varnish users can traverse (pytest's tmp is 0700)."""
    path = Path(tempfile.mkdtemp(prefix="vbweb-test-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


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
