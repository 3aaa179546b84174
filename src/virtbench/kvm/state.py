"""Where the original domain XML is kept until it is restored.

A small key/value interface so the store's generic ``saved_state`` API can replace the JSON
files later without touching the tuner.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Protocol

__all__ = ["JsonFileState", "SavedState", "default_state"]


class SavedState(Protocol):
    def save(self, key: str, value: dict[str, Any]) -> None: ...
    def load(self, key: str) -> dict[str, Any] | None: ...
    def delete(self, key: str) -> None: ...
    def keys(self, prefix: str = "") -> list[str]: ...


class JsonFileState:
    """One JSON file per key in a private (0700) directory; files are 0600 (XML may hold
    VNC/SPICE passwords)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)

    def _path(self, key: str) -> Path:
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", key)
        return self.directory / f"{safe}.json"

    def save(self, key: str, value: dict[str, Any]) -> None:
        path = self._path(key)
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump({"key": key, "value": value}, fh, indent=1)
            fh.flush()
            os.fsync(fh.fileno())
        tmp.replace(path)

    def load(self, key: str) -> dict[str, Any] | None:
        path = self._path(key)
        if not path.exists():
            return None
        data: dict[str, Any] = json.loads(path.read_text())["value"]
        return data

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def keys(self, prefix: str = "") -> list[str]:
        found = []
        for path in sorted(self.directory.glob("*.json")):
            key = str(json.loads(path.read_text()).get("key", ""))
            if key.startswith(prefix):
                found.append(key)
        return found


def default_state() -> JsonFileState:
    """``$VIRTBENCH_STATE_DIR/kvm``, else ``~/.local/state/virtbench/kvm``."""
    base = os.environ.get("VIRTBENCH_STATE_DIR")
    root = Path(base) if base else Path.home() / ".local" / "state" / "virtbench"
    return JsonFileState(root / "kvm")
