"""The small Debian guest of ``virtbench kvm sandbox`` (python3, crc32c, cryptography, sshd),
for the lab tests: the product's builder (virtbench.kvm.sandbox_image) with the image cached
where the sandbox caches it, so tests and `virtbench kvm sandbox up` build it once; and SSH to
a running sandbox's guest."""

from __future__ import annotations

import time
from pathlib import Path

from images import cache_dir

from virtbench.kvm.sandbox import SandboxInfo
from virtbench.kvm.sandbox_image import MODULES, DebianGuestImage
from virtbench.kvm.sandbox_image import build_debian_guest as _build
from virtbench.targets.ssh import SSHTarget
from virtbench.targets.target_contract import CommandFailed

__all__ = ["CACHE", "MODULES", "build_debian_guest", "sandbox_ssh", "wait_answering"]

CACHE = cache_dir("virtbench-sandbox/image")


def build_debian_guest(cache: Path = CACHE) -> DebianGuestImage:
    cache.parent.mkdir(parents=True, exist_ok=True)
    return _build(cache)


def sandbox_ssh(info: SandboxInfo) -> SSHTarget:
    """root in the sandbox's guest, its host key pinned; no multiplexing master to outlive a
    test."""
    host, port = info.ssh.split("@")[1].split(":")
    return SSHTarget(host, user="root", port=int(port), known_hosts=info.known_hosts,
                     identity_file=info.identity, multiplex=False)


def wait_answering(info: SandboxInfo, wait_s: float = 240.0) -> None:
    """Until the guest's sshd answers (a tune or rollback restarts the guest), bounded."""
    ssh = sandbox_ssh(info)
    deadline = time.monotonic() + wait_s
    while True:  # ends: answered, or past the deadline below
        try:
            ssh.run(["true"], timeout=60)
            return
        except CommandFailed:
            if time.monotonic() > deadline:
                raise
            time.sleep(2)
