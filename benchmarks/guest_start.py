"""How long does the guest lab take to switch variants (define -> boot -> SSH answers, under
TCG here), and to build its image, first and cached? Floor (issue 37): measured and recorded;
the suite's guest test boots one guest twice.
Run: `.venv/bin/python benchmarks/guest_start.py` (root; mmdebstrap, QEMU).
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.record import record
from virtbench.kvm.guest_image import build_guest_image
from virtbench.labs.guest import GuestLab, GuestParams
from virtbench.targets.local import LocalTarget

REPO = Path(__file__).resolve().parent.parent
SWITCHES = 6


def _spread(values: list[float]) -> str:
    return (f"{statistics.median(values):.1f} s (min {min(values):.1f}, "
            f"max {max(values):.1f}, n={len(values)})")


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="vbguest-bench-"))
    os.environ["VIRTBENCH_LAB_ROOT"] = str(root / "labs")
    started = time.monotonic()
    build_guest_image(root / "image")
    first = time.monotonic() - started
    started = time.monotonic()
    build_guest_image(root / "image")
    cached = time.monotonic() - started
    lab = GuestLab(GuestParams(image_cache=str(root / "image"), disk_mib=256), root,
                   LocalTarget())
    boots: list[float] = []
    enters: list[float] = []
    try:
        started = time.monotonic()
        lab.up()
        up_s = time.monotonic() - started
        variants = ({"cache": "none", "io": "native"}, {"cache": "writeback", "io": "threads"})
        for i in range(SWITCHES):  # alternating: every enter is a real switch
            started = time.monotonic()
            state = lab.enter(f"v{i}", variants[i % 2])
            enters.append(time.monotonic() - started)
            boots.append(float(state.notes["boot_s"]))
    finally:
        lab.down()
        shutil.rmtree(root, ignore_errors=True)
    body = "\n".join([
        "Guest lab (docs/guests.md) under TCG, private libvirtd, 1 vCPU, 768 MiB, 256 MiB "
        "raw test disk; variants alternate cache=none/io=native and cache=writeback/"
        "io=threads, so every enter redefines and reboots the guest.", "",
        "| what | time |", "|---|---|",
        f"| image build, first (mmdebstrap + downloads, empty cache) | {first:.1f} s |",
        f"| image build, cached (recipe digest matches) | {cached:.3f} s |",
        f"| lab up (private libvirtd, caps, keys, initramfs) | {up_s:.1f} s |",
        f"| variant switch: define -> boot -> SSH answers | {_spread(boots)} |",
        f"| variant switch: whole enter (+ disk, verify, mkfs, mount) | {_spread(enters)} |",
    ])
    print(body)
    record("guest: start and image build", ".venv/bin/python benchmarks/guest_start.py", body)


if __name__ == "__main__":
    main()
