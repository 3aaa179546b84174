#!/bin/bash
# Regenerates the folded stacks of this folder (README.md): the cpu.crc32c probe profiled with
# perf, software CRC32C (CRC32C_SW_MODE=force) and hardware (SSE4.2), three trials each.
# Needs root (or perf_event_paranoid <= 1), perf, the crc32c package and inferno-collapse-perf.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-python3}
collapse=${COLLAPSE:-inferno-collapse-perf}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# a copy outside the source tree: beside it, `import crc32c` would find the workload module
cp "$here/../../../src/virtbench/workloads/cpu/_probe_crc32c.py" "$work/probe.py"
for variant in software hardware; do
  for trial in 1 2 3; do
    if [ "$variant" = software ]; then export CRC32C_SW_MODE=force; else unset CRC32C_SW_MODE; fi
    perf record -q -e cpu-clock -F 499 -g -o "$work/perf.data" -- \
      "$python" "$work/probe.py" 16777216 1000 "$trial" > /dev/null
    perf script -F comm,pid,tid,time,event,ip,sym,dso -i "$work/perf.data" 2>/dev/null \
      | "$collapse" --all > "$here/crc32c-$variant-$trial.folded"
  done
done
