"""The report's templates compiled once, not by every command: jinja2's bytecode cache in the
user's cache directory (``$XDG_CACHE_HOME/virtbench/templates``, else ``~/.cache/...``).

Compiling the page's templates is a twelfth of a CPU-second of every HTML report; loading
them compiled, a few milliseconds. The cache is a convenience, never a condition: a directory
that cannot be made or written, or a damaged file, means the templates are compiled as
without it. Its files are code this process runs, so it is used only in a directory of this
user's that nobody else may write (and its parent likewise), and its place comes from the
environment alone, never from anything stored. An entry is found by the template (name,
file), the versions of virtbench, jinja2 and Python and the environment's options (a
template's compiled code depends on them), and holds its source's checksum (jinja2 compiles
a template whose source changed anew).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2
from jinja2.bccache import Bucket

import virtbench

__all__ = ["SoftBytecodeCache", "bytecode_cache", "cache_directory"]


def cache_directory() -> Path | None:
    """The cache's directory, made if missing (mode 0700); None where there is none this user
    alone may write."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    try:
        root = Path(base) if os.path.isabs(base) else Path.home() / ".cache"
        directory = root / "virtbench" / "templates"
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not all(_ours_alone(path) for path in (directory, directory.parent)):
            return None
    except (OSError, RuntimeError):  # RuntimeError: no home directory to be found
        return None
    return directory


def _ours_alone(path: Path) -> bool:
    """Whether ``path`` is a directory itself (not a link to one) of this user's that no one
    else may write into."""
    info = path.lstat()
    return (stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid()
            and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


class SoftBytecodeCache(jinja2.FileSystemBytecodeCache):
    """jinja2's file cache whose failures are misses: an entry that cannot be read or written
    is compiled again, the page is the same. ``salt``: what else the compiled code depends on,
    part of every key."""

    def __init__(self, directory: Path, salt: str) -> None:
        super().__init__(str(directory), "%s.jinja2")
        self.salt = salt

    def get_cache_key(self, name: str, filename: str | None = None) -> str:
        return hashlib.sha256(f"{self.salt}|{name}|{filename}".encode()).hexdigest()

    def load_bytecode(self, bucket: Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except Exception:  # unreadable or damaged (jinja2 checks magic and checksum only)
            bucket.reset()

    def dump_bytecode(self, bucket: Bucket) -> None:
        with contextlib.suppress(OSError):  # full, read-only or removed meanwhile
            super().dump_bytecode(bucket)


def bytecode_cache(options: Mapping[str, Any]) -> SoftBytecodeCache | None:
    """The cache for an environment of ``options`` (jinja2.Environment's keywords); None
    where there is no safe directory for it."""
    directory = cache_directory()
    if directory is None:
        return None
    shown = ", ".join(f"{key}={_option(value)}" for key, value in sorted(options.items()))
    versions = (virtbench.__version__, jinja2.__version__, sys.version)
    salt = "virtbench {}; jinja2 {}; python {}".format(*versions) + f"; {shown}"
    return SoftBytecodeCache(directory, salt)


def _option(value: Any) -> str:
    """An option as the key says it: a function or class by its qualified name (its repr
    holds an address that differs in every process)."""
    name = getattr(value, "__qualname__", None)
    return f"{getattr(value, '__module__', '')}.{name}" if name else repr(value)
