"""Facts remembered across runs, per host, each with the identity of what it was asked of
(the XDG cache): tool versions, the host Python's packages and what holds for one boot.

A version line is only reused for the very file it was asked of: same path, device, inode,
size, mtime and ctime (a package upgrade replaces the binary: a new identity, asked again);
the Python packages only while the interpreter and every directory on its path are unchanged;
the kernel (`uname`), `lscpu`'s hypervisor and `systemd-detect-virt` while the boot id is.
Asking costs the host a process per tool each run (`ffmpeg -version` ~0.08 s of CPU, the
packages' Python ~0.06 s; `tshark --version`, no longer asked, took ~0.2 s): on a fleet of 50
hosts that is most of a short run's host CPU. Hosts write this file concurrently (a fleet's
processes): each write merges under a lock and replaces the file whole, so a reader never sees
half of one.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["load_boot", "load_python", "load_versions", "save_boot", "save_python",
           "save_versions"]

Known = dict[str, tuple[str, str]]  # tool -> (identity of its binary, version line)


def _path() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "virtbench" / "tool-versions.json"


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):  # none yet, or unreadable: ask the hosts again
        return {}
    return data if isinstance(data, dict) else {}


def _section(host: str, section: str) -> dict[str, Any]:
    entry = _read(_path()).get(host)
    value = entry.get(section) if isinstance(entry, dict) else None
    return value if isinstance(value, dict) else {}


def load_versions(host: str) -> Known:
    """What ``host`` reported before (empty: nothing, or the cache cannot be read)."""
    return {tool: (str(pair[0]), str(pair[1]))
            for tool, pair in _section(host, "tools").items()
            if isinstance(pair, list) and len(pair) == 2}


def save_versions(host: str, known: Known) -> None:
    """Remember ``known`` for ``host``; a cache that cannot be written is left alone (the
    versions are asked again next time)."""
    _save(host, "tools", {tool: list(pair) for tool, pair in sorted(known.items())})


def load_python(host: str) -> dict[str, Any]:
    """The host Python's packages as last asked: {"python": its argv, "identity": {path: stat
    line}, "packages": {name: version}} (empty: never asked)."""
    found = _section(host, "python")
    ok = isinstance(found.get("identity"), dict) and isinstance(found.get("packages"), dict)
    return found if ok else {}


def save_python(host: str, python: str, identity: dict[str, str],
                packages: dict[str, str]) -> None:
    _save(host, "python", {"python": python, "identity": identity, "packages": packages})


def load_boot(host: str) -> dict[str, Any]:
    """The outputs of the commands whose answer holds for one boot of the host:
    {"boot_id": ..., "outputs": [...]} (empty: never asked)."""
    found = _section(host, "boot")
    outputs = found.get("outputs")
    ok = isinstance(found.get("boot_id"), str) and isinstance(outputs, list)
    return found if ok else {}


def save_boot(host: str, boot_id: str, outputs: list[str | None]) -> None:
    _save(host, "boot", {"boot_id": boot_id, "outputs": outputs})


def _save(host: str, section: str, value: dict[str, Any]) -> None:
    path = _path()
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.with_suffix(".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            data = _read(path)
            entry = data.get(host)
            data[host] = {**(entry if isinstance(entry, dict) else {}), section: value}
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tool-versions.")
            with os.fdopen(fd, "w") as out:
                json.dump(data, out, indent=1, sort_keys=True)
            os.replace(tmp, path)
