"""One pid file per running virtbench run, so a run can see another one on the same host."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from virtbench.preflight.procfs import HostReader

__all__ = ["RunRegistry", "default_runs_dir"]


def default_runs_dir() -> Path:
    """``VIRTBENCH_RUNS_DIR``, else /run/virtbench/runs (shared by every user who can write it),
    else a directory in the temporary directory."""
    configured = os.environ.get("VIRTBENCH_RUNS_DIR")
    if configured:
        return Path(configured)
    shared = Path("/run/virtbench/runs")
    with contextlib.suppress(OSError):
        shared.mkdir(parents=True, exist_ok=True)
        if os.access(shared, os.W_OK):
            return shared
    return Path(tempfile.gettempdir()) / "virtbench-runs"


class RunRegistry:
    def __init__(self, directory: Path | None = None, reader: HostReader | None = None) -> None:
        self.directory = directory or default_runs_dir()
        self.reader = reader or HostReader()

    def _starttime(self, pid: int) -> int | None:
        info = self.reader.process(pid)
        return None if info is None else info.starttime

    @contextlib.contextmanager
    def registered(self, experiment: str) -> Iterator[Path]:
        """Hold a pid file for this process while the block runs."""
        self.directory.mkdir(parents=True, exist_ok=True)
        pid = os.getpid()
        path = self.directory / f"{pid}.json"
        path.write_text(json.dumps({"pid": pid, "starttime": self._starttime(pid),
                                    "experiment": experiment, "started_at": time.time()}))
        try:
            yield path
        finally:
            path.unlink(missing_ok=True)

    def others(self) -> list[dict[str, object]]:
        """Live runs other than this process. A file whose process is gone, or whose pid now
        belongs to another process (a different start time), is stale and removed."""
        found: list[dict[str, object]] = []
        try:
            paths = sorted(self.directory.glob("*.json"))
        except OSError:
            return found
        for path in paths:
            try:
                entry = json.loads(path.read_text())
                pid = int(entry["pid"])
            except (OSError, ValueError, KeyError, TypeError):
                with contextlib.suppress(OSError):
                    path.unlink()
                continue
            if pid == os.getpid():
                continue
            alive = self._starttime(pid)
            if alive is None or (entry.get("starttime") is not None
                                 and alive != entry["starttime"]):
                with contextlib.suppress(OSError):
                    path.unlink()
                continue
            found.append(entry)
        return found
