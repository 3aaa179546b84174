"""Compile virtbench's capture loops ahead of time (numba.pycc) next to their source.

Run by scripts/install.sh; safe to skip: without the module the loops are JIT-compiled. The
module is named after a hash of capture_kernels.py (see virtbench.net_qos.compiled), so older
builds are removed and never loaded after an edit. Usage: .venv/bin/python
scripts/build_capture_kernels.py
"""

from __future__ import annotations

import warnings
from pathlib import Path

from numba import njit
from numba.pycc import CC

from virtbench.net_qos import capture_kernels as k
from virtbench.net_qos.compiled import EXPORTED, aot_module_name


def main() -> None:
    out_dir = Path(k.__file__).parent
    name = aot_module_name()
    for old in out_dir.glob("_capture_aot_*"):
        old.unlink()
    warnings.simplefilter("ignore")  # pycc's pending-deprecation notice; the JIT stays as fallback
    for helper in k.HELPERS:
        inline = "always" if helper in k.INLINE else "never"
        setattr(k, helper, njit(nogil=True, inline=inline)(getattr(k, helper)))
    cc = CC(name)
    cc.output_dir = str(out_dir)
    cc.verbose = False
    for fn in EXPORTED:
        cc.export(fn, k.SIGNATURES[fn].format(b=k.BYTES))(getattr(k, fn))
    cc.compile()
    print(f"built {name} in {out_dir}")


if __name__ == "__main__":
    main()
