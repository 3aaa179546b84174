"""The small Debian guest of ``virtbench kvm sandbox`` (python3, crc32c, cryptography, sshd),
for the lab tests: the product's builder (virtbench.kvm.sandbox_image) with the image cached
where the sandbox caches it, so tests and `virtbench kvm sandbox up` build it once."""

from __future__ import annotations

from pathlib import Path

from virtbench.kvm.sandbox import DEFAULT_DIR, wait_ssh
from virtbench.kvm.sandbox import domain_xml as _domain_xml
from virtbench.kvm.sandbox_image import MODULES, DebianGuestImage, GuestInstance, make_instance
from virtbench.kvm.sandbox_image import build_debian_guest as _build

__all__ = ["CACHE", "MODULES", "DebianGuestImage", "GuestInstance", "build_debian_guest",
           "domain_xml", "make_instance", "wait_ssh"]

REPO = Path(__file__).resolve().parents[3]
CACHE = REPO / DEFAULT_DIR / "image"


def build_debian_guest(cache: Path = CACHE) -> DebianGuestImage:
    cache.parent.mkdir(parents=True, exist_ok=True)
    (cache.parent.parent / ".gitignore").write_text("*\n")
    return _build(cache)


def domain_xml(name: str, guest: GuestInstance, console_log: Path, memory_mib: int = 768) -> str:
    """A TCG domain with qemu64 (QEMU's default CPU) and user-mode networking on loopback."""
    return _domain_xml(name, guest, console_log, virt_type="qemu", memory_mib=memory_mib)
