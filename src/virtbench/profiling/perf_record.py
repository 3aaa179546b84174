"""CPU samples with call stacks and counters around one trial, from the host.

For a profiled trial the runner wraps the workload's run in :meth:`Profiler.trial`: before it,
``perf record -e cpu-clock -g`` and ``perf stat`` start (disabled) and are enabled through
their control FIFOs the moment the workload starts, and /proc/stat and /proc/softirqs are read;
after it both are disabled, stopped, /proc read again, and ``perf script`` turns the samples
into folded stacks. What comes back (:class:`Captured`) is added to the trial: the artifacts
``profile.folded`` and ``profile.json``, the ``profile.*`` counters, and a note under the key
``profile``. Nothing here fails a trial: whatever stops the capture (no perf, no permission, a
guest whose QEMU process is not on this host) becomes the note, and the trial's own
measurements are stored as always.

perf runs on the host target (the experiment's), never inside a guest: a libvirt guest is
profiled from the host through its QEMU process's threads; under KVM (its lab's
``GuestMachine`` says so) with ``perf kvm --host --guest`` and copies of the guest's kallsyms
and modules, so that its kernel's frames are named (``guest_symbols.py``). The control FIFOs
are files of this machine, so the host target must be local (an SSH target gets a note, no
profile).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from virtbench.kvm.guest_host import qemu_process, qemu_thread_names
from virtbench.model import (
    FOLDED_MEDIA_TYPE,
    PROFILE_ARTIFACT,
    PROFILE_SUMMARY_ARTIFACT,
    PROFILE_WORKLOAD_ARTIFACT,
    Artifact,
    Measurement,
    Metric,
)
from virtbench.profiling.folded import (
    GUEST_LEAF_FIELDS,
    PERF_SCRIPT_FIELDS,
    fold_perf_script,
    folded_comm,
    guest_leaves,
)
from virtbench.profiling.guest_symbols import (
    GuestSymbols,
    accelerator,
    fetch_guest_symbols,
    no_guest_frames_note,
)
from virtbench.profiling.perf_counters import (
    PERF_STAT_EVENTS,
    ProcSnapshot,
    parse_perf_stat,
    proc_measurements,
    read_snapshot,
)
from virtbench.profiling.profile_metrics import PROFILE_METRICS
from virtbench.services import Services
from virtbench.targets.cgroup import CgroupTarget
from virtbench.targets.libvirt_guest import LibvirtGuestTarget
from virtbench.targets.local import LocalTarget
from virtbench.targets.process import Process
from virtbench.targets.target_contract import Target

__all__ = ["FOLDED_MEDIA_TYPE", "Captured", "ProfileSettings", "Profiler", "ServingDaemons",
           "live_descendants", "perf_error", "record_argv", "script_argvs"]

WORKLOAD_ARTIFACT = PROFILE_WORKLOAD_ARTIFACT
"""The stacks of the workload's processes: those virtbench forked while perf recorded, and
their descendants, and the lab's serving daemons (docs/explain.md, "The workload's samples")."""
NOTE_KEY = "profile"
PERF_PACKAGE = "linux-perf"
START_TIMEOUT_S = 30.0
"""How long perf gets to open its control FIFO and acknowledge ``enable`` (s): system-wide,
it first lists every process's mappings, which takes long on a loaded host."""
STOP_GRACE_S = 60.0
"""How long perf gets to write its data after SIGINT before SIGKILL (s)."""
SCRIPT_TIMEOUT_S = 600.0
"""Time limit of ``perf script`` over one trial's samples (s)."""
SLEEP_BEYOND_LIMIT_S = 120.0
"""perf records for ``sleep (trial limit + this)``: a perf left behind by a killed virtbench
ends on its own."""


@dataclass(frozen=True)
class ProfileSettings:
    """What to record for one workload (the experiment's ``profile:``)."""

    frequency_hz: int = 99
    trials: int | None = None
    """Profiled trials per variant, the first ones (None: every measured trial)."""
    scope: str = "auto"
    """auto (guest for a libvirt guest, else system) | system | cgroup."""


@dataclass
class Captured:
    """What a profiled trial adds to its result."""

    measurements: list[Measurement] = field(default_factory=list)
    artifacts: list[Artifact] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)
    window: tuple[float, float] | None = None
    """The workload's measured section (CLOCK_MONOTONIC seconds), set by the runner from the
    trial's result before the ``with`` body ends: the stacks keep only its samples."""


@dataclass
class _Scope:
    name: str  # system | cgroup | guest
    record_args: list[str]
    stat_args: list[str]
    notes: list[str] = field(default_factory=list)
    pid: int | None = None
    """Scope guest: the guest's QEMU process."""


def live_descendants(pid: int, proc: Path = Path("/proc")) -> set[int]:
    """``pid`` and the processes below it now (its children, theirs...), read from the
    ``children`` files of their threads; a process that ended meanwhile is left out."""
    found: set[int] = set()
    todo = [pid]
    while todo:  # ends: every pid is visited once, and /proc lists finitely many
        current = todo.pop()
        if current in found or current <= 0:
            continue
        try:
            tasks = list((proc / str(current) / "task").iterdir())
        except OSError:
            continue  # ended, or never was
        found.add(current)
        for task in tasks:
            try:
                children = (task / "children").read_text().split()
            except OSError:
                continue
            todo.extend(int(child) for child in children if child.isdigit())
    return found


ServingDaemons = Callable[[], Mapping[str, int]]
"""What the lab's ``serving_daemons`` gives: name → PID of each daemon doing the workload's
work, asked at a trial's start and end (a daemon may be restarted in between)."""


def _scope(settings: ProfileSettings, lab_target: Target | None) -> _Scope:
    """perf's arguments for the scope asked and the lab at hand, with why it differs."""
    events = len(PERF_STAT_EVENTS)
    if isinstance(lab_target, LibvirtGuestTarget) and settings.scope == "auto":
        found = qemu_process(lab_target.domain)
        if found is not None:
            pid = str(found[0])
            return _Scope("guest", ["-p", pid], ["-p", pid], pid=found[0])
        return _Scope("system", ["-a"], ["-a"], [
            f"the QEMU process of guest {lab_target.domain} is not on this host: recorded the "
            "whole host instead"])
    if settings.scope == "cgroup":
        group = lab_target.group if isinstance(lab_target, CgroupTarget) else None
        named = group.perf_event_path() if group is not None else None
        if named is not None:
            return _Scope("cgroup", ["-a", "-G", named], ["-a", "-G", ",".join([named] * events)])
        if group is None or not group.procs_files():
            why = "the lab runs the workload in no cgroup"
        else:
            why = ("this host has no cgroup hierarchy that perf -G can use (no cgroup v2 mount, "
                   "no v1 perf_event mount)")
        return _Scope("system", ["-a"], ["-a"], [f"scope cgroup asked, but {why}: recorded "
                                                 "the whole host instead"])
    return _Scope("system", ["-a"], ["-a"])


_PARANOID = re.compile(r"perf_event_paranoid setting is (-?\d+)")


def _thread_samples(stacks: Mapping[str, int], names: list[str]) -> dict[str, int]:
    """Samples per thread of the guest's QEMU process (the stacks' first frames: perf's comm,
    the thread's name, as folded: ``CPU_0/TCG``), every thread seen at the start included,
    also without samples."""
    samples = dict.fromkeys((folded_comm(n) for n in names), 0)
    for stack, count in stacks.items():
        name = stack.split(";", 1)[0]
        samples[name] = samples.get(name, 0) + count
    return dict(sorted(samples.items()))


def perf_error(stderr: str) -> str:
    """The line of perf's error message that says what went wrong (perf_event_paranoid's
    refusal is a screenful: its first line, and the setting)."""
    lines = [line.strip() for line in stderr.splitlines()
             if line.strip() and line.strip() != "Error:" and not line.startswith("Events ")]
    if not lines:
        return "no message"
    paranoid = _PARANOID.search(stderr)
    if paranoid:
        return (f"{lines[0]} (kernel.perf_event_paranoid is {paranoid[1]}: run as root, or "
                "lower it with sysctl)")
    return " | ".join(lines[:2])


class _Controlled:
    """A perf process started disabled, driven through its control FIFOs."""

    def __init__(self, host: Target, argv: tuple[list[str], list[str]], folder: Path) -> None:
        """``argv``: perf's words up to its subcommand (``record``, ``stat``), then the
        subcommand's options; the control options go between the two."""
        head, tail = argv
        self.name = head[-1]
        self.ctl = folder / f"{self.name}.ctl"
        self.ack = folder / f"{self.name}.ack"
        os.mkfifo(self.ctl, 0o600)
        os.mkfifo(self.ack, 0o600)
        self.process: Process = host.spawn(
            [*head, "-D", "-1", "--control", f"fifo:{self.ctl},{self.ack}", *tail],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:  # perf blocks opening its end of the ack FIFO until this reader is there
            self._ack_fd = os.open(self.ack, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            self.process.kill_group()
            raise
        self._ctl_fd: int | None = None

    def _open_ctl(self, deadline: float) -> int:
        while self._ctl_fd is None:
            try:  # ENXIO until perf has opened its end
                self._ctl_fd = os.open(self.ctl, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                if self.process.poll() is not None:
                    raise _PerfFailed(self._stderr()) from None
                if time.monotonic() > deadline:
                    raise _PerfFailed(f"perf {self.name} did not start within "
                                      f"{START_TIMEOUT_S:g} s") from None
                time.sleep(0.01)
        return self._ctl_fd

    def command(self, word: str, timeout: float = START_TIMEOUT_S) -> None:
        """Send ``enable``/``disable`` and wait for perf's ``ack``."""
        deadline = time.monotonic() + timeout
        os.write(self._open_ctl(deadline), f"{word}\n".encode())
        answer = b""
        while b"ack" not in answer:
            left = deadline - time.monotonic()
            if left <= 0 or self.process.poll() is not None:
                raise _PerfFailed(self._stderr() if self.process.poll() is not None else
                                  f"perf {self.name} did not acknowledge {word}")
            ready, _, _ = select.select([self._ack_fd], [], [], min(left, 0.5))
            if ready:
                answer += os.read(self._ack_fd, 64)

    def _stderr(self) -> str:
        finished = self.process.wait(STOP_GRACE_S)
        return f"perf {self.name} exited {finished.returncode}: " + perf_error(
            (finished.stderr or b"").decode(errors="replace"))

    def stop(self) -> None:
        """SIGINT (perf writes what it has), SIGKILL after the grace; FIFOs closed."""
        self.process.stop(STOP_GRACE_S, first=signal.SIGINT)
        with contextlib.suppress(Exception):
            self.process.wait(STOP_GRACE_S)  # read its pipes to the end
        for fd in (self._ack_fd, self._ctl_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)


def record_argv(perf: str, frequency_hz: int, scope_args: list[str], data: Path,
                sleep: list[str], guest: GuestSymbols | None) -> tuple[list[str], list[str]]:
    """perf record's command line (before and after its subcommand): ``perf kvm --host
    --guest`` with the guest's symbols when they are at hand (samples in guest mode kept and
    named), else ``perf record``."""
    options = ["-e", "cpu-clock", "-F", str(frequency_hz), "-g",
               # sample times on the clock a probe's time.monotonic() reads (its window)
               "-k", "CLOCK_MONOTONIC", "--no-buildid", "--no-buildid-cache", *scope_args]
    if guest is None:
        return [perf, "record"], [*options, "-o", str(data), *sleep]
    # perf kvm takes the output file itself (its default is perf.data.kvm)
    return ([perf, "kvm", "--host", "--guest", *guest.perf_options(), "-o", str(data),
             "record"], [*options, *sleep])


def script_argvs(perf: str, data: Path, guest: GuestSymbols | None) -> list[list[str]]:
    """perf script's passes over a recording: the samples with their call graphs and the task
    events; with the guest's symbols, a second pass with each sample's own frame
    (``folded.GUEST_LEAF_FIELDS``: perf prints no call chain for a guest-mode sample)."""
    symbols = guest.perf_options() if guest is not None else []
    passes = [[perf, "script", "-i", str(data), *symbols, "-F", PERF_SCRIPT_FIELDS,
               "--show-task-events"]]
    if guest is not None:
        passes.append([perf, "script", "-i", str(data), *symbols, "-G", "-F",
                       GUEST_LEAF_FIELDS])
    return passes


class _PerfFailed(Exception):
    """perf could not record; the message becomes the trial's note."""


class Profiler:
    """Which trials to profile, and the capture around each of them."""

    def __init__(self, host: Target, settings: Mapping[str, ProfileSettings],
                 time_limits: Mapping[str, float]) -> None:
        self.host = host
        self.settings = dict(settings)
        self.time_limits = time_limits

    def metrics(self, workload_id: str) -> list[Metric]:
        """The counters a profiled workload's trials may add (none when not profiled)."""
        return list(PROFILE_METRICS) if workload_id in self.settings else []

    def wanted(self, workload_id: str, repetition: int, warmup: bool) -> bool:
        """A measured trial of a profiled workload within its ``trials`` per variant."""
        settings = self.settings.get(workload_id)
        if settings is None or warmup:
            return False
        return settings.trials is None or repetition < settings.trials

    @contextlib.contextmanager
    def trial(self, workload_id: str, repetition: int, warmup: bool,
              lab_target: Target | None,
              serving: ServingDaemons | None = None,
              services: Services | None = None) -> Iterator[Captured]:
        """Record around the ``with`` body; the yielded :class:`Captured` is filled on exit
        (empty for a trial not profiled). ``serving``: the lab's daemons, whose samples count
        as the workload's (docs/explain.md, "The workload's samples"); ``services``: the
        lab's, where a guest's accelerator is found (``GuestMachine``: its kernel's frames
        are recorded under KVM only)."""
        captured = Captured()
        if not self.wanted(workload_id, repetition, warmup):
            yield captured
            return
        settings = self.settings[workload_id]
        session = _Session(self, settings, workload_id, repetition, lab_target, serving,
                           services)
        try:
            session.start()
            started = time.monotonic()
            yield captured
            try:
                session.finish(time.monotonic() - started, captured)
            except Exception as exc:  # a profile is an extra: never the trial's failure
                captured.notes[NOTE_KEY] = f"not profiled: {type(exc).__name__}: {exc}"
        finally:
            session.close()


class _Session:
    """One trial's recording: start, finish into a Captured, close (always)."""

    def __init__(self, profiler: Profiler, settings: ProfileSettings, workload_id: str,
                 repetition: int, lab_target: Target | None,
                 serving: ServingDaemons | None = None,
                 services: Services | None = None) -> None:
        self.host = profiler.host
        self.settings = settings
        self.limit_s = profiler.time_limits.get(workload_id, 3600.0) + SLEEP_BEYOND_LIMIT_S
        self.folder: Path | None = None
        """This trial's perf files and control FIFOs (a temporary folder of this machine)."""
        self.lab_target = lab_target
        self.notes: list[str] = []
        self.failure: str | None = None
        self.scope: _Scope | None = None
        self.record: _Controlled | None = None
        self.stat: _Controlled | None = None
        self.before: ProcSnapshot | None = None
        self.perf = "perf"
        self._perf_pids: set[int] = set()
        self._serving = serving
        self.serving: dict[str, set[int]] = {}
        """Each serving daemon's name → its processes seen at the trial's start or end."""
        self.qemu_threads: list[str] = []
        """Scope guest: the QEMU process's thread names at the trial's start."""
        self.services = services
        self.guest: GuestSymbols | None = None
        """Scope guest under KVM: the copies of the guest's kallsyms and modules."""
        self.accelerator: str | None = None
        """Scope guest: the guest's accelerator as its lab publishes it (None: not said)."""

    def _find_serving(self) -> None:
        """Add the lab's daemons and what runs below them now (never the trial's failure)."""
        if self._serving is None:
            return
        try:
            daemons = dict(self._serving())
            for name, pid in daemons.items():
                if isinstance(pid, bool) or not isinstance(pid, int):
                    raise TypeError(f"the PID of {str(name)[:64]!r} is not a number: {pid!r}")
                self.serving.setdefault(str(name)[:64], set()).update(live_descendants(pid))
        except Exception as exc:  # a plugin's bug: a note, never the trial's failure
            self.notes.append(f"the lab's daemons not found: {type(exc).__name__}: {exc}")
            self._serving = None

    def _snapshot(self) -> ProcSnapshot:
        if isinstance(self.host, LocalTarget):
            # read here, not by `cat`: a process started in the window would count as the
            # workload's (docs/explain.md, "The workload's samples")
            return read_snapshot(Path("/proc/stat").read_text(errors="replace"),
                                 Path("/proc/softirqs").read_text(errors="replace"))
        gathered = self.host.gather(["/proc/stat", "/proc/softirqs"], [], [], timeout=60)
        return read_snapshot(gathered.files[0], gathered.files[1])

    def start(self) -> None:
        self._find_serving()
        try:
            self._start_perf()
        except Exception as exc:  # never the trial's failure
            self.failure = f"not profiled: {type(exc).__name__}: {exc}"
            self._stop_perf()
        try:  # last, so that the deltas cover the workload's run and little else
            self.before = self._snapshot()
        except Exception as exc:  # counters are extras: never the trial's failure
            self.notes.append(f"/proc counters not read: {type(exc).__name__}: {exc}")

    def _start_perf(self) -> None:
        if not isinstance(self.host, LocalTarget):
            self.failure = (f"not profiled: perf is driven through control FIFOs on this "
                            f"machine, and the host target {self.host.describe()} is not local")
            return
        perf = self.host.which("perf")
        if perf is None:
            self.failure = (f"not profiled: perf not found on {self.host.describe()}; install "
                            f"the Debian package {PERF_PACKAGE}")
            return
        self.perf = perf
        self.scope = _scope(self.settings, self.lab_target)
        self.notes += self.scope.notes
        self.qemu_threads = qemu_thread_names(self.scope.pid) if self.scope.pid else []
        try:
            self.folder = folder = Path(tempfile.mkdtemp(prefix="vbprof-"))
            if self.scope.name == "guest":
                self.guest = self._guest_symbols(folder)
            sleep = ["--", "sleep", f"{self.limit_s:.0f}"]
            self.record = _Controlled(self.host, record_argv(
                perf, self.settings.frequency_hz, self.scope.record_args, folder / "perf.data",
                sleep, self.guest), folder)
            self.stat = _Controlled(self.host, ([perf, "stat"], [
                "-x,", "-e", ",".join(PERF_STAT_EVENTS), *self.scope.stat_args,
                "-o", str(folder / "stat.txt"), *sleep]), folder)
            self._perf_pids = {c.process.pid for c in (self.record, self.stat)}
            self.record.command("enable")
            self.stat.command("enable")
        except (_PerfFailed, OSError) as exc:
            self.failure = f"not profiled: {exc}"
            self._stop_perf()

    def _guest_symbols(self, folder: Path) -> GuestSymbols | None:
        """The guest kernel's symbols when the guest runs under KVM (copied through its
        target before perf starts), else None with a note saying why there are none."""
        assert isinstance(self.lab_target, LibvirtGuestTarget)
        self.accelerator = accelerator(self.services, self.lab_target.domain)
        if self.accelerator != "kvm":
            self.notes.append(no_guest_frames_note(self.accelerator))
            return None
        try:
            copies = fetch_guest_symbols(self.lab_target, folder)
        except Exception as exc:  # never the trial's failure: recorded without them
            self.notes.append(f"guest kernel frames not recorded: {exc}; QEMU's process "
                              "recorded without the guest's symbols")
            return None
        self.notes += copies.notes
        return copies

    def _stop_perf(self) -> None:
        for controlled in (self.record, self.stat):
            if controlled is not None:
                with contextlib.suppress(Exception):
                    controlled.stop()
        self.record = self.stat = None

    def finish(self, duration_s: float, captured: Captured) -> None:
        """Stop recording and fill ``captured``; a problem becomes a note."""
        if self.before is not None:
            with contextlib.suppress(Exception):
                captured.measurements += proc_measurements(self.before, self._snapshot())
        recorded = self.record is not None
        self._find_serving()
        try:
            for controlled in (self.stat, self.record):
                if controlled is not None:
                    controlled.command("disable")
        except (_PerfFailed, OSError) as exc:
            self.failure, recorded = f"not profiled: {exc}", False
        self._stop_perf()
        if recorded:
            try:
                self._collect(duration_s, captured)
            except Exception as exc:
                self.failure = f"not profiled: {type(exc).__name__}: {exc}"
        if self.failure:
            captured.notes[NOTE_KEY] = "; ".join([self.failure, *self.notes])

    def _collect(self, duration_s: float, captured: Captured) -> None:
        assert self.scope is not None and self.folder is not None
        stat_text = (self.folder / "stat.txt").read_text(errors="replace")
        counters, stat_notes = parse_perf_stat(stat_text)
        captured.measurements += counters
        outputs = [self._script(argv) for argv
                   in script_argvs(self.perf, self.folder / "perf.data", self.guest)]
        window = self._window(captured.window)
        leaves = guest_leaves(outputs[1].splitlines()) if len(outputs) > 1 else None
        folded = fold_perf_script(outputs[0].splitlines(), window, leaves)
        if self.guest is not None:
            self.notes.append(f"guest kernel frames: perf kvm with the guest's /proc/kallsyms "
                              f"({self.guest.symbols} symbols) and /proc/modules; "
                              f"{folded.guest_samples} samples in guest mode")
        if self.serving and self.scope.name != "guest":
            self.notes.append("the lab's daemons count as the workload's: " + ", ".join(
                f"{name} ({len(pids)} process{'es' if len(pids) != 1 else ''})"
                for name, pids in sorted(self.serving.items())))
        notes = [*self.notes, *stat_notes]
        if window is not None:
            notes.append(f"stacks of the workload's measured section only "
                         f"({window[1] - window[0]:.3f} s of the trial; {folded.outside_window} "
                         "samples before or after it left out); counters cover the trial")
        if folded.samples == 0:
            notes.append("no samples: the trial was shorter than one sampling period, or "
                         "perf saw none of its CPUs")
        if folded.unresolved_frames:
            top = ", ".join(f"{dso} {count}" for dso, count
                            in folded.unresolved_by_dso.most_common(5))
            notes.append(f"{folded.unresolved_frames} of {folded.frames} frames unresolved "
                         f"({folded.unresolved_frames_pct:.1f} %); by module: {top}")
        summary: dict[str, object] = {
            "frequency_hz": self.settings.frequency_hz, "duration_s": round(duration_s, 6),
            "samples": folded.samples, "scope": self.scope.name,
            "window": "measured section" if window is not None else "trial",
            "unresolved_frames_pct": round(folded.unresolved_frames_pct, 2), "notes": notes}
        artifacts = [Artifact(PROFILE_ARTIFACT, folded.text().encode(), FOLDED_MEDIA_TYPE)]
        if self.scope.name == "guest":
            # every sample is the guest's QEMU process: explain counts them all as the workload's
            summary["workload_comms"] = sorted({stack.split(";", 1)[0]
                                                for stack in folded.stacks})
            summary["qemu_threads"] = _thread_samples(folded.stacks, self.qemu_threads)
            summary["accelerator"] = self.accelerator or "unknown"
            summary["guest_mode_samples"] = folded.guest_samples
        else:
            serving = set().union(*self.serving.values())
            workload = folded.workload(os.getpid(), exclude=self._perf_pids, serving=serving)
            if self.serving:
                summary["serving_daemons"] = {name: sorted(pids)
                                              for name, pids in sorted(self.serving.items())}
            if workload.pids:
                summary["workload_comms"] = sorted(workload.comms)
                summary["workload_samples"] = workload.samples
                artifacts.append(Artifact(WORKLOAD_ARTIFACT, workload.text().encode(),
                                          FOLDED_MEDIA_TYPE))
            else:
                notes.append("the workload started no process in the recorded window: which "
                             "samples are its own is unknown (explain counts every sample)")
        artifacts.append(Artifact(PROFILE_SUMMARY_ARTIFACT,
                                  json.dumps(summary, sort_keys=True).encode(),
                                  "application/json"))
        captured.artifacts += artifacts
        captured.notes[NOTE_KEY] = "; ".join([
            f"profiled: scope {self.scope.name}, {self.settings.frequency_hz} Hz, "
            f"{folded.samples} samples, {folded.unresolved_frames_pct:.0f} % of frames "
            "unresolved", *self.notes])

    def _script(self, argv: list[str]) -> str:
        script = self.host.run(argv, timeout=SCRIPT_TIMEOUT_S, check=False)
        if script.returncode != 0:
            tail = script.stderr.strip().splitlines()[-1:] or [f"exit {script.returncode}"]
            raise _PerfFailed(f"perf script: {tail[0]}")
        return script.stdout

    def _window(self, window: tuple[float, float] | None) -> tuple[float, float] | None:
        """The measured section to keep, when its clock is this machine's: the trial ran here
        (not in a guest or over SSH, whose clocks perf's samples are not on)."""
        if window is None or not (self.lab_target is None
                                  or isinstance(self.lab_target, LocalTarget)):
            return None
        start, end = window
        return (start, end) if end >= start else None

    def close(self) -> None:
        """Stop what still runs and remove the trial's perf files (also after Ctrl-C)."""
        self._stop_perf()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
