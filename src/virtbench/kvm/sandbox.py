"""``virtbench kvm sandbox up|down``: a small throwaway Debian guest to try the KVM commands on.

``up`` builds (once, cached) the Debian guest of :mod:`virtbench.kvm.sandbox_image`, starts a
private libvirtd (:mod:`virtbench.kvm.sandbox_libvirtd`; never the system's), defines and boots
the domain (custom qemu64, as CloudStack defines guests by default) and waits until its sshd
answers on 127.0.0.1 with the pinned host key. Everything lives in one directory (default
``.cache/virtbench-sandbox`` below the current directory, so the example experiments can name
the key files relatively); ``down`` removes the domain, the daemon and the keys.

Network: QEMU user mode with ``restrict=on`` (the guest reaches nothing outside QEMU) and one
``hostfwd`` from 127.0.0.1:PORT to the guest's port 22 — loopback only.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from virtbench.kvm.flag_probes import CONSOLE_END
from virtbench.kvm.guest_domain import CONSOLE_CMDLINE, direct_boot_domain_xml
from virtbench.kvm.sandbox_image import GuestInstance, build_debian_guest, make_instance
from virtbench.kvm.sandbox_libvirtd import PrivateLibvirtd
from virtbench.model import VirtbenchError
from virtbench.targets.libvirt_connection import libvirt_module
from virtbench.targets.local import LocalTarget

__all__ = ["DEFAULT_DIR", "DEFAULT_DOMAIN", "DEFAULT_PORT", "Sandbox", "SandboxInfo", "VirtType",
           "domain_xml", "sandbox_down", "sandbox_status", "sandbox_up", "wait_ssh"]

DEFAULT_DIR = Path(".cache") / "virtbench-sandbox"
DEFAULT_DOMAIN = "vbkvm-debian"
DEFAULT_PORT = 2522
VirtType = Literal["auto", "kvm", "qemu"]


@dataclass(frozen=True)
class SandboxInfo:
    """What a running sandbox offers (kept as ``session/sandbox.json``)."""

    uri: str
    domain: str
    virt_type: str
    ssh: str
    known_hosts: str
    identity: str
    console_log: str


_RNG = "<rng model='virtio'><backend model='random'>/dev/urandom</backend></rng>"


def domain_xml(name: str, guest: GuestInstance, console_log: Path, *, virt_type: str = "qemu",
               memory_mib: int = 768) -> str:
    """A domain with qemu64 (QEMU's default CPU) and user-mode networking on loopback."""
    network = ["-netdev", f"user,id=vbnet0,restrict=on,hostfwd=tcp:127.0.0.1:{guest.port}-:22",
               # An explicit slot: QEMU places these before libvirt's own devices.
               "-device", "virtio-net-pci,netdev=vbnet0,addr=0x10"]
    return direct_boot_domain_xml(name, kernel=guest.kernel, initrd=guest.initrd,
                                  console_log=console_log, cmdline=f"{CONSOLE_CMDLINE} quiet",
                                  virt_type=virt_type, memory_mib=memory_mib, devices=[_RNG],
                                  qemu_args=network)


def wait_ssh(guest: GuestInstance, timeout_s: float = 180.0) -> float:
    """Seconds until sshd in the guest answers with the pinned host key."""
    started = time.monotonic()
    argv = ["ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
            "-o", f"UserKnownHostsFile={guest.known_hosts}", "-o", "ConnectTimeout=10",
            "-i", str(guest.identity), "-o", "IdentitiesOnly=yes", "-p", str(guest.port),
            "root@127.0.0.1", "true"]
    while True:  # ends: done, or past the deadline below
        result = LocalTarget().run(argv, check=False, timeout=60)
        if result.returncode == 0:
            return time.monotonic() - started
        if time.monotonic() - started > timeout_s:
            raise VirtbenchError(f"guest sshd on port {guest.port} did not answer within "
                                 f"{timeout_s:.0f} s: {result.stderr.strip()[-300:]}")
        time.sleep(1)


def _console_shows_boot(log: Path, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if log.exists() and CONSOLE_END in log.read_text(errors="replace"):
            return True
        time.sleep(0.5)
    return False


class Sandbox:
    """The sandbox in ``directory``: ``image/`` (cached), ``session/`` (while it runs)."""

    def __init__(self, directory: Path = DEFAULT_DIR, image_cache: Path | None = None) -> None:
        self.directory = directory.resolve()
        self.image_cache = (image_cache or self.directory / "image").resolve()
        self.session = self.directory / "session"
        self.daemon = PrivateLibvirtd(self.session / "libvirtd",
                                      caps_cache=self.directory / "qemu-caps")

    @property
    def _record(self) -> Path:
        return self.session / "sandbox.json"

    def info(self) -> SandboxInfo | None:
        if not self._record.exists() or self.daemon.pid() is None:
            return None
        return SandboxInfo(**json.loads(self._record.read_text()))

    def up(self, *, domain: str = DEFAULT_DOMAIN, port: int = DEFAULT_PORT,
           virt_type: VirtType = "auto", memory_mib: int = 768,
           boot_timeout_s: float = 180.0) -> SandboxInfo:
        running = self.info()
        if running is not None:
            return running
        self.down()  # leftovers of a crashed `up`
        self.directory.mkdir(parents=True, exist_ok=True)
        if self.directory.parent.name == ".cache":
            (self.directory.parent / ".gitignore").write_text("*\n")
        image = build_debian_guest(self.image_cache)
        guest = make_instance(image, self.session, port)
        console = self.session / "console.log"
        try:
            uri = self.daemon.start()
            conn: Any = libvirt_module().open(uri)
            try:
                chosen = self._boot(conn, domain, guest, console, virt_type, memory_mib)
            finally:
                conn.close()
            wait_ssh(guest, boot_timeout_s)
        except BaseException:
            self.down()
            raise
        info = SandboxInfo(uri=uri, domain=domain, virt_type=chosen, ssh=guest.ssh_spec,
                           known_hosts=str(guest.known_hosts), identity=str(guest.identity),
                           console_log=str(console))
        self._record.write_text(json.dumps(asdict(info), indent=1))
        return info

    def _boot(self, conn: Any, domain: str, guest: GuestInstance, console: Path,
              virt_type: VirtType, memory_mib: int) -> str:
        """Define and start the domain; ``auto`` tries KVM first and falls back to TCG when
        the guest does not reach its console markers (a /dev/kvm that runs no stock guest)."""
        libvirt = libvirt_module()
        kvm_usable = Path("/dev/kvm").exists()
        tries = ["kvm", "qemu"] if virt_type == "auto" and kvm_usable else \
            ["qemu"] if virt_type == "auto" else [virt_type]
        for kind in tries:
            console.unlink(missing_ok=True)
            dom = conn.defineXML(domain_xml(domain, guest, console, virt_type=kind,
                                            memory_mib=memory_mib))
            try:
                dom.create()
            except libvirt.libvirtError as exc:
                dom.undefine()
                if kind == tries[-1]:
                    raise VirtbenchError(f"libvirt refused to start the sandbox guest: {exc}"
                                         ) from exc
                continue
            if kind == tries[-1] or _console_shows_boot(console, 30.0):
                return kind
            dom.destroy()
            dom.undefine()
        raise VirtbenchError("the sandbox guest did not boot")  # unreachable: last try returns

    def down(self) -> bool:
        """Remove the domain, the daemon and the session keys; True when something ran."""
        stopped = self.daemon.stop()
        shutil.rmtree(self.session, ignore_errors=True)
        return stopped


def sandbox_up(directory: Path = DEFAULT_DIR, **options: Any) -> SandboxInfo:
    return Sandbox(directory).up(**options)


def sandbox_down(directory: Path = DEFAULT_DIR) -> bool:
    return Sandbox(directory).down()


def sandbox_status(directory: Path = DEFAULT_DIR) -> SandboxInfo | None:
    return Sandbox(directory).info()
