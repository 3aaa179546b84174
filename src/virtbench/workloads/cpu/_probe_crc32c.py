"""Standalone CRC32C timing probe; runs on the target as `python3 -c SRC SIZE LOOPS SEED`.

Kept free of virtbench imports so a target only needs the `crc32c` package.
"""

import json
import random
import sys
import time

import crc32c

size, loops, seed = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
data = random.Random(seed).randbytes(size)
crc32c.crc32c(data)  # warm caches and the branch predictor outside the timed loop
times = []
# The timed loop's span on CLOCK_MONOTONIC: a profile keeps only its samples, not the start-up.
window = [time.monotonic()]
for _ in range(loops):
    start = time.perf_counter()
    crc32c.crc32c(data)
    times.append(time.perf_counter() - start)
window.append(time.monotonic())
print(json.dumps({"times": times, "hardware_based": bool(crc32c.hardware_based),
                  "size": size, "window": window}))
