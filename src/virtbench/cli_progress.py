"""The progress bar of `virtbench run` (kept apart from cli.py so that commands which run
nothing never import the runner)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from virtbench.runner.engine import ProgressHook

__all__ = ["RichProgress"]


class RichProgress(ProgressHook):
    """Trial progress with an ETA on ``console`` (stderr), and the runner's messages."""

    def __init__(self, console: Console, quiet: bool) -> None:
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(),
                                 TextColumn("ETA"), TimeRemainingColumn(),
                                 console=console, disable=quiet, transient=False)
        self.task: Any = None

    def start(self, total: int) -> None:
        self.progress.start()
        self.task = self.progress.add_task("trials", total=total)

    def set_total(self, total: int) -> None:
        self.progress.update(self.task, total=total)

    def advance(self, key: Any, ok: bool) -> None:
        self.progress.update(self.task, advance=1,
                             description=f"{key.variant} · {key.workload_id}")

    def message(self, text: str) -> None:
        if not self.progress.disable:
            self.progress.console.print(text, highlight=False)

    def stop(self) -> None:
        self.progress.stop()
