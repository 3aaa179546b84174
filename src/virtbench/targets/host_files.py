"""Small files on a target's own file system: this machine's directly, a host's through commands.

A lab that prepares a daemon on a fleet host (a private libvirtd's configuration, a guest's
keys) writes there, not here: on a :class:`LocalTarget` (a network namespace included, which
shares this file system) with :mod:`pathlib`, on any other target with ``mkdir``, ``cat``,
``test`` and ``base64`` run by the target (the text or bytes sent on the command's stdin).
"""

from __future__ import annotations

import base64
import shutil
from pathlib import Path

from virtbench.model import VirtbenchError
from virtbench.targets.local import LocalTarget
from virtbench.targets.target_contract import Target

__all__ = ["HostFiles"]


class HostFiles:
    """Files on ``target``'s file system (its own, or this machine's for a local target)."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.local = isinstance(target, LocalTarget)

    def _run(self, argv: list[str], what: str, input: str | None = None) -> str:
        result = self.target.run(argv, input=input, check=False)
        if result.returncode != 0:
            raise VirtbenchError(f"{self.target.describe()}: cannot {what}: "
                                 f"{result.stderr.strip()[-200:] or f'exit {result.returncode}'}")
        return result.stdout

    def mkdir(self, *paths: Path) -> None:
        """Each of ``paths`` and its parents (existing ones are fine)."""
        if self.local:
            for path in paths:
                path.mkdir(parents=True, exist_ok=True)
        elif paths:
            self._run(["mkdir", "-p", "--", *map(str, paths)], f"make {paths[0]}")

    def write_text(self, path: Path, text: str) -> None:
        if self.local:
            path.write_text(text)
        else:
            self.write_bytes(path, text.encode())

    def write_bytes(self, path: Path, data: bytes) -> None:
        if self.local:
            path.write_bytes(data)
            return
        # base64 on the way: the target's stdin is text
        self._run(["sh", "-c", 'base64 -d > "$1"', "sh", str(path)], f"write {path}",
                  input=base64.b64encode(data).decode())

    def read_text(self, path: Path) -> str:
        if self.local:
            return path.read_text(errors="replace")
        return self._run(["cat", "--", str(path)], f"read {path}")

    def exists(self, path: Path) -> bool:
        if self.local:
            return path.exists()
        return self.target.run(["test", "-e", str(path)], check=False).returncode == 0

    def is_dir(self, path: Path) -> bool:
        if self.local:
            return path.is_dir()
        return self.target.run(["test", "-d", str(path)], check=False).returncode == 0

    def concatenate(self, parts: list[Path], out: Path) -> None:
        """``out`` made of ``parts`` in order, on the target (no byte crosses the network)."""
        if self.local:
            with out.open("wb") as sink:
                for part in parts:
                    with part.open("rb") as source:
                        shutil.copyfileobj(source, sink, 1 << 20)
            return
        self._run(["sh", "-c", 'out=$1; shift; cat -- "$@" > "$out"', "sh", str(out),
                   *map(str, parts)], f"write {out}")

    def remove_tree(self, path: Path) -> None:
        if self.local:
            shutil.rmtree(path, ignore_errors=True)
        else:
            self.target.run(["rm", "-rf", "--", str(path)], check=False)
