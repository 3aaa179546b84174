"""Fixtures for the kvm lab tests: a private libvirtd and the cached tiny guest.

The Debian guest (python3, sshd) takes a minute or two to build on a fresh machine: when the
session holds tests that boot it, its build starts in a background thread as soon as they are
collected, and those tests run after the other kvm tests, so the build overlaps them. The
builder's file lock makes the tests' own call wait for that build (or build it themselves if
it failed, with the error)."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kvm_guest_image import GuestImage, build_guest
from kvm_libvirtd import PrivateLibvirtd

from virtbench.kvm.sandbox import Sandbox, SandboxInfo
from virtbench.targets.daemon import free_port


def _skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root (private libvirtd in a mount namespace)"
    for binary in ("unshare", "qemu-system-x86_64", "apt-get", "dpkg-deb", "cpio"):
        if shutil.which(binary) is None:
            return f"'{binary}' missing"
    try:
        import libvirt  # noqa: F401
    except ImportError:
        return "libvirt-python not installed"
    return None


_DEBIAN_GUEST_MODULES = ("test_kvm_workloads_in_guest.py", "test_assess_sandbox.py")


def _boots_debian_guest(item: pytest.Item) -> bool:
    return Path(str(item.path)).name in _DEBIAN_GUEST_MODULES


def _prebuild_debian_guest() -> None:
    from kvm_debian_guest import build_debian_guest
    # A failed build is the tests' to report: their own call builds again and raises.
    with contextlib.suppress(Exception):
        build_debian_guest()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not any(_boots_debian_guest(item) for item in items):
        return
    # Stable: the Debian guest's tests last, everything else in its collected order.
    items.sort(key=_boots_debian_guest)


def pytest_collection_finish(session: pytest.Session) -> None:
    # After deselection (-k, -m): only a session that will boot the guest builds it.
    if not any(_boots_debian_guest(item) for item in session.items):
        return
    if _skip_reason() is None and shutil.which("mmdebstrap"):
        threading.Thread(target=_prebuild_debian_guest, name="debian-guest-prebuild",
                         daemon=True).start()


@pytest.fixture(scope="session")
def private_libvirtd() -> Iterator[str]:
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    daemon = PrivateLibvirtd()
    try:
        yield daemon.start()
    finally:
        daemon.stop()


@pytest.fixture(scope="session")
def guest_image() -> GuestImage:
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    return build_guest()


@pytest.fixture
def state_dir(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> object:
    monkeypatch.setenv("VIRTBENCH_STATE_DIR", str(tmp_path))
    return tmp_path


@pytest.fixture(scope="session")
def debian_sandbox() -> Iterator[tuple[Sandbox, SandboxInfo]]:
    """The Debian guest as `virtbench kvm sandbox up` starts it (its own private libvirtd,
    TCG), booted ONCE for the session: a boot to sshd is a TCG boot of the whole Debian
    initramfs. test_assess_sandbox.py tunes and rolls it back, test_kvm_workloads_in_guest.py
    runs its variants in it; each test leaves it running its original CPU and asserts so."""
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    if shutil.which("mmdebstrap") is None:
        pytest.skip("mmdebstrap missing (apt-get install mmdebstrap)")
    from kvm_debian_guest import CACHE
    tmp = Path(tempfile.mkdtemp(prefix="vbkvm-sandbox-"))
    box = Sandbox(tmp / "sandbox", image_cache=CACHE)
    try:
        yield box, box.up(domain=f"vbkvm-deb-{uuid.uuid4().hex[:6]}", port=free_port(),
                          virt_type="qemu")
    finally:
        box.down()
        shutil.rmtree(tmp, ignore_errors=True)
