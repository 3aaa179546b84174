"""One experiment on many hosts at once: a runner per host, in a process per controller core.

Hosts are driven by one forked process per controller core (nothing is imported again), each
host in a thread of its own there, with its own SSH target (one multiplexed connection, one
agent session), store connection, run (labelled with the host's inventory name), randomised
order, facts and lab — exactly the single-host runner, so a fleet run is N ordinary runs made
at the same time. The runs are tied together by a fleet record (saved state ``fleet/<id>``:
experiment, host names, run ids; never a credential). A host that is unreachable or fails is
recorded as a failed run with the reason and does not stop the others; ``resume`` continues
every unfinished run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import hashlib
import os
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from virtbench import __version__
from virtbench.fleet.connect import connect, probe
from virtbench.fleet.inventory import FleetHost
from virtbench.labs.net.crosshost import CrossHostLab
from virtbench.model import VirtbenchError
from virtbench.plugins import get_lab, get_workload
from virtbench.runner import ProgressHook, Runner, RunRecord, build_plan
from virtbench.runner.deadline import GRACE_S
from virtbench.runner.record import sigterm_as_interrupt, spec_digest
from virtbench.runner.schedule import TrialKey
from virtbench.spec.models import Experiment
from virtbench.spec.resolve import ResolvedExperiment, resolve
from virtbench.store import Store
from virtbench.targets.forked import KILL_WAIT_S, ForkedCall, Send
from virtbench.targets.ssh import SSHTarget

__all__ = ["FleetOutcome", "FleetRunner", "HostOutcome", "fleet_record", "latest_fleet"]

FLEET_PREFIX = "fleet/"
STOP_TEARDOWN_S = 120.0
"""After Ctrl-C, the time a host's lab gets to tear down once its trial ended (s)."""
Say = Callable[[str, str], None]


@dataclass
class HostOutcome:
    host: str
    run_id: str
    status: str
    reason: str
    trials: int = 0
    failures: int = 0


@dataclass
class FleetOutcome:
    fleet_id: str
    hosts: list[HostOutcome] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def run_ids(self) -> list[str]:
        return [h.run_id for h in self.hosts]


class _HostProgress(ProgressHook):
    """Forwards one host's messages; stops its runner (at a trial boundary) on request (hosts
    run as threads; a host's own process stops on SIGINT, as a runner does)."""

    def __init__(self, host: str, say: Say, stop: threading.Event) -> None:
        self.host, self.say, self.stop_event = host, say, stop

    def advance(self, key: TrialKey, ok: bool) -> None:
        if self.stop_event.is_set():
            raise KeyboardInterrupt("fleet interrupted")

    def message(self, text: str) -> None:
        self.say(self.host, text)


def fleet_record(store: Store, fleet_id: str) -> dict[str, Any]:
    record = store.load_state(FLEET_PREFIX + fleet_id)
    if record is None:
        known = [k.removeprefix(FLEET_PREFIX) for k in store.state_keys(FLEET_PREFIX)]
        raise VirtbenchError(f"no fleet run {fleet_id!r} in the store"
                             + (f"; known: {', '.join(known)}" if known else ""))
    return dict(record)


def latest_fleet(store: Store, experiment: str) -> str:
    """The most recent fleet run of ``experiment`` that has an unfinished host."""
    records = [(k.removeprefix(FLEET_PREFIX), store.load_state(k))
               for k in store.state_keys(FLEET_PREFIX)]
    mine = sorted(((r["started_at"], fid) for fid, r in records
                   if r and r["experiment"] == experiment), reverse=True)
    finished = {r.id for r in store.runs() if r.status == "complete"}
    for _, fid in mine:
        record = dict(store.load_state(FLEET_PREFIX + fid) or {})
        if any(h["run_id"] not in finished for h in record["hosts"].values()):
            return fid
    raise VirtbenchError(f"no unfinished fleet run of {experiment} in the store")


class FleetRunner:
    """Runs ``exp`` on ``hosts`` concurrently; ``store_location`` is opened once per host."""

    def __init__(self, store_location: str, exp: Experiment | ResolvedExperiment,
                 spec_yaml: str, spec_path: str,
                 hosts: Sequence[FleetHost], *, known_hosts: str | None = None,
                 netns: str | None = None, say: Say | None = None,
                 stop_wait_s: float | None = None) -> None:
        if not hosts:
            raise VirtbenchError("a fleet run needs at least one host")
        names = [h.name for h in hosts]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise VirtbenchError(f"host names must be distinct: {', '.join(duplicates)}")
        self.store_location = store_location
        # Resolved once (plugins, parameters, knobs); each host's run builds its own plan.
        self.resolved = exp if isinstance(exp, ResolvedExperiment) else resolve(exp)
        self.exp, self.spec_yaml, self.spec_path = self.resolved.experiment, spec_yaml, spec_path
        self.hosts = list(hosts)
        # roles (lab cross-host): one run, on the client's host, with the server's as its peer
        self.server: FleetHost | None = None
        if self.exp.lab.kind == CrossHostLab.name:
            self.hosts, self.server = _role_hosts(self.exp, self.hosts)
        self.known_hosts, self.netns = known_hosts, netns
        self.say: Say = say or (lambda _host, _text: None)
        self.stop = threading.Event()
        self._stop_wait_s = stop_wait_s

    def run(self, resume_fleet_id: str | None = None) -> FleetOutcome:
        store = Store(self.store_location)
        try:
            fleet_id, runs = self._open(store, resume_fleet_id)
        finally:
            store.close()
        results: dict[str, HostOutcome] = {}
        started = time.monotonic()
        resume = resume_fleet_id is not None
        if threading.active_count() == 1:
            self._in_processes(runs, resume, results)
        else:  # a fork would copy locks the caller's other threads may hold (SQLite's, ...)
            self._in_threads(runs, resume, results)
        outcome = FleetOutcome(fleet_id)
        outcome.wall_s = time.monotonic() - started
        outcome.hosts = [results[h.name] for h in self.hosts]
        return outcome

    def _in_processes(self, runs: dict[str, str], resume: bool,
                      results: dict[str, HostOutcome]) -> None:
        """The hosts spread over one forked process per controller core, each driving its
        hosts as threads (a host alone in its process in its main thread): each process
        parses and stores its own hosts' samples, so the controller's cores all work and no
        host's per-request samples wait behind more than its process's share. A process per
        host would cost every host a fork of the controller (~0.03 s of CPU each here, the
        copy-on-write faults of its touching the controller's memory) for no more cores."""
        _import_plugins(self.exp)  # once here, not once in every host's process
        count = min(len(self.hosts), os.cpu_count() or 1)
        groups = [self.hosts[i::count] for i in range(count)]
        # The children's garbage collections skip what was there at the fork: a full collection
        # of the ~100,000 objects of virtbench's imports, and the copy-on-write faults of its
        # touching them, cost each process tens of ms of CPU (Python's gc.freeze docs).
        gc.freeze()
        try:
            workers = [ForkedCall(functools.partial(self._hosts_process, group, runs, resume))
                       for group in groups]
        finally:
            gc.unfreeze()
        for group, worker in zip(groups, workers, strict=True):
            worker.listen(functools.partial(self._on_message, group, runs, results))
        try:
            with sigterm_as_interrupt():  # SIGTERM too stops every host as Ctrl-C does
                for worker in workers:
                    worker.wait()  # as long as its hosts' runs; a stop is bounded (below)
        except KeyboardInterrupt:
            for worker in workers:  # each stops as an interrupted run and reports
                worker.interrupt()
            # A process's own hosts get stop_wait_s (see _in_threads); then it has a little
            # longer to report before it is killed with its process group.
            bound = self.stop_wait_s() + KILL_WAIT_S
            ends_at = time.monotonic() + bound
            for group, worker in zip(groups, workers, strict=True):
                if worker.wait(max(0.0, ends_at - time.monotonic())) is None:
                    worker.kill_group()
                    for host in group:
                        if host.name not in results:
                            reason = (f"did not stop within {bound:g} s of the interrupt "
                                      "(its process was killed; its lab may need "
                                      "`virtbench lab clean`)")
                            self.say(host.name, reason)
                            results[host.name] = HostOutcome(host.name, runs[host.name],
                                                             "interrupted", reason)
            raise
        finally:
            for group, worker in zip(groups, workers, strict=True):
                for host in group:
                    if host.name not in results:  # the process died without a word
                        results[host.name] = HostOutcome(
                            host.name, runs[host.name], "failed",
                            f"host process exited {worker.returncode}")

    def _in_threads(self, runs: dict[str, str], resume: bool,
                    results: dict[str, HostOutcome],
                    hosts: Sequence[FleetHost] | None = None) -> None:
        """Each host in a thread of this process (when this process runs other threads, or
        several hosts share a forked process).

        Until a stop, the wait lasts as long as the hosts' runs (each trial has its time limit,
        a run has a finite number of trials). After Ctrl-C or SIGTERM it is bounded: a host
        still running :meth:`stop_wait_s` seconds later is given up with the outcome "did not
        stop within N s" (said on the host's progress line too), and the interrupt goes on.
        """
        # Waited for with events, not Thread.join: a Ctrl-C that interrupts join() marks a
        # thread still running as ended (CPython 3.11's _wait_for_tstate_lock releases the
        # running thread's lock), and the process would then end under a host mid-trial.
        given_up = threading.Lock()  # a host given up for good: its late outcome is dropped

        def drive(host: FleetHost, done: threading.Event) -> None:
            try:
                outcome = self._drive_safely(host, runs[host.name], resume)
                with given_up:
                    results.setdefault(host.name, outcome)
            finally:
                done.set()

        chosen = list(hosts or self.hosts)
        done = [threading.Event() for _ in chosen]
        for host, finished in zip(chosen, done, strict=True):
            threading.Thread(target=drive, args=(host, finished), name=f"fleet-{host.name}",
                             daemon=True).start()
        try:
            with sigterm_as_interrupt():  # SIGTERM too stops every host as Ctrl-C does
                for finished in done:
                    while not finished.wait(0.2):  # short waits: Ctrl-C is seen at once
                        pass
        except KeyboardInterrupt:
            self.stop.set()  # each runner stops after its current trial and cleans up
            bound = self.stop_wait_s()
            ends_at = time.monotonic() + bound
            for finished in done:
                finished.wait(max(0.0, ends_at - time.monotonic()))
            with given_up:
                for host, finished in zip(chosen, done, strict=True):
                    if not finished.is_set() and host.name not in results:
                        reason = (f"did not stop within {bound:g} s of the interrupt (left "
                                  "running; its lab may need `virtbench lab clean`)")
                        self.say(host.name, reason)
                        results[host.name] = HostOutcome(host.name, runs[host.name],
                                                         "interrupted", reason)
            raise

    def stop_wait_s(self) -> float:
        """How long a host may take to stop after Ctrl-C (s): the ``stop_wait_s`` given, else
        the experiment's longest trial time limit (a stop waits for the trial in flight), the
        trial deadline's grace and :data:`STOP_TEARDOWN_S` for the lab's teardown."""
        if self._stop_wait_s is not None:
            return self._stop_wait_s
        return longest_trial_limit_s(self.exp) + GRACE_S + STOP_TEARDOWN_S

    def _hosts_process(self, hosts: list[FleetHost], runs: dict[str, str], resume: bool,
                       send: Send) -> None:
        """In a forked process: drive its hosts, passing messages and outcomes back. A host
        alone runs in the main thread and stops mid-trial on SIGINT, as a single run does;
        hosts sharing the process stop after their current trial."""
        self.say = lambda name, text: send({"say": [name, text]})
        results: dict[str, HostOutcome] = {}
        try:
            if len(hosts) == 1:
                results[hosts[0].name] = self._drive_safely(hosts[0], runs[hosts[0].name],
                                                            resume)
            else:
                with contextlib.suppress(KeyboardInterrupt):  # the outcomes say "interrupted"
                    self._in_threads(runs, resume, results, hosts)
        finally:
            for outcome in results.values():
                send({"outcome": dataclasses.asdict(outcome)})

    def _on_message(self, hosts: list[FleetHost], runs: dict[str, str],
                    results: dict[str, HostOutcome], message: dict[str, Any]) -> None:
        if "say" in message:
            self.say(*message["say"])
        elif "outcome" in message:
            outcome = HostOutcome(**message["outcome"])
            results[outcome.host] = outcome
        elif "error" in message:  # the process failed outside any host's run
            for host in hosts:
                results.setdefault(host.name, HostOutcome(host.name, runs[host.name], "failed",
                                                          message["error"]))

    # ---- internals -------------------------------------------------------------------------
    def _open(self, store: Store, resume: str | None) -> tuple[str, dict[str, str]]:
        if resume is None:
            fleet_id = uuid.uuid4().hex[:12]
            runs = {h.name: uuid.uuid4().hex[:12] for h in self.hosts}
            store.save_state(FLEET_PREFIX + fleet_id, {
                "experiment": self.exp.name, "spec_digest": spec_digest(self.spec_yaml),
                "started_at": time.time(), "virtbench_version": __version__,
                # where each host was reached, for the reader; never a key or a password
                "hosts": {h.name: {"run_id": runs[h.name], "target": h.describe()}
                          for h in self.hosts}})
            return fleet_id, runs
        record = fleet_record(store, resume)
        if record["spec_digest"] != spec_digest(self.spec_yaml):
            raise VirtbenchError(f"fleet run {resume} was started from a different experiment "
                                 "file; resume needs the same file")
        missing = sorted(set(record["hosts"]) - {h.name for h in self.hosts})
        extra = sorted({h.name for h in self.hosts} - set(record["hosts"]))
        if missing or extra:
            raise VirtbenchError(
                f"fleet run {resume} ran on other hosts than the inventory given"
                + (f"; missing: {', '.join(missing)}" if missing else "")
                + (f"; not in that run: {', '.join(extra)}" if extra else ""))
        return resume, {name: h["run_id"] for name, h in record["hosts"].items()}

    def _drive_safely(self, host: FleetHost, run_id: str, resume: bool) -> HostOutcome:
        try:
            return self._drive(host, run_id, resume)
        except BaseException as exc:  # never lose a host's outcome, whatever happened
            return HostOutcome(host.name, run_id, "failed", f"{type(exc).__name__}: {exc}")

    def _drive(self, host: FleetHost, run_id: str, resume: bool) -> HostOutcome:
        store = Store(self.store_location)
        target = connect(host, known_hosts=self.known_hosts, netns=self.netns)
        peers: list[SSHTarget] = []
        try:
            existing = {r.id: r for r in store.runs()}.get(run_id) if resume else None
            if existing is not None and existing.status == "complete":
                return HostOutcome(host.name, run_id, "complete", "already complete")
            if existing is not None and not store.workloads(run_id):
                store.delete_run(run_id)  # a placeholder of a host that never started
                existing = None
            problem = probe(target, host, self.known_hosts)
            if problem is not None:
                self.say(host.name, problem)
                return self._failed(store, host, run_id, existing is not None, problem)
            hosted = dataclasses.replace(self.resolved,
                                         experiment=host_experiment(self.exp, host.name))
            try:  # a run to resume is validated as `run --resume` validates it
                record = (RunRecord.resume(store, run_id, self.spec_yaml, self.spec_path)
                          if existing else RunRecord.new(store, self.spec_yaml, self.spec_path,
                                                         host=host.name, run_id=run_id))
            except VirtbenchError as exc:
                self.say(host.name, f"failed: {exc}")
                return self._failed(store, host, run_id, existing is not None, str(exc))
            runner = Runner(build_plan(hosted), record,
                            progress=_HostProgress(host.name, self.say, self.stop),
                            target=target)
            if self.server is not None and isinstance(runner.lab, CrossHostLab):
                peer = connect(self.server, known_hosts=self.known_hosts, netns=self.netns)
                peers.append(peer)
                problem = probe(peer, self.server, self.known_hosts)
                if problem is not None:
                    return self._failed(store, host, run_id, existing is not None,
                                        f"server host {self.server.name}: {problem}")
                runner.lab.connect_peer(peer, self.server.address)
            try:
                result = runner.run()
            except KeyboardInterrupt:
                return HostOutcome(host.name, run_id, "interrupted", "interrupted")
            except Exception as exc:
                reason = f"{type(exc).__name__}: {exc}" if not isinstance(
                    exc, VirtbenchError) else str(exc)
                self.say(host.name, f"failed: {reason}")
                return self._failed(store, host, run_id, _exists(store, run_id), reason)
            return HostOutcome(host.name, run_id, result.status, result.stop_reason,
                               result.trials, result.failures)
        finally:
            for peer in peers:
                peer.close()
            target.close()
            store.close()

    def _failed(self, store: Store, host: FleetHost, run_id: str, exists: bool,
                reason: str) -> HostOutcome:
        """Record a host's failure in the store (a run with no trials if it never started)."""
        if not exists:
            store.create_run(experiment=self.exp.name, description=self.exp.description,
                             spec_yaml=self.spec_yaml, spec_path=self.spec_path,
                             seed=self.exp.seed, host=host.name, target=host.describe(),
                             baseline=self.exp.baseline_name, version=__version__,
                             run_id=run_id)
        store.set_run_status(run_id, "failed", reason)
        trials = [t for t in store.trials(run_id)]
        return HostOutcome(host.name, run_id, "failed", reason, len(trials),
                           sum(1 for t in trials if t["status"] != "ok"))


def longest_trial_limit_s(exp: Experiment) -> float:
    """The longest time limit of one trial among ``exp``'s workloads (s), as the runner sets
    them: the experiment's ``timeout_s``, else the workload's own."""
    limits = []
    for spec in exp.workloads:
        cls = get_workload(spec.name)
        try:
            limit = spec.timeout_s or cls(cls.Params.model_validate(spec.params)
                                          ).trial_time_limit_s()
        except Exception:  # params the runner will refuse: its class's default limit
            limit = cls.timeout_s
        limits.append(float(limit))
    return max(limits, default=0.0)


def _import_plugins(exp: Experiment) -> None:
    """Import the experiment's workload and lab plugins in the controller, before forking."""
    for spec in exp.workloads:
        get_workload(spec.name)
    get_lab(exp.lab.kind)


def _role_hosts(exp: Experiment, hosts: list[FleetHost]) -> tuple[list[FleetHost], FleetHost]:
    """([the client's host], the server's host) of a cross-host experiment's roles."""
    roles = dict(exp.lab.params.get("roles") or {})
    by_name = {h.name: h for h in hosts}
    unknown = sorted(name for name in roles.values() if name not in by_name)
    if unknown or "server" not in roles or "client" not in roles:
        raise VirtbenchError(f"lab cross-host roles {roles}: "
                             + (f"not in the inventory: {', '.join(unknown)} (hosts: "
                                f"{', '.join(by_name)})" if unknown
                                else "name a server and a client host"))
    if roles["server"] == roles["client"]:
        raise VirtbenchError("lab cross-host: server and client must be different hosts")
    return [by_name[roles["client"]]], by_name[roles["server"]]


def host_experiment(exp: Experiment, host: str) -> Experiment:
    """``exp`` with a seed of the host's own (from the experiment's seed and the host's name):
    each host gets its own randomised order, reproducible from the file and the inventory."""
    digest = hashlib.sha256(f"{exp.seed}:{host}".encode()).hexdigest()
    return exp.model_copy(update={"seed": int(digest[:7], 16)})


def _exists(store: Store, run_id: str) -> bool:
    return any(r.id == run_id for r in store.runs())
