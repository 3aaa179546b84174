"""50 SSH hosts at once against one host: wall time and the controller's CPU per trial.

Hosts are network namespaces with their own sshd (tests/lab/fleet/sshhosts.py); the workload
is exec.command `sleep 0.1`, 2 variants × 4 repetitions (+ facts, checks, lab) per host. The
same experiment runs on 1 host and on 50 hosts, alternating (1, 50, 50, 1). Controller CPU is
this process's user+system time plus its children's (the ssh clients), per trial.
Floor: 50-host wall time ≤ 1.5 × the 1-host wall time.

Run (root): .venv/bin/python benchmarks/fleet_hosts.py [HOSTS]
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO
from record import record

sys.path.insert(0, str(REPO / "tests" / "lab" / "fleet"))

from sshhosts import SshFleet, start_fleet

from virtbench.fleet import FleetRunner, parse_inventory
from virtbench.spec.loader import parse_experiment
from virtbench.store import Store

EXPERIMENT = """\
name: fleet-bench
baseline: a
variants: [{name: a, knobs: {}}, {name: b, knobs: {}}]
workloads: [{name: exec.command, params: {argv: [sleep, "0.1"]}}]
repetitions: 4
warmup: 0
"""


def one_run(fleet: SshFleet, count: int, workdir: Path) -> tuple[float, float, int, int]:
    """(wall s, controller CPU s, trials, failed hosts) on the first ``count`` hosts."""
    exp = parse_experiment(EXPERIMENT, "fleet-bench.yaml")
    hosts = parse_inventory(fleet.inventory_yaml(fleet.hosts[:count]), "inventory")
    db = str(workdir / f"run-{count}-{time.monotonic_ns()}.db")
    Store(db).close()
    before = os.times()
    started = time.monotonic()
    outcome = FleetRunner(db, exp, EXPERIMENT, "fleet-bench.yaml", hosts,
                          netns=fleet.controller).run()
    wall = time.monotonic() - started
    after = os.times()
    cpu = sum(after[:4]) - sum(before[:4])
    bad = [h for h in outcome.hosts if h.status != "complete"]
    for h in bad:  # recorded, not hidden: the table counts them
        print(f"  {h.host}: {h.status}: {h.reason}", flush=True)
    trials = sum(h.trials for h in outcome.hosts)
    return wall, cpu, trials, len(bad)


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    workdir = Path(tempfile.mkdtemp(prefix="vb-bench-fleet."))
    os.environ["XDG_CACHE_HOME"] = str(workdir / "cache")
    fleet = start_fleet(count, prefix="vbflb")
    rows: list[tuple[int, float, float, int, int]] = []
    try:
        for n in (1, count, count, 1):
            wall, cpu, trials, failed = one_run(fleet, n, workdir)
            rows.append((n, wall, cpu, trials, failed))
            print(f"{n} hosts: {wall:.1f} s wall, {cpu:.2f} s CPU, {trials} trials, "
                  f"{failed} hosts failed", flush=True)
    finally:
        fleet.stop()
    single = [r for r in rows if r[0] == 1]
    many = [r for r in rows if r[0] == count]
    ratios = [m[1] / s[1] for m, s in zip(many, reversed(single), strict=True)]
    ratio = statistics.median(ratios)
    cpu_single = statistics.median(r[2] / r[3] for r in single) * 1000
    cpu_many = statistics.median(r[2] / r[3] for r in many) * 1000
    load = os.getloadavg()[0]
    body = (
        f"exec.command `sleep 0.1`, 2 variants × 4 repetitions per host (plus each host's facts, "
        f"checks and lab); hosts are network namespaces with their own sshd, reached over "
        f"ssh with ControlMaster; SQLite store; order 1, {count}, {count}, 1 hosts; load "
        f"average at the end: {load:.1f} on {os.cpu_count()} CPUs.\n\n"
        "| hosts | wall time (s) | controller CPU (s) | trials | controller CPU per trial "
        "| hosts failed |\n|---:|---:|---:|---:|---:|---:|\n"
        + "".join(f"| {n} | {w:.1f} | {c:.2f} | {t} | {c / t * 1000:.1f} ms | {f} |\n"
                  for n, w, c, t, f in rows)
        + f"\nWall time {count} hosts / 1 host (each {count}-host run against the 1-host run "
        f"next to it): {', '.join(f'{r:.2f}' for r in ratios)}; median {ratio:.2f} "
        f"(floor ≤ 1.5: {'meets' if ratio <= 1.5 else 'MISSES'}).  \n"
        f"Controller CPU per trial: {cpu_single:.1f} ms on 1 host, {cpu_many:.1f} ms on "
        f"{count} hosts (this process and its ssh clients).  \n"
        f"The simulated hosts' sshd sessions and commands run on the same {os.cpu_count()} "
        "cores as the controller (and the machine's other work), so the many-host wall time "
        "is bounded by this machine's CPU, not by the controller's share of it.\n")
    print(body)
    record("fleet: 50 hosts against one", "sudo .venv/bin/python benchmarks/fleet_hosts.py",
           body)


if __name__ == "__main__":
    main()
