"""The closed model's users split over several generator processes, started together.

One Python process serves its connections from one core at most; wrk spreads its connections
over threads (``-t2``). With ``processes: N`` the users are dealt to N copies of
``python -m virtbench.loadgen`` (spawned through the local target). Each announces it is ready
(imports done), then all start their sending period at one monotonic instant, so their rates
add up over the same seconds; their records are merged into one run.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from virtbench.loadgen.config import LoadConfig
from virtbench.loadgen.records import RequestRecord, read_records
from virtbench.targets.local import LocalTarget
from virtbench.targets.process import Process

__all__ = ["announce_and_wait", "run_in_processes"]

# A busy machine may take tens of seconds to start Python and import; this bounds a hang only.
_READY_BOUND_S = 300.0
# From "all ready" to the common start: time to write the start file and for every process to
# notice it (each polls every millisecond).
_START_LEAD_S = 0.1


def announce_and_wait(barrier: Path, poll_s: float = 0.001) -> float:
    """In a part process: say ready, then wait for the common start (monotonic seconds)."""
    barrier.with_suffix(".ready").touch()
    go = barrier.with_suffix(".go")
    deadline = time.monotonic() + _READY_BOUND_S
    while not go.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"no start signal in {_READY_BOUND_S:.0f} s ({go})")
        time.sleep(poll_s)
    return float(go.read_text())


def run_in_processes(config: LoadConfig) -> tuple[list[RequestRecord], dict[str, object]]:
    """Run ``config`` (closed model) in ``config.processes`` processes; merged records, meta."""
    count = min(config.processes, config.users)
    sizes = [config.users // count + (1 if i < config.users % count else 0) for i in range(count)]
    workdir = Path(tempfile.mkdtemp(prefix="vb-loadgen-"))
    target = LocalTarget()
    procs: list[tuple[Process, Path]] = []
    try:
        for index, users in enumerate(sizes):
            # Each process seeds its users' URL choices from the run's seed and its number.
            part = config.model_copy(update={"processes": 1, "users": users,
                                             "seed": config.seed * 1000 + index})
            conf, err = workdir / f"part{index}.json", workdir / f"part{index}.stderr"
            conf.write_text(part.model_dump_json())
            with err.open("wb") as err_file:
                procs.append((target.spawn(
                    [*target.python(), "-m", "virtbench.loadgen", str(conf),
                     str(workdir / f"part{index}.jsonl"), "--barrier",
                     str(workdir / f"part{index}")],
                    stderr=err_file.fileno()), err))
        _wait_ready(workdir, procs)
        start = time.monotonic() + _START_LEAD_S
        for index in range(count):
            tmp = workdir / f"part{index}.go.tmp"
            tmp.write_text(repr(start))
            tmp.rename(workdir / f"part{index}.go")  # atomic: never a half-written time
        bound = config.duration_s + config.timeout_s + 60
        for proc, err in procs:
            try:
                code: int | None = proc.wait(bound).returncode
            except subprocess.TimeoutExpired:
                code = None
            if code != 0:
                raise RuntimeError(f"load generator process {proc.pid} failed ({code}): "
                                   f"{err.read_text().strip()[-2000:]}")
        return _merge(workdir, sizes, start)
    finally:
        for proc, _ in procs:
            if proc.poll() is None:
                proc.kill_group()  # spawned in a session of its own
        shutil.rmtree(workdir, ignore_errors=True)


def _wait_ready(workdir: Path, procs: list[tuple[Process, Path]]) -> None:
    deadline = time.monotonic() + _READY_BOUND_S
    for index, (proc, err) in enumerate(procs):
        while not (workdir / f"part{index}.ready").exists():
            if proc.poll() is not None:
                raise RuntimeError(f"load generator process {proc.pid} exited "
                                   f"({proc.returncode}) before it was ready: "
                                   f"{err.read_text().strip()[-2000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"load generator process {proc.pid} not ready in "
                                   f"{_READY_BOUND_S:.0f} s")
            time.sleep(0.01)


def _merge(workdir: Path, sizes: list[int], start: float
           ) -> tuple[list[RequestRecord], dict[str, object]]:
    merged: list[RequestRecord] = []
    meta: dict[str, object] = {}
    opened = 0
    first_worker = 0
    for index, users in enumerate(sizes):
        records, part_meta = read_records(workdir / f"part{index}.jsonl")
        for record in records:  # all parts share time zero: only the user numbers move
            record.worker += first_worker
        merged += records
        first_worker += users
        with contextlib.suppress(TypeError, ValueError):
            opened += int(str(part_meta.get("connections_opened", 0)))
        meta = meta or part_meta
    merged.sort(key=lambda r: r.scheduled)
    for index, record in enumerate(merged):
        record.index = index
    meta.update({"processes": len(sizes), "connections_opened": opened, "t0_monotonic": start})
    meta.pop("summary", None)
    return merged, meta
