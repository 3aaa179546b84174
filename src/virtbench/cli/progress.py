"""The progress bar of `virtbench run` and `calibrate` (a module of its own, imported when a run
starts: `run --check` and the commands that run nothing never import the runner's engine)."""

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

from virtbench import safetext
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
        # The description column is rich markup: names are shown as written (safetext).
        self.progress.update(self.task, advance=1, description=(
            f"{safetext.markup(key.variant)} · {safetext.markup(key.workload_id)}"))

    def message(self, text: str) -> None:
        """A runner message (a failed trial's error, a command's stderr) as plain text: never
        read as markup (`[/dev/sdz]` crashed the run), control characters shown as escapes."""
        if not self.progress.disable:
            self.progress.console.print(safetext.text(text), highlight=False)

    def stop(self) -> None:
        self.progress.stop()
