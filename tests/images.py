"""Where the tests keep what they build once and reuse: guest images, QEMU's capabilities.

In the user's cache directory (``$XDG_CACHE_HOME``, else ``~/.cache``), not in the checkout, so
a fresh clone on the same machine (as CI makes) reuses the images instead of building each
again (about 2 CPU-minutes for the five of them). Every image is still rebuilt when its recipe
changes: the builders compare the recipe stamp beside it.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir"]


def cache_dir(name: str) -> Path:
    """The directory of one cached thing (``virtbench-guest/image``, ``vbkvm-guest``...)."""
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "virtbench-tests" / name
