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

__all__ = ["JsonFileState", "SavedState", "StoreState", "default_state"]


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


class StoreState:
    """Saved originals in a virtbench result store (the ``saved_state`` table)."""

    def __init__(self, location: str) -> None:
        from virtbench.store import Store

        self.store = Store(location)

    def save(self, key: str, value: dict[str, Any]) -> None:
        self.store.save_state(key, value)

    def load(self, key: str) -> dict[str, Any] | None:
        value = self.store.load_state(key)
        return value if isinstance(value, dict) else None

    def delete(self, key: str) -> None:
        self.store.delete_state(key)

    def keys(self, prefix: str = "") -> list[str]:
        return self.store.state_keys(prefix)


def default_state() -> SavedState:
    """Where `kvm tune --apply` keeps originals for `kvm rollback`.

    ``$VIRTBENCH_STATE_DIR/kvm`` (JSON files) when set; otherwise the result store named by
    ``VIRTBENCH_STORE``, else a store at ``~/.local/state/virtbench/state.db`` — a fixed place,
    so a rollback from any directory finds the original.
    """
    base = os.environ.get("VIRTBENCH_STATE_DIR")
    if base:
        return JsonFileState(Path(base) / "kvm")
    location = os.environ.get("VIRTBENCH_STORE")
    if not location:
        root = Path.home() / ".local" / "state" / "virtbench"
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        location = str(root / "state.db")
    return StoreState(location)
