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
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from kvm_guest_image import GuestImage, build_guest
from kvm_libvirtd import PrivateLibvirtd


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
