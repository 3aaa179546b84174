"""Is the process that runs a run still there? Pid, host name and kernel boot id decide.

A run is stored as "running" until its process ends it. A process killed with SIGKILL, or a
machine that lost power, never ends it: such a run is *abandoned*. It is recognised from the
owner recorded when the run started or resumed: on the same host, a pid that no longer exists
or a different boot id (the pid may be reused after a reboot) means the owner is gone. On
another host nothing can be said from here: the run counts as running.
"""

from __future__ import annotations

import functools
import os
import socket
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from virtbench.safetext import stored
from virtbench.store.columns import NAME_MAX

__all__ = ["BOOT_ID_PATH", "Owner", "OwnerState", "owner_state", "this_owner"]

BOOT_ID_PATH = Path("/proc/sys/kernel/random/boot_id")


class OwnerState(StrEnum):
    ALIVE = "alive"  # same host and boot, the pid exists
    GONE = "gone"  # same host, and the pid is gone or the machine rebooted since
    UNKNOWN = "unknown"  # another host, or a run recorded before owners were (schema < 5)


@dataclass(frozen=True)
class Owner:
    pid: int
    host: str
    boot_id: str


@functools.cache
def _boot_id() -> str:
    try:
        return BOOT_ID_PATH.read_text().strip()
    except OSError:  # not Linux, or /proc not mounted: the pid check alone decides
        return ""


def this_owner() -> Owner:
    """This process, as a run's owner: its host name as the store keeps it (safetext.stored,
    NAME_MAX), so that a stored owner compares equal to this one."""
    return Owner(os.getpid(), stored(socket.gethostname(), NAME_MAX, line=True), _boot_id())


def owner_state(pid: int | None, host: str | None, boot_id: str | None) -> OwnerState:
    if pid is None or host is None:
        return OwnerState.UNKNOWN
    me = this_owner()
    if host != me.host:
        return OwnerState.UNKNOWN
    if boot_id and me.boot_id and boot_id != me.boot_id:
        return OwnerState.GONE
    return OwnerState.ALIVE if _pid_exists(pid) else OwnerState.GONE


def _pid_exists(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)  # signal 0: nothing is sent, only existence and permission checked
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by another user
        return True
    except OverflowError:
        return False
    return True
