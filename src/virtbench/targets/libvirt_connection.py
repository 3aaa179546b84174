"""Open libvirt connections with a clear error when the binding or daemon is missing.

Part of ``targets`` (the floor that reaches machines): a libvirt guest target opens one, and the
kvm package and lab above build on it.
"""

from __future__ import annotations

import os
from functools import cache
from typing import Any
from urllib.parse import urlparse

from virtbench.model import VirtbenchError

__all__ = ["LIBVIRT_MISSING", "default_uri", "is_local", "libvirt_module", "open_connection"]

LIBVIRT_MISSING = (
    "the libvirt Python binding is not installed (needed by `virtbench kvm`, the kvm lab and "
    "libvirt-guest targets): run `bash scripts/install.sh`, which does pip install "
    "libvirt-python; building it needs the Debian packages libvirt-dev and pkg-config "
    "(apt-get install libvirt-dev pkg-config)"
)


@cache
def libvirt_module() -> Any:
    """The ``libvirt`` Python module, with libvirt's stderr error printing turned off."""
    try:
        import libvirt
    except ImportError as exc:
        raise VirtbenchError(LIBVIRT_MISSING) from exc
    # Errors arrive as exceptions; without this libvirt also prints each one to stderr.
    libvirt.registerErrorHandler(lambda _ctx, _err: None, None)
    return libvirt


def default_uri() -> str:
    """``--connect`` default: $LIBVIRT_DEFAULT_URI, else the system QEMU driver."""
    return os.environ.get("LIBVIRT_DEFAULT_URI", "qemu:///system")


def is_local(uri: str) -> bool:
    """True when the libvirt daemon runs on this machine (no host name in the URI)."""
    return not urlparse(uri).hostname


def open_connection(uri: str | None = None) -> Any:
    """A read-write ``virConnect`` to ``uri`` (default :func:`default_uri`)."""
    libvirt = libvirt_module()
    target = uri or default_uri()
    try:
        return libvirt.open(target)
    except libvirt.libvirtError as exc:
        raise VirtbenchError(f"cannot connect to libvirt at '{target}': {exc}") from exc
