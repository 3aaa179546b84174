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
import shlex
import sys
from pathlib import Path

from virtbench.targets.local import LocalTarget

__all__ = ["apply_mounts", "launcher_argv", "mount_commands", "shell_launcher_argv"]


def launcher_argv(spec: Path, argv: list[str]) -> list[str]:
    """The command that runs ``argv`` with the mounts of ``spec`` (a JSON file)."""
    return ["unshare", "--mount", "--propagation", "private", "--",
            sys.executable, "-m", "virtbench.targets.private_mounts", str(spec), "--", *argv]


def shell_launcher_argv(steps: list[list[str]], argv: list[str]) -> list[str]:
    """``argv`` with the mounts of ``steps`` applied by ``sh`` in a mount namespace of its own:
    for a host without virtbench (a fleet host), the same commands as :func:`apply_mounts`."""
    script = " && ".join(shlex.join(c) for c in mount_commands(steps))
    return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
            f"{script} && exec {shlex.join(argv)}"]


def mount_commands(steps: list[list[str]]) -> list[list[str]]:
    """The commands that apply ``steps``, every mount made private first."""
    commands = [["mount", "--make-rprivate", "/"]]
    for kind, *args in steps:
        if kind in ("tmpfs", "hugetlbfs"):  # huge pages are reserved by the kernel, not here
            commands.append(["mount", "-t", kind, "vb-private", args[0]])
        elif kind == "overlay":
            lower, upper, work, where = args
            commands.append(["mount", "-t", "overlay", "vb-private", "-o",
                             f"lowerdir={lower},upperdir={upper},workdir={work}", where])
        elif kind == "bind":
            commands.append(["mount", "--bind", args[0], args[1]])
        elif kind == "mkdir":
            commands.append(["mkdir", "-p", args[0]])
        else:
            raise ValueError(f"unknown mount step {kind!r}")
    return commands


def apply_mounts(steps: list[list[str]]) -> None:
    local = LocalTarget()
    for command in mount_commands(steps):
        local.run(command)


def main(argv: list[str]) -> None:
    spec, separator, *command = argv
    if separator != "--" or not command:
        raise SystemExit("usage: python -m virtbench.targets.private_mounts SPEC -- ARGV")
    apply_mounts(json.loads(Path(spec).read_text()))
    os.execv(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
