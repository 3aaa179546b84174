"""The unit tests mirror the source tree: tests/unit/<package>/ for each package and subpackage
of src/virtbench (tests/unit/report/sections/ for report.sections, tests/unit/labs/net/ for
labs.net), holding the tests of that package's own modules; a top-level module's tests in
tests/unit/test_<module>.py, or in a folder of its name when they are many (plugins: plugins.py
and registry.py). A new package gets its folder, and no folder names
something that does not exist (docs/contributing.md, "Where a test goes")."""

from __future__ import annotations

from pathlib import Path

UNIT = Path(__file__).parent
SRC = UNIT.parents[1] / "src" / "virtbench"


def _packages(root: Path) -> set[str]:
    return {str(p.parent.relative_to(root)) for p in root.rglob("__init__.py")
            if "__pycache__" not in p.parts} - {"."}


def _test_folders(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_dir()
            and "__pycache__" not in p.parts and any(p.glob("test_*.py"))}


def test_every_package_and_subpackage_has_its_test_folder() -> None:
    assert sorted(_packages(SRC) - _test_folders(UNIT)) == []


def test_every_test_folder_names_a_package_or_module() -> None:
    modules = {p.stem for p in SRC.glob("*.py")}
    assert sorted(_test_folders(UNIT) - _packages(SRC) - modules) == []
