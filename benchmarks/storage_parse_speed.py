"""Floor: parsing 10,000 saved bonnie++/fio outputs takes <= 5 s (issue 5).

Cycles through the real outputs in tests/data/bonnie and tests/data/fio and times the parsers
(pure functions, no I/O inside the timed loop) with a monotonic clock.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.record import record
from virtbench.parsers.bonnie import parse_bonnie
from virtbench.parsers.fio import parse_fio

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
COUNT = 10_000
FLOOR_S = 5.0


def main() -> None:
    inputs = [(parse_bonnie, p.read_text()) for p in sorted((DATA / "bonnie").iterdir())]
    inputs += [(parse_fio, p.read_text()) for p in sorted((DATA / "fio").glob("*.json"))]
    measurements = 0
    started = time.perf_counter()
    for i in range(COUNT):
        parse, text = inputs[i % len(inputs)]
        measurements += len(parse(text))
    elapsed = time.perf_counter() - started
    verdict = "meets" if elapsed <= FLOOR_S else "MISSES"
    body = (
        f"| outputs parsed | distinct files | measurements | time | floor |\n"
        f"|---:|---:|---:|---:|---|\n"
        f"| {COUNT} | {len(inputs)} (bonnie++ CSV/tables, fio JSON) | {measurements} | "
        f"{elapsed:.2f} s | ≤ {FLOOR_S:.0f} s: {verdict} |\n"
    )
    print(body)
    record("storage: parse speed", ".venv/bin/python benchmarks/storage_parse_speed.py", body)


if __name__ == "__main__":
    main()
