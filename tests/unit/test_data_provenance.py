"""Every saved tool output under tests/data/ says where and how it was produced: a README.md in
its directory names it (by name, or by a glob in backticks such as `fio3.33-*`)."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "data"
DIRS = sorted({p.parent for p in DATA.rglob("*") if p.is_file() and p.name != "README.md"})


def _mentioned(name: str, readme: str) -> bool:
    globs = [t for t in re.findall(r"`([^`\s]+)`", readme) if "*" in t]
    return name in readme or any(fnmatch.fnmatch(name, g) or fnmatch.fnmatch(name, g + "*")
                                 for g in globs)


@pytest.mark.parametrize("folder", DIRS, ids=lambda p: str(p.relative_to(DATA)))
def test_every_saved_output_is_described_beside_it(folder: Path) -> None:
    readme = folder / "README.md"
    assert readme.exists(), f"{folder}: no README.md saying where its files come from"
    text = readme.read_text()
    missing = sorted(f.name for f in folder.iterdir()
                     if f.is_file() and f.name != "README.md" and not _mentioned(f.name, text))
    assert not missing, f"{readme} does not mention {missing}"
