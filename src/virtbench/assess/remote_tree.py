"""Read another machine's /proc and /sys files (a guest over SSH) into a local tree, so the
host/guest rules run on it unchanged."""

from __future__ import annotations

import json
from pathlib import Path

from virtbench.assess.system_rules import SYSTEM_FILES, SystemView
from virtbench.model import VirtbenchError
from virtbench.targets.target_contract import CommandFailed, Target

__all__ = ["fetch_system_tree"]

# Run with the target's python3: globs each pattern below / and prints {path: text} as JSON.
_READER = """
import glob, json, sys
found = {}
for pattern in sys.argv[1:]:
    for path in glob.glob("/" + pattern):
        try:
            with open(path) as handle:
                found[path[1:]] = handle.read(65536)
        except OSError:
            pass
print(json.dumps(found))
"""


def fetch_system_tree(target: Target, into: Path) -> SystemView:
    """Copy the files the rules read from ``target`` below ``into``; a view of that tree."""
    try:
        result = target.run([*target.python(), "-c", _READER, *SYSTEM_FILES], timeout=60)
        files: dict[str, str] = json.loads(result.stdout.strip().splitlines()[-1])
    except (CommandFailed, json.JSONDecodeError, IndexError) as exc:
        raise VirtbenchError(f"cannot read /proc and /sys on {target.describe()}: {exc}") from exc
    for relative, text in files.items():
        if ".." in Path(relative).parts:
            continue  # never write outside the tree, whatever the other side sends
        path = into / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return SystemView(into)
