"""The run record: one stored run, opened new or resumed, its status, its interruption.

A new run is created when it starts (``RunRecord.new``; nothing is stored before the run's
checks pass). A run to resume is validated once, by ``RunRecord.resume``: the CLI calls it
before the run's checks (a wrong id fails before anything else), the fleet for each host's
run, calibrate for each block; the runner then claims it (``open``), which fails if another
process claimed it since it was validated. Ctrl-C, SIGTERM and SIGHUP all end a run the same
way: its status 'interrupted', resumable."""

from __future__ import annotations

import contextlib
import hashlib
import signal
import socket
import threading
import uuid
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import TYPE_CHECKING

from virtbench import __version__
from virtbench.model import VirtbenchError
from virtbench.store import RunInfo, Store, StoreFailed
from virtbench.store.ids import check_run_id
from virtbench.store.liveness import this_owner
from virtbench.store.store import stored_spec_yaml

if TYPE_CHECKING:
    from virtbench.profiling import Profiler
    from virtbench.runner.plan import Plan

__all__ = ["Measured", "RunRecord", "refuse_if_running", "sigterm_as_interrupt", "spec_digest"]


def spec_digest(spec_yaml: str) -> str:
    return hashlib.sha256(spec_yaml.encode()).hexdigest()[:16]


def refuse_if_running(info: RunInfo) -> None:
    """A run whose process still runs it (or may: on another host) is not resumed: two
    processes would measure its remaining trials twice."""
    if info.status != "running" or info.owner_pid is None:  # None: recorded before schema 5
        return
    if info.owner_host == this_owner().host:
        raise VirtbenchError(f"run {info.id} is still running ({info.owner}); wait for it to "
                             "end, or stop that process, then resume")
    raise VirtbenchError(f"run {info.id} is marked running by {info.owner}, which this host "
                         "cannot check; resume it on that host once it has stopped")


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (and SIGHUP) clean up like Ctrl-C does, instead of killing us mid-write."""

    def handler(signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")

    if threading.current_thread() is not threading.main_thread():
        yield  # a fleet's per-host runner: signals reach the main thread, which stops us
        return

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@dataclass
class Measured:
    """What a run measured before this call (nothing, for a new run)."""

    done: set[tuple[str, str, int]] = field(default_factory=set)
    """(variant, workload id, repetition) of every trial that ended"""
    values: defaultdict[tuple[str, str, str], list[float]] = field(
        default_factory=lambda: defaultdict(list))
    """Scalar values by (variant, workload id, metric), for adaptive stopping"""
    next_order_index: int = 0


@dataclass
class RunRecord:
    """One run in the store. Build it with ``new`` or ``resume``; ``open`` stores it."""

    store: Store
    run_id: str
    spec_yaml: str
    spec_path: str
    host: str
    calibration: str | None
    resumed: RunInfo | None
    """The run as validated by ``resume`` (None: a new run)"""

    @classmethod
    def new(cls, store: Store, spec_yaml: str, spec_path: str = "", *, host: str | None = None,
            run_id: str | None = None, calibration: str | None = None) -> RunRecord:
        """A run not stored yet; ``run_id``: chosen by the caller (a fleet's host, a
        calibration's runs); ``host``: its label (default: this machine's name)."""
        run_id = check_run_id(run_id) if run_id is not None else uuid.uuid4().hex[:12]
        return cls(store, run_id, spec_yaml, spec_path, host or socket.gethostname(),
                   calibration, None)

    @classmethod
    def resume(cls, store: Store, ref: str, spec_yaml: str, spec_path: str = "", *,
               calibration: str | None = None) -> RunRecord:
        """The stored run ``ref`` to continue from ``spec_yaml``, validated: its id is a run
        id (an older store's odd id is read, never resumed: the id names the work
        directory), it belongs to ``calibration`` (None: to no calibration), it was started
        from the same file, it is not complete and no live process runs it."""
        info = store.run(ref)
        check_run_id(info.id, "run id")
        if info.calibration != calibration:
            if calibration is None:  # its experiment is the baseline alone, not the file
                raise VirtbenchError(
                    f"run {info.id} is a calibration run; `virtbench calibrate "
                    f"{spec_path or info.spec_path} --resume {info.calibration}` continues it")
            raise VirtbenchError(f"run {info.id} is not a run of calibration {calibration}")
        # the file as the store keeps it (an older store kept it as read)
        if spec_digest(info.spec_yaml) not in {spec_digest(spec_yaml),
                                               spec_digest(stored_spec_yaml(spec_yaml))}:
            raise VirtbenchError(f"run {info.id} was started from a different experiment file; "
                                 "resume needs the same file (or start a new run)")
        if info.status == "complete":
            raise VirtbenchError(f"run {info.id} is already complete")
        refuse_if_running(info)
        return cls(store, info.id, spec_yaml, spec_path, info.host, calibration, info)

    def open(self, plan: Plan, target: str, profiler: Profiler) -> Measured:
        """Store a new run (its variants and workloads), or claim the run to resume and read
        what it measured already. ``target``: the target's description."""
        if self.resumed is not None:
            return self._claim(self.resumed)
        exp = plan.experiment
        self.store.create_run(
            experiment=exp.name, description=exp.description, spec_yaml=self.spec_yaml,
            spec_path=self.spec_path, seed=exp.seed, host=self.host, target=target,
            baseline=plan.baseline, version=__version__, run_id=self.run_id,
            calibration=self.calibration)
        self.store.add_variants(
            self.run_id, [(name, dict(knobs)) for name, knobs in plan.variants.items()],
            plan.baseline)
        for position, (workload_id, workload) in enumerate(plan.workloads.items()):
            self.store.add_workload(self.run_id, workload_id, workload.name, position,
                                    workload.params.model_dump(mode="json"),
                                    [*workload.active_metrics(),
                                     *profiler.metrics(workload_id)])
        return Measured()

    def _claim(self, info: RunInfo) -> Measured:
        if not self.store.claim_run(info):
            raise VirtbenchError(f"run {info.id} was resumed by another process just now; "
                                 "`virtbench runs` shows it")
        measured = Measured(self.store.completed_trials(info.id),
                            next_order_index=self.store.next_order_index(info.id))
        for row in self.store.samples(info.id):
            if row.t is None and row.value is not None:
                measured.values[(row.variant, row.workload_id, row.metric)].append(row.value)
        return measured

    def finish(self, status: str, reason: str) -> StoreFailed | None:
        """Store the run's final status; when the store cannot take it (its disk is still
        full), the error, for the caller to say or raise once the rest is cleaned up.
        `virtbench runs` then shows the run as abandoned."""
        try:
            self.store.set_run_status(self.run_id, status, reason)
        except StoreFailed as exc:
            return exc
        return None
