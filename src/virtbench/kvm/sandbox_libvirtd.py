"""A private libvirtd: own mount namespace, own state, its socket in a directory of ours.

libvirtd running as root always uses the system paths (/etc/libvirt, /run/libvirt, /var/lib/
libvirt...). In a private mount namespace those are covered with a tmpfs (/run), an overlay
whose writes land in our directory (/var) and a bind mount (/etc/libvirt), so the system's own
libvirt (if any) is never used or touched and nothing is left behind on the host. Every domain
on it is ours, so :meth:`PrivateLibvirtd.stop` destroys and undefines them all before ending the
daemon by its recorded PID. The daemon outlives the command that started it (``virtbench kvm
sandbox up``); ``attach`` finds it again from its directory.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from virtbench.model import VirtbenchError
from virtbench.targets.daemon import is_ours, start_daemon, stop_pid
from virtbench.targets.libvirt_connection import libvirt_module
from virtbench.targets.local import LocalTarget
from virtbench.targets.private_mounts import launcher_argv
from virtbench.targets.target_contract import Target

__all__ = ["HUGETLBFS", "PrivateLibvirtd", "remove_domain"]

QEMU_CONF = """
# root/root avoids libvirt re-probing /dev/kvm permissions (~44 s per start).
user = "root"
group = "root"
# No virtlogd: QEMU writes its log files itself.
stdio_handler = "file"
# Do not create cgroups, namespaces or security labels on a shared machine.
cgroup_controllers = [ ]
namespaces = [ ]
security_driver = "none"
remember_owner = 0
"""

HUGETLBFS = "/run/vbhugepages"
"""A hugetlbfs of the daemon's own (its /run is private): where a guest with <hugepages/> gets
its memory. Mounting reserves nothing; the pages come from the host's vm.nr_hugepages pool."""

# Debian's libvirtd resolves its built-in default user 'libvirt-qemu' (created by the
# libvirt-daemon-system package) before reading qemu.conf: it gets private passwd/group files.
_QEMU_USER = {"passwd": "libvirt-qemu:x:64055:64055::/var/lib/libvirt:/usr/sbin/nologin",
              "group": "libvirt-qemu:x:64055:"}


def remove_domain(conn: Any, name: str) -> None:
    """Stop and undefine domain ``name`` if it exists; never raises (used in cleanups)."""
    libvirt = libvirt_module()
    try:
        dom = conn.lookupByName(name)
        if dom.isActive():
            dom.destroy()
        if dom.isPersistent():
            dom.undefine()
    except libvirt.libvirtError:
        pass


class PrivateLibvirtd:
    """libvirtd with all its state under ``base`` (created by :meth:`start`)."""

    def __init__(self, base: Path, caps_cache: Path | None = None,
                 target: Target | None = None, uri: str | None = None) -> None:
        self.base = base.resolve()
        self.caps_cache = caps_cache
        # Where the daemon runs: this machine, or a host sharing its file system (a network
        # namespace: the fleet's test hosts); a remote SSH host needs the files written there
        # too (docs/fleet.md, "Cross-host guests").
        self.target: Target = target if target is not None else LocalTarget()
        self.socket = self.base / "sock" / "libvirt-sock"
        # ``uri``: how this process reaches the daemon when not by its socket here (a socket
        # forwarded from the host over ssh, labs/net/crosshost_guests.py).
        self.forwarded = uri is not None
        self.uri = uri or f"qemu+unix:///system?socket={self.socket}"

    @property
    def _record(self) -> Path:
        return self.base / "daemon.json"

    def pid(self) -> int | None:
        """The daemon's PID while it runs (and is provably ours), else None."""
        if not self._record.exists():
            return None
        pid = int(json.loads(self._record.read_text())["pid"])
        return pid if is_ours(pid, str(self.base)) else None

    def start(self, timeout_s: float = 90.0) -> str:
        """Start the daemon; returns its URI once it answers."""
        if not Path("/usr/sbin/libvirtd").exists():
            raise VirtbenchError("/usr/sbin/libvirtd is missing: apt-get install "
                                 "libvirt-daemon-system libvirt-daemon-driver-qemu")
        etc = self.base / "etc"
        for sub in ("sock", "etc", "var-upper", "var-work"):
            (self.base / sub).mkdir(parents=True, exist_ok=True)
        (etc / "libvirtd.conf").write_text(
            f'unix_sock_dir = "{self.base}/sock"\n'
            'unix_sock_rw_perms = "0700"\nauth_unix_rw = "none"\nauth_unix_ro = "none"\n'
            f'log_outputs = "2:file:{self.base}/libvirtd.log"\n')
        huge = Path("/sys/kernel/mm/hugepages").is_dir()
        (etc / "qemu.conf").write_text(
            QEMU_CONF + (f'hugetlbfs_mount = "{HUGETLBFS}"\n' if huge else ""))
        steps: list[list[str]] = [
            ["tmpfs", "/run"],
            ["overlay", "/var", str(self.base / "var-upper"), str(self.base / "var-work"),
             "/var"],
            ["bind", str(etc), "/etc/libvirt"],
        ]
        for name, line in _QEMU_USER.items():
            text = Path(f"/etc/{name}").read_text()
            if not any(row.startswith("libvirt-qemu:") for row in text.splitlines()):
                text = text.rstrip("\n") + "\n" + line + "\n"
            (self.base / name).write_text(text)
            steps.append(["bind", str(self.base / name), f"/etc/{name}"])
        steps += [["mkdir", d] for d in ("/var/lib/libvirt/qemu", "/var/cache/libvirt/qemu",
                                         "/var/log/libvirt/qemu", "/run/libvirt")]
        if huge:
            steps += [["mkdir", HUGETLBFS], ["hugetlbfs", HUGETLBFS]]
        if self.caps_cache is not None:
            # QEMU capability probing takes seconds; a persistent cache keeps restarts fast.
            self.caps_cache.mkdir(parents=True, exist_ok=True)
            steps.append(["bind", str(self.caps_cache.resolve()), "/var/cache/libvirt/qemu"])
        spec = self.base / "mounts.json"
        spec.write_text(json.dumps(steps))
        daemon = start_daemon(
            self.target,
            launcher_argv(spec, ["/usr/sbin/libvirtd", "--config", str(etc / "libvirtd.conf"),
                                 "--pid-file", str(self.base / "libvirtd.pid")]),
            what="private libvirtd", log=self.base / "launcher.log")
        self._record.write_text(json.dumps({"pid": daemon.pid, "uri": self.uri}))
        libvirt = libvirt_module()
        deadline = time.monotonic() + timeout_s
        while True:  # ends: done, or past the deadline below
            error = daemon.exit_error()
            if error is not None:
                raise VirtbenchError(f"{error} ({self.log_tail()})")
            if self.forwarded or self.socket.exists():
                try:
                    libvirt.open(self.uri).close()
                    return self.uri
                except libvirt.libvirtError:
                    pass
            if time.monotonic() > deadline:
                self.stop()
                raise VirtbenchError(f"private libvirtd did not answer within {timeout_s:g} s: "
                                     f"{self.log_tail()}")
            time.sleep(0.2)

    def log_tail(self) -> str:
        texts = []
        for name in ("launcher.log", "libvirtd.log"):
            path = self.base / name
            if path.exists():
                texts.append(" | ".join(path.read_text(errors="replace").splitlines()[-5:]))
        return " || ".join(texts)

    def _remove_domains(self) -> None:
        libvirt = libvirt_module()
        try:
            conn: Any = libvirt.open(self.uri)
        except libvirt.libvirtError:
            return
        for dom in conn.listAllDomains():
            remove_domain(conn, dom.name())
        conn.close()

    def stop(self) -> bool:
        """Remove every domain, end the daemon; True when one was running."""
        pid = self.pid()
        # On an SSH host the recorded PID is the local ssh client's: libvirtd takes the
        # session's SIGHUP as "reload", so it is ended by its own PID, on its host.
        on_host = None if isinstance(self.target, LocalTarget) else self._pid_on_host()
        if pid is None and on_host is None:
            return False
        self._remove_domains()
        if on_host is not None:
            self._end_on_host(on_host, grace_s=30.0)
        if pid is not None:
            stop_pid(pid, str(self.base), grace_s=30.0)
        self._record.unlink(missing_ok=True)
        return True

    def _pid_on_host(self) -> int | None:
        """libvirtd's PID on its host (its pid file) while its command line names our
        directory, else None."""
        found = self.target.run(["cat", str(self.base / "libvirtd.pid")], check=False)
        text = found.stdout.strip()
        if found.returncode != 0 or not text.isdigit():
            return None
        return int(text) if self._running_on_host(int(text)) else None

    def _running_on_host(self, pid: int) -> bool:
        stat = self.target.run(["cat", f"/proc/{pid}/stat", f"/proc/{pid}/cmdline"],
                               check=False).stdout
        state = stat.rsplit(")", 1)[1].split()[:1] if ")" in stat else []
        return state not in ([], ["Z"]) and str(self.base) in stat

    def _end_on_host(self, pid: int, grace_s: float) -> None:
        for sig in ("TERM", "KILL"):
            self.target.run(["kill", f"-{sig}", str(pid)], check=False)
            deadline = time.monotonic() + grace_s
            while time.monotonic() < deadline:  # ends: gone, or past the deadline
                if not self._running_on_host(pid):
                    return
                time.sleep(0.2)
