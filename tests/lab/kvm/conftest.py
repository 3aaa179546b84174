"""Fixtures for the kvm lab tests: a private libvirtd and the cached tiny guest."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

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
