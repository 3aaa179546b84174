"""A lab's daemons, each recorded in its manifest right after the spawn, so that
``virtbench lab clean`` can stop what a crashed run left behind (and only that)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import partial
from pathlib import Path

from virtbench.labs.lab_contract import Manifest
from virtbench.targets.daemon import Daemon, start_daemon, stop_pid
from virtbench.targets.target_contract import Target

__all__ = ["clean_recorded", "start_recorded"]


def start_recorded(manifest: Manifest, target: Target, argv: Sequence[str], *,
                   what: str | None = None, marker: str | None = None,
                   log: Path | None = None) -> Daemon:
    """Start ``argv`` on ``target`` and record its PID; ``Daemon.stop`` drops the record.

    ``marker`` is text the process's command line keeps while it runs (the lab's private
    directory; by default the program's name): cleanup stops a recorded PID only if it matches.
    """
    daemon = start_daemon(target, argv, what=what, log=log)
    # Recorded right after the spawn: the PID does not exist before it.
    record = {"pid": daemon.pid, "what": daemon.what,
              "marker": marker or os.path.basename(argv[0])}
    manifest.add("pid", record)
    daemon.on_stop = partial(manifest.remove, "pid", record)
    return daemon


def clean_recorded(manifest: Manifest) -> list[str]:
    """Stop every recorded process still ours (with its process group); drop every record."""
    removed = []
    for item in manifest.items("pid"):
        pid = int(item["pid"])
        # "argv0": the marker of network-lab manifests written before records had one.
        marker = str(item.get("marker") or item.get("argv0") or "")
        if marker and stop_pid(pid, marker):
            removed.append(f"stopped {item.get('what', marker)} (pid {pid})")
        manifest.remove("pid", item)
    return removed
