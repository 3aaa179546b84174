"""The host Python's packages that change results (crc32c, cryptography), asked with the
interpreter the workloads run, and remembered across runs while that interpreter and every
directory on its path are the same (installing, upgrading or removing a package changes its
directory): asking costs a Python start with ``site`` and importlib.metadata, ~0.06 s of the
host's CPU, twice per run and host."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from typing import Any

from virtbench.facts.version_cache import load_python, save_python

__all__ = ["PROBE", "Remembered", "parse_probe"]

# Prints {"packages": {name: version}, "identity": {path: stat}}: the identity of the
# interpreter and of each directory on its path, as targets.target_contract.PATH_STAT prints it.
PROBE = """\
import importlib.metadata as m, importlib.util as u, json, os, sys
def stat(path):
    s = os.stat(path)
    t = [f"{n // 10**9}.{n % 10**9:09d}" for n in (s.st_mtime_ns, s.st_ctime_ns)]
    return f"{s.st_dev} {s.st_ino} {s.st_size} {t[0]} {t[1]}"
paths = [sys.executable] + [d for d in sys.path if d and os.path.isdir(d)]
print(json.dumps({"packages": {p: m.version(p) for p in ("crc32c", "cryptography")
                               if u.find_spec(p)},
                  "identity": {p: stat(p) for p in paths}}))
"""


def parse_probe(output: str | None) -> tuple[dict[str, str], dict[str, str]] | None:
    """(packages, identity) from PROBE's output; None: no answer."""
    if not output:
        return None
    with contextlib.suppress(ValueError, IndexError, KeyError, TypeError):
        data = json.loads(output.strip().splitlines()[-1])
        return dict(data["packages"]), dict(data["identity"])
    return None


class Remembered:
    """What a host's Python reported before, and whether it still holds."""

    def __init__(self, host: str, python: Sequence[str]) -> None:
        self.host, self.python = host, " ".join(python)
        entry: dict[str, Any] = load_python(host)
        same = entry.get("python") == self.python
        self.identity: dict[str, str] = dict(entry["identity"]) if entry and same else {}
        self.packages: dict[str, str] = dict(entry["packages"]) if entry and same else {}

    @property
    def paths(self) -> list[str]:
        return sorted(self.identity)

    def holds(self, stats: Sequence[str | None]) -> bool:
        """True when the paths' identities now (``stats``, in ``paths`` order) are those
        recorded with the packages."""
        return bool(self.identity) and [self.identity[p] for p in self.paths] == list(stats)

    def learn(self, packages: dict[str, str], identity: dict[str, str]) -> None:
        save_python(self.host, self.python, identity, packages)
