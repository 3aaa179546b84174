"""Fixtures for decide tests: a real SQLite store and a way to run the CLI in-process."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from decide_cli import CliRun

from virtbench.store import Store


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[Store]:
    st = Store(str(tmp_path / "decide.db"))
    yield st
    st.close()


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> CliRun:
    """Run `virtbench ARGS` through its real entry point; (exit code, stdout, stderr)."""
    from virtbench.cli import root as cli_module

    def run(*args: str) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["virtbench", *args])
        monkeypatch.setenv("COLUMNS", "80")
        code = 0
        try:
            cli_module.main()
        except SystemExit as exc:
            code = int(exc.code or 0)
        out, err = capsys.readouterr()
        return code, out, err

    return run
