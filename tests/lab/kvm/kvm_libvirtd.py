"""A private libvirtd for tests: own mount namespace, own state, socket in a temp dir.

Never uses or touches the system's libvirt service. Every domain on it belongs to the test,
so ``stop()`` destroys and undefines them all before ending the daemon (by its PID).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def remove_domain(conn: Any, name: str) -> None:
    """Stop and undefine domain ``name`` if it exists; never raises (used in cleanups)."""
    import libvirt

    try:
        dom = conn.lookupByName(name)
        if dom.isActive():
            dom.destroy()
        if dom.isPersistent():
            dom.undefine()
    except libvirt.libvirtError:
        pass


HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
CAPS_CACHE = REPO / ".cache" / "vbkvm-libvirt-qemu-cache"

QEMU_CONF = """
# root/root avoids libvirt re-probing /dev/kvm permissions (~44 s per start).
user = "root"
group = "root"
# No virtlogd: QEMU writes its log files itself.
stdio_handler = "file"
# Do not create cgroups, namespaces or security labels on this shared machine.
cgroup_controllers = [ ]
namespaces = [ ]
security_driver = "none"
remember_owner = 0
"""


class PrivateLibvirtd:
    def __init__(self) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="vbkvm-libvirtd-"))
        self.proc: subprocess.Popen[bytes] | None = None
        self.uri = f"qemu+unix:///system?socket={self.base}/sock/libvirt-sock"

    def start(self, timeout: float = 90.0) -> str:
        etc = self.base / "etc"
        (self.base / "sock").mkdir()
        etc.mkdir()
        (etc / "libvirtd.conf").write_text(
            f'unix_sock_dir = "{self.base}/sock"\n'
            'unix_sock_rw_perms = "0700"\nauth_unix_rw = "none"\nauth_unix_ro = "none"\n'
            f'log_outputs = "2:file:{self.base}/libvirtd.log"\n'
        )
        (etc / "qemu.conf").write_text(QEMU_CONF)
        CAPS_CACHE.mkdir(parents=True, exist_ok=True)
        (CAPS_CACHE.parent / ".gitignore").write_text("*\n")
        env = dict(os.environ, VBKVM_CAPS_CACHE=str(CAPS_CACHE))
        log = (self.base / "launcher.log").open("wb")
        self.proc = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "--",
             sys.executable, str(HERE / "kvm_libvirtd_ns.py"), str(self.base)],
            env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        import libvirt

        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"private libvirtd exited: {self.log_tail()}")
            if (self.base / "sock" / "libvirt-sock").exists():
                try:
                    libvirt.open(self.uri).close()
                    return self.uri
                except libvirt.libvirtError:
                    pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"private libvirtd did not answer: {self.log_tail()}")
            time.sleep(0.2)

    def log_tail(self) -> str:
        texts = []
        for name in ("launcher.log", "libvirtd.log"):
            path = self.base / name
            if path.exists():
                texts.append(" | ".join(path.read_text(errors="replace").splitlines()[-5:]))
        return " || ".join(texts)

    def _remove_domains(self) -> None:
        import libvirt

        try:
            conn: Any = libvirt.open(self.uri)
        except libvirt.libvirtError:
            return
        for dom in conn.listAllDomains():
            remove_domain(conn, dom.name())
        conn.close()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self._remove_domains()
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.base, ignore_errors=True)
