"""The capture's decisions without perf: which trials, which scope, what a failure says."""

from __future__ import annotations

from pathlib import Path

import pytest

from virtbench.kvm.guest_host import qemu_process, qemu_thread_names
from virtbench.profiling.guest_symbols import GuestSymbols
from virtbench.profiling.perf_record import (
    Profiler,
    ProfileSettings,
    _scope,
    _Session,
    _thread_samples,
    live_descendants,
    perf_error,
    record_argv,
    script_argvs,
)
from virtbench.services import GuestMachine, Services
from virtbench.targets.cgroup import CgroupTarget
from virtbench.targets.fake import FakeTarget
from virtbench.targets.libvirt_guest import LibvirtGuestTarget
from virtbench.targets.local import LocalTarget

DATA = Path(__file__).resolve().parents[2] / "data" / "perf"


def test_trials_per_variant_are_the_first_measured_ones() -> None:
    profiler = Profiler(FakeTarget(), {"a": ProfileSettings(trials=2), "b": ProfileSettings()},
                        {})
    assert [r for r in range(5) if profiler.wanted("a", r, warmup=False)] == [0, 1]
    assert all(profiler.wanted("b", r, warmup=False) for r in range(5))
    assert not profiler.wanted("b", -1, warmup=True)  # warm-ups are not profiled
    assert not profiler.wanted("c", 0, warmup=False)  # no profile: asked
    assert profiler.metrics("c") == [] and len(profiler.metrics("a")) == 11


def test_a_host_that_is_not_this_machine_gets_a_note_and_the_proc_counters(
        no_processes: None) -> None:
    stat, softirqs = (DATA / "proc-stat-before.txt").read_text(), (
        DATA / "proc-softirqs-before.txt").read_text()
    host = FakeTarget().add("cat", "--", "/proc/stat", stdout=stat).add(
        "cat", "--", "/proc/softirqs", stdout=softirqs)
    profiler = Profiler(host, {"w": ProfileSettings()}, {"w": 60.0})
    with profiler.trial("w", 0, False, None) as captured:
        pass
    assert captured.artifacts == []
    assert captured.notes["profile"].startswith("not profiled: perf is driven through control "
                                                "FIFOs on this machine, and the host target "
                                                "fake is not local")
    values = {m.metric: m.value for m in captured.measurements}
    assert values["profile.softirq_block"] == 0.0 and values["profile.interrupts"] == 0.0
    assert not any(call.kind == "spawn" for call in host.calls)


def test_an_unprofiled_trial_captures_nothing(no_processes: None) -> None:
    host = FakeTarget()
    with Profiler(host, {}, {}).trial("w", 0, False, None) as captured:
        pass
    assert (captured.measurements, captured.artifacts, captured.notes) == ([], [], {})
    assert host.calls == []


def test_perf_event_paranoid_refusal_is_said_in_one_line() -> None:
    message = perf_error((DATA / "perf-stat-paranoid-stderr.txt").read_text())
    assert message == ("Access to performance monitoring and observability operations is "
                       "limited. (kernel.perf_event_paranoid is 2: run as root, or lower it "
                       "with sysctl)")
    assert perf_error("") == "no message"


class _Group:
    def __init__(self, files: list[Path], perf_path: str | None = None) -> None:
        self.files = files
        self.perf_path = perf_path

    @property
    def name(self) -> str:
        return "vbtest"

    def procs_files(self) -> list[Path]:
        return self.files

    def perf_event_path(self) -> str | None:
        return self.perf_path


def test_scope_cgroup_names_the_labs_group_as_perf_names_it(tmp_path: Path) -> None:
    target = CgroupTarget(LocalTarget(), _Group([tmp_path / "vbx" / "w" / "cgroup.procs"],
                                                "vbx/w"))
    scope = _scope(ProfileSettings(scope="cgroup"), target)
    assert (scope.name, scope.record_args) == ("cgroup", ["-a", "-G", "vbx/w"])
    assert scope.stat_args == ["-a", "-G", ",".join(["vbx/w"] * 5)]  # one per event


def test_scope_cgroup_without_a_perf_event_hierarchy_records_the_host_and_says_why(
        tmp_path: Path) -> None:
    target = CgroupTarget(LocalTarget(), _Group([tmp_path / "cpu" / "vbx" / "cgroup.procs",
                                                 tmp_path / "memory" / "vbx" / "cgroup.procs"]))
    scope = _scope(ProfileSettings(scope="cgroup"), target)
    assert (scope.name, scope.record_args) == ("system", ["-a"])
    assert scope.notes == ["scope cgroup asked, but this host has no cgroup hierarchy that "
                           "perf -G can use (no cgroup v2 mount, no v1 perf_event mount): "
                           "recorded the whole host instead"]


def test_scope_cgroup_without_a_group_records_the_host_and_says_why() -> None:
    scope = _scope(ProfileSettings(scope="cgroup"), LocalTarget())
    assert (scope.name, scope.record_args) == ("system", ["-a"])
    assert scope.notes == ["scope cgroup asked, but the lab runs the workload in no cgroup: "
                           "recorded the whole host instead"]
    assert _scope(ProfileSettings(), LocalTarget()).name == "system"


def test_a_guest_whose_qemu_is_elsewhere_records_the_host_with_a_note() -> None:
    guest = LibvirtGuestTarget(None, "vbtest-no-such-domain-xyz")
    scope = _scope(ProfileSettings(), guest)
    assert scope.name == "system"
    assert "QEMU process of guest vbtest-no-such-domain-xyz is not on this host" in scope.notes[0]


def test_the_qemu_process_of_a_domain_is_found_by_its_name(tmp_path: Path) -> None:
    for pid, argv in ((10, [b"bash"]),
                      (20, [b"/usr/bin/qemu-system-x86_64", b"-name",
                            b"guest=vbguest,debug-threads=on", b"-m", b"256"]),
                      (30, [b"/usr/bin/qemu-system-x86_64", b"-name", b"guest=other"])):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "cmdline").write_bytes(b"\0".join(argv) + b"\0")
    (tmp_path / "self").mkdir()
    found = qemu_process("vbguest", tmp_path)
    assert found is not None and found[0] == 20
    assert found[1][-2:] == ["-m", "256"]
    assert qemu_process("vbgues", tmp_path) is None
    assert qemu_process("guest=vbguest", tmp_path) is None


def test_a_guests_qemu_threads_are_named_as_qemu_names_them_with_their_samples(
        tmp_path: Path) -> None:
    for tid, name in ((20, "qemu-system-x86"), (21, "CPU 0/TCG"), (22, "IO iothread1")):
        (tmp_path / "20" / "task" / str(tid)).mkdir(parents=True)
        (tmp_path / "20" / "task" / str(tid) / "comm").write_text(name + "\n")
    names = qemu_thread_names(20, tmp_path)
    assert names == ["CPU 0/TCG", "IO iothread1", "qemu-system-x86"]
    assert qemu_thread_names(99, tmp_path) == []  # gone
    stacks = {"CPU_0/TCG;main;cpu_exec": 5, "CPU_0/TCG;main;tb_gen_code": 2, "worker;x": 1}
    # every thread seen at the start, with no samples too; one that started later as well
    assert _thread_samples(stacks, names) == {"CPU_0/TCG": 7, "IO_iothread1": 0,
                                              "qemu-system-x86": 0, "worker": 1}


def test_a_daemons_processes_are_read_from_its_threads_children_files(tmp_path: Path) -> None:
    def task(pid: int, tid: int, children: str) -> None:
        (tmp_path / str(pid) / "task" / str(tid)).mkdir(parents=True)
        (tmp_path / str(pid) / "task" / str(tid) / "children").write_text(children)

    task(100, 100, "101 102 ")  # varnishd's manager: its child, and one that ended
    task(100, 105, "103")  # a process forked by another thread of it
    task(101, 101, "")
    task(103, 103, "104 100")  # 104 ended meanwhile; a loop back is visited once
    assert live_descendants(100, tmp_path) == {100, 101, 103}
    assert live_descendants(102, tmp_path) == set()  # ended before it was asked


@pytest.mark.parametrize("scope", ["auto", "system"])
def test_scope_system_and_auto_on_the_host(scope: str) -> None:
    assert _scope(ProfileSettings(scope=scope), None).record_args == ["-a"]


def _session(lab_target: object) -> _Session:
    profiler = Profiler(LocalTarget(), {"w": ProfileSettings()}, {"w": 60.0})
    return _Session(profiler, ProfileSettings(), "w", 0, lab_target)  # type: ignore[arg-type]


def test_a_window_is_kept_only_for_a_trial_on_this_machines_clock() -> None:
    window = (100.0, 101.5)
    assert _session(None)._window(window) == window  # the experiment's (local) target
    assert _session(LocalTarget())._window(window) == window
    assert _session(LocalTarget())._window(None) is None
    assert _session(LocalTarget())._window((5.0, 4.0)) is None  # an end before its start
    # a guest's or an SSH host's monotonic clock is not the one perf's samples are on
    assert _session(LibvirtGuestTarget(None, "vbtest-domain"))._window(window) is None
    assert _session(FakeTarget())._window(window) is None


def test_a_labs_bad_daemon_list_is_a_note_not_a_failure() -> None:
    def broken() -> dict[str, int]:
        raise RuntimeError("manifest gone")

    for serving, said in ((broken, "RuntimeError: manifest gone"),
                          (lambda: {"varnishd": "12"}, "TypeError: the PID of 'varnishd' is not"),
                          (lambda: ["not", "a", "mapping"], "ValueError")):
        profiler = Profiler(LocalTarget(), {"w": ProfileSettings()}, {"w": 60.0})
        session = _Session(profiler, ProfileSettings(), "w", 0, None, serving)  # type: ignore[arg-type]
        session._find_serving()
        assert session.serving == {} and said in session.notes[0], session.notes
        session._find_serving()  # asked once: the rest of the trial goes without
        assert len(session.notes) == 1


def test_the_kvm_recording_keeps_guest_samples_and_names_them_from_the_copies(
        tmp_path: Path) -> None:
    copies = GuestSymbols(tmp_path / "guest.kallsyms", tmp_path / "guest.modules", 4)
    data, sleep = tmp_path / "perf.data", ["--", "sleep", "180"]
    head, tail = record_argv("/usr/bin/perf", 99, ["-p", "42"], data, sleep, copies)
    # perf kvm's own options before its subcommand (the output file among them); the control
    # options go between head and tail
    assert head == ["/usr/bin/perf", "kvm", "--host", "--guest",
                    f"--guestkallsyms={tmp_path}/guest.kallsyms",
                    f"--guestmodules={tmp_path}/guest.modules", "-o", str(data), "record"]
    assert tail == ["-e", "cpu-clock", "-F", "99", "-g", "-k", "CLOCK_MONOTONIC",
                    "--no-buildid", "--no-buildid-cache", "-p", "42", *sleep]
    plain_head, plain_tail = record_argv("/usr/bin/perf", 99, ["-p", "42"], data, sleep, None)
    assert plain_head == ["/usr/bin/perf", "record"]
    assert plain_tail == [*tail[:-3], "-o", str(data), *sleep]
    first, second = script_argvs("/usr/bin/perf", data, copies)
    assert first == ["/usr/bin/perf", "script", "-i", str(data), *copies.perf_options(),
                     "-F", "comm,pid,tid,time,event,ip,sym,dso", "--show-task-events"]
    assert second == ["/usr/bin/perf", "script", "-i", str(data), *copies.perf_options(),
                      "-G", "-F", "comm,pid,tid,time,ip,sym,dso"]
    assert script_argvs("/usr/bin/perf", data, None) == [[
        "/usr/bin/perf", "script", "-i", str(data), "-F", "comm,pid,tid,time,event,ip,sym,dso",
        "--show-task-events"]]


def test_a_tcg_guest_is_recorded_without_its_symbols_and_the_note_says_why(
        tmp_path: Path) -> None:
    guest = LibvirtGuestTarget(None, "vbtest-domain")
    profiler = Profiler(LocalTarget(), {"w": ProfileSettings()}, {"w": 60.0})
    for virt_type, said in (("qemu", "the guest runs under qemu (TCG)"),
                            (None, "the lab does not say which accelerator")):
        items = () if virt_type is None else (GuestMachine("vbtest-domain", virt_type),)
        session = _Session(profiler, ProfileSettings(), "w", 0, guest, None,
                           Services("guest", items))
        assert session._guest_symbols(tmp_path) is None  # nothing asked of the guest
        assert session.notes[0].startswith("guest kernel frames need KVM: ") and \
            said in session.notes[0], session.notes
        assert session.accelerator == virt_type
