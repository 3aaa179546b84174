"""Which filesystem a path lives on (to say whether 'file-disk' is really on a disk)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["fs_type"]


def fs_type(path: Path) -> str:
    """Filesystem type of the mount holding ``path`` (e.g. ext4, tmpfs, fuse.sshfs)."""
    target = os.path.realpath(path)
    best, best_type = "", "unknown"
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fields = left.split()
        if len(fields) < 5:
            continue
        mount_point = fields[4].replace("\\040", " ")
        inside = target == mount_point or target.startswith(mount_point.rstrip("/") + "/")
        if inside and len(mount_point) >= len(best):
            best, best_type = mount_point, right.split()[0]
    return best_type
