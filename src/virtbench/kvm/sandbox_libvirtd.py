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
from virtbench.targets.daemon import Daemon, is_ours, start_daemon, stop_pid
from virtbench.targets.host_files import HostFiles
from virtbench.targets.libvirt_connection import libvirt_module
from virtbench.targets.local import LocalTarget
from virtbench.targets.private_mounts import launcher_argv, shell_launcher_argv
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
                 target: Target | None = None, uri: str | None = None,
                 log_dir: Path | None = None) -> None:
        self.base = base.resolve() if target is None or isinstance(target, LocalTarget) \
            else base
        self.caps_cache = caps_cache
        # Where the daemon runs: this machine (a network namespace of it included), or a host
        # whose files are written through its target (HostFiles) and whose launcher needs no
        # virtbench there (a shell under unshare).
        self.target: Target = target if target is not None else LocalTarget()
        self.files = HostFiles(self.target)
        self.socket = self.base / "sock" / "libvirt-sock"
        # ``uri``: how this process reaches the daemon when not by its socket here (a socket
        # forwarded from the host over ssh, labs/net/crosshost_guests.py).
        self.forwarded = uri is not None
        self.uri = uri or f"qemu+unix:///system?socket={self.socket}"
        self.log_dir = log_dir or self.base
        """Where this machine keeps the launcher's output (the daemon's own log is on its
        host, in ``base``)."""
        self._daemon: Daemon | None = None

    @property
    def _record(self) -> Path:
        return self.base / "daemon.json"

    def pid(self) -> int | None:
        """The daemon's PID while it runs (and is provably ours), else None."""
        if not self.files.local or not self._record.exists():
            return None
        pid = int(json.loads(self._record.read_text())["pid"])
        return pid if is_ours(pid, str(self.base)) else None

    def start(self, timeout_s: float = 90.0) -> str:
        """Start the daemon; returns its URI once it answers."""
        if not self.files.exists(Path("/usr/sbin/libvirtd")):
            raise VirtbenchError(f"/usr/sbin/libvirtd is missing on {self.target.describe()}: "
                                 "apt-get install libvirt-daemon-system "
                                 "libvirt-daemon-driver-qemu")
        argv = ["/usr/sbin/libvirtd", "--config", str(self.base / "etc" / "libvirtd.conf"),
                "--pid-file", str(self.base / "libvirtd.pid")]
        steps = self._configure()
        if self.files.local:
            spec = self.base / "mounts.json"
            spec.write_text(json.dumps(steps))
            launcher = launcher_argv(spec, argv)
        else:
            launcher = shell_launcher_argv(steps, argv)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        daemon = start_daemon(self.target, launcher, what="private libvirtd",
                              log=self.log_dir / "launcher.log")
        self._daemon = daemon
        if self.files.local:
            self._record.write_text(json.dumps({"pid": daemon.pid, "uri": self.uri}))
        return self._wait(daemon, timeout_s)

    def _configure(self) -> list[list[str]]:
        """The daemon's configuration files, written on its host; its mount steps."""
        etc, files = self.base / "etc", self.files
        files.mkdir(*(self.base / sub for sub in ("sock", "etc", "var-upper", "var-work")))
        files.write_text(etc / "libvirtd.conf",
                         f'unix_sock_dir = "{self.base}/sock"\n'
                         'unix_sock_rw_perms = "0700"\nauth_unix_rw = "none"\n'
                         'auth_unix_ro = "none"\n'
                         f'log_outputs = "2:file:{self.base}/libvirtd.log"\n')
        huge = files.is_dir(Path("/sys/kernel/mm/hugepages"))
        files.write_text(etc / "qemu.conf",
                         QEMU_CONF + (f'hugetlbfs_mount = "{HUGETLBFS}"\n' if huge else ""))
        steps: list[list[str]] = [
            ["tmpfs", "/run"],
            ["overlay", "/var", str(self.base / "var-upper"), str(self.base / "var-work"),
             "/var"],
            ["bind", str(etc), "/etc/libvirt"],
        ]
        for name, line in _QEMU_USER.items():
            text = files.read_text(Path(f"/etc/{name}"))
            if not any(row.startswith("libvirt-qemu:") for row in text.splitlines()):
                text = text.rstrip("\n") + "\n" + line + "\n"
            files.write_text(self.base / name, text)
            steps.append(["bind", str(self.base / name), f"/etc/{name}"])
        steps += [["mkdir", d] for d in ("/var/lib/libvirt/qemu", "/var/cache/libvirt/qemu",
                                         "/var/log/libvirt/qemu", "/run/libvirt")]
        if huge:
            steps += [["mkdir", HUGETLBFS], ["hugetlbfs", HUGETLBFS]]
        if self.caps_cache is not None:
            # QEMU capability probing takes seconds; a persistent cache keeps restarts fast.
            caps = self.caps_cache.resolve() if files.local else self.caps_cache
            files.mkdir(caps)
            steps.append(["bind", str(caps), "/var/cache/libvirt/qemu"])
        return steps

    def _wait(self, daemon: Daemon, timeout_s: float) -> str:
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
        for path, files in ((self.log_dir / "launcher.log", HostFiles(LocalTarget())),
                            (self.base / "libvirtd.log", self.files)):
            if files.exists(path):
                texts.append(" | ".join(files.read_text(path).splitlines()[-5:]))
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
            if self._daemon is not None:
                self._daemon.stop()
                self._daemon = None
            return False
        self._remove_domains()
        if on_host is not None:
            self._end_on_host(on_host, grace_s=30.0)
        if pid is not None:
            stop_pid(pid, str(self.base), grace_s=30.0)
        if self._daemon is not None:  # the ssh client, which ends with the daemon
            self._daemon.stop()
            self._daemon = None
        if self.files.local:
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
