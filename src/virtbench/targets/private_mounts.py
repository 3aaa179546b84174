"""Run a program with private mounts: ``unshare --mount -- python -m THIS SPEC -- ARGV``.

Inside a fresh mount namespace (made by ``unshare``), this module makes every mount private,
applies the mounts listed in SPEC (a JSON file: ``[["tmpfs", DIR], ["overlay", LOWER, UPPER,
WORK, DIR], ["bind", SRC, DST], ["mkdir", DIR], ["hugetlbfs", DIR]]``, in order) and then
replaces itself with ARGV, so the PID the caller recorded is the program's own. What is
mounted here ends with the namespace: nothing is left on the host. Used to give a daemon that
insists on system paths (libvirtd as root: /run, /var, /etc/libvirt) a private copy of them.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from virtbench.targets.local import LocalTarget

__all__ = ["apply_mounts", "launcher_argv"]


def launcher_argv(spec: Path, argv: list[str]) -> list[str]:
    """The command that runs ``argv`` with the mounts of ``spec`` (a JSON file)."""
    return ["unshare", "--mount", "--propagation", "private", "--",
            sys.executable, "-m", "virtbench.targets.private_mounts", str(spec), "--", *argv]


def apply_mounts(steps: list[list[str]]) -> None:
    local = LocalTarget()
    local.run(["mount", "--make-rprivate", "/"])
    for step in steps:
        kind, *args = step
        if kind == "tmpfs":
            local.run(["mount", "-t", "tmpfs", "vb-private", args[0]])
        elif kind == "overlay":
            lower, upper, work, where = args
            local.run(["mount", "-t", "overlay", "vb-private", "-o",
                       f"lowerdir={lower},upperdir={upper},workdir={work}", where])
        elif kind == "bind":
            local.run(["mount", "--bind", args[0], args[1]])
        elif kind == "hugetlbfs":  # huge pages are reserved by the kernel, not by the mount
            local.run(["mount", "-t", "hugetlbfs", "vb-private", args[0]])
        elif kind == "mkdir":
            Path(args[0]).mkdir(parents=True, exist_ok=True)
        else:
            raise ValueError(f"unknown mount step {kind!r}")


def main(argv: list[str]) -> None:
    spec, separator, *command = argv
    if separator != "--" or not command:
        raise SystemExit("usage: python -m virtbench.targets.private_mounts SPEC -- ARGV")
    apply_mounts(json.loads(Path(spec).read_text()))
    os.execv(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
