"""The capture loops (`capture_kernels`) as machine code: ahead-of-time compiled if available.

`scripts/build_capture_kernels.py` compiles them with numba.pycc into a module named after a
hash of capture_kernels.py, so an edit of the loops can never run stale machine code: without a
module of the current hash they are JIT-compiled (numba, `cache=True`). The ahead-of-time module
needs only numpy at run time; importing numba and loading its JIT cache costs about a second of
start-up per process (BENCHMARKS.md, "capture analysis speed").
"""

from __future__ import annotations

import hashlib
import importlib
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

__all__ = ["aot_module_name", "kernels"]

EXPORTED = ("walk_classic", "walk_pcapng", "assign", "flow_sums")


def aot_module_name() -> str:
    source = (Path(__file__).parent / "capture_kernels.py").read_bytes()
    return "_capture_aot_" + hashlib.sha256(source).hexdigest()[:12]


@cache
def kernels() -> Any:
    """An object with the exported loops as attributes (the AOT module or JIT dispatchers)."""
    try:
        return importlib.import_module(f"virtbench.net_qos.{aot_module_name()}")
    except ImportError:
        return jit_kernels()


def jit_kernels() -> Any:
    from numba import njit

    from virtbench.net_qos import capture_kernels as k

    # Rebinding the module's names makes the loops call the compiled helpers.
    for name in k.HELPERS:
        fn = getattr(k, name)
        if not hasattr(fn, "py_func"):
            if name in k.INLINE:
                setattr(k, name, njit(cache=True, nogil=True, inline="always")(fn))
            else:
                setattr(k, name, njit(cache=True, nogil=True)(fn))
    out = SimpleNamespace()
    for name in EXPORTED:
        fn = getattr(k, name)
        setattr(out, name, fn if hasattr(fn, "py_func") else
                njit(cache=True, nogil=True)(fn))
    return out
