"""Profiles captured for real: perf record and perf stat around cpu.crc32c trials, stored as
folded stacks and profile.* samples; a host without perf, or whose perf is refused, keeps every
measurement and says why in the trial's note."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from virtbench.cli.root import app
from virtbench.runner import Runner, RunRecord, build_plan
from virtbench.services import GuestMachine, Services
from virtbench.spec import parse_experiment
from virtbench.store import Store
from virtbench.targets.libvirt_guest import LibvirtGuestTarget
from virtbench.targets.local import LocalTarget
from virtbench.targets.target_contract import ProcResult

# A bound for a hang, not a speed: a few short trials on a loaded 2-core machine.
pytestmark = [pytest.mark.lab, pytest.mark.timeout(600)]

if os.geteuid() != 0:
    pytest.skip("system-wide perf needs root", allow_module_level=True)

DATA = Path(__file__).resolve().parents[2] / "data" / "perf"
FOLDED_LINE = re.compile(r"^[^ ;]+(;[^ ;]+)* [1-9][0-9]*$")

# The software path (no SSE4.2): the checksum runs in crc32c's _crc32c_sw_slicing_by_8, long
# enough (tens of ms per checksum) for a 99 Hz sampler to land in it many times.
SPEC = """\
name: vbprof-crc32c
seed: 5
variants:
  - {{name: software, knobs: {{cpu_features: []}}}}
workloads:
  - name: cpu.crc32c
    params: {{size_mib: 32, loops: 8}}
{profile}repetitions: 3
warmup: 1
"""


def _profile_dirs() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("vbprof-*")}


def _trials(store: Store) -> list[dict[str, Any]]:  # a trial row, as Store.trials gives it
    return [t for t in store.trials(store.run("latest").id) if not t["warmup"]]


def test_run_profile_stores_folded_stacks_and_counters(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # A temporary folder of this test's own: the suite's other lines profile meanwhile, and
    # their vbprof- folders in the shared one are theirs to remove.
    own_tmp = tmp_path / "tmp"
    own_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(own_tmp))
    before = _profile_dirs()
    assert before == set()
    spec = tmp_path / "exp.yaml"
    spec.write_text(SPEC.format(profile=""))  # no profile: in the file; --profile asks for it
    result = CliRunner().invoke(app, ["run", str(spec), "--store", str(tmp_path / "s.db"),
                                      "--quiet", "--profile"],
                                env={"XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert result.exit_code == 0, result.output
    store = Store(str(tmp_path / "s.db"))
    run_id = store.run("latest").id
    trials = _trials(store)
    assert len(trials) == 3
    assert all(str(t["notes"]["profile"]).startswith("profiled: scope system, 99 Hz")
               for t in trials), [t["notes"] for t in trials]
    warmup = [t for t in store.trials(run_id) if t["warmup"]]
    assert "profile" not in warmup[0]["notes"]  # warm-ups are not profiled

    artifacts = store.artifacts(run_id)
    by_trial: dict[int, dict[str, dict[str, Any]]] = {}
    for artifact in (a for a in artifacts if a["name"].startswith("profile.")):
        by_trial.setdefault(artifact["trial_id"], {})[artifact["name"]] = artifact
    assert sorted(by_trial) == sorted(t["id"] for t in trials)
    crc_frames = workload_crc = 0
    for names in by_trial.values():
        folded, summary = names["profile.folded"], names["profile.json"]
        assert folded["media_type"] == "text/x-folded-stacks"
        assert summary["media_type"] == "application/json"
        lines = bytes(folded["content"]).decode().splitlines()
        assert lines and all(FOLDED_LINE.match(line) for line in lines), lines[:5]
        crc_frames += sum(int(line.rsplit(" ", 1)[1]) for line in lines
                          if "crc32c" in line.rsplit(" ", 1)[0])
        info = json.loads(bytes(summary["content"]))
        assert set(info) == {"frequency_hz", "duration_s", "samples", "scope",
                             "unresolved_frames_pct", "notes", "workload_comms",
                             "workload_samples", "window"}
        assert (info["frequency_hz"], info["scope"]) == (99, "system")
        # the probe's timed loop, on this machine: the stacks are that section's
        assert info["window"] == "measured section"
        assert any(n.startswith("stacks of the workload's measured section only")
                   for n in info["notes"]), info["notes"]
        assert info["samples"] == sum(int(line.rsplit(" ", 1)[1]) for line in lines) > 0
        assert 0 <= info["unresolved_frames_pct"] <= 100
        # the workload's stacks: those of the probe process the trial started, a part of all
        workload = bytes(names["profile.workload.folded"]["content"]).decode().splitlines()
        assert names["profile.workload.folded"]["media_type"] == "text/x-folded-stacks"
        whole = {line.rsplit(" ", 1)[0]: int(line.rsplit(" ", 1)[1]) for line in lines}
        assert all(whole.get(w.rsplit(" ", 1)[0], 0) >= int(w.rsplit(" ", 1)[1])
                   for w in workload)
        assert info["workload_samples"] == sum(int(w.rsplit(" ", 1)[1]) for w in workload) > 0
        # A part of all (equal when nothing else ran on any CPU in the window: seen once, 48
        # of 48 samples); the idle task is never the workload's (below).
        assert info["workload_samples"] <= info["samples"]
        assert {w.split(";", 1)[0] for w in workload} == set(info["workload_comms"])
        assert "swapper" not in info["workload_comms"]
        workload_crc += sum(int(w.rsplit(" ", 1)[1]) for w in workload
                            if "crc32c" in w.rsplit(" ", 1)[0])
    assert crc_frames > 0, "no sample landed in a crc32c frame"
    assert workload_crc > 0, "no sample of the workload's processes in a crc32c frame"

    samples = store.samples(run_id)
    counters = {s.metric for s in samples if s.metric.startswith("profile.")}
    assert counters == {
        "profile.task_clock_ms", "profile.context_switches", "profile.cpu_migrations",
        "profile.page_faults", "profile.major_faults", "profile.softirq_net_rx",
        "profile.softirq_net_tx", "profile.softirq_block", "profile.interrupts",
        "profile.steal_pct", "profile.iowait_pct"}
    for metric in counters:  # one scalar sample per measured trial, as any metric
        rows = [s for s in samples if s.metric == metric]
        assert len(rows) == 3 and all(s.t is None and s.value is not None for s in rows)
    assert len([s for s in samples if s.metric == "time_per_checksum_s"]) == 3
    declared = store.metrics(run_id)
    assert declared[("cpu.crc32c", "profile.task_clock_ms")].unit == "ms"
    assert declared[("cpu.crc32c", "profile.softirq_net_rx")].description
    assert _profile_dirs() == before  # each trial's perf files were removed


class _NoPerf(LocalTarget):
    """This machine with perf missing from the PATH."""

    def which(self, binary: str) -> str | None:
        return None if binary == "perf" else super().which(binary)


class _RefusedPerf(LocalTarget):
    """This machine with a perf that fails as an unprivileged user's does under
    kernel.perf_event_paranoid = 2 (its real message, tests/data/perf)."""

    def __init__(self, folder: Path) -> None:
        self.perf = folder / "perf"
        self.perf.write_text(f"#!/bin/sh\ncat {DATA / 'perf-stat-paranoid-stderr.txt'} >&2\n"
                             "exit 255\n")
        self.perf.chmod(0o755)

    def which(self, binary: str) -> str | None:
        return str(self.perf) if binary == "perf" else super().which(binary)


@pytest.mark.parametrize("kind", ["missing", "refused"])
def test_a_host_that_cannot_profile_keeps_the_results_with_a_note(
        tmp_path: Path, kind: str) -> None:
    text = SPEC.format(profile="    profile: {trials: 2}\n").replace("size_mib: 32", "size_mib: 1")
    store = Store(str(tmp_path / "s.db"))
    target = _NoPerf() if kind == "missing" else _RefusedPerf(tmp_path)
    outcome = Runner(build_plan(parse_experiment(text)), RunRecord.new(store, text),
                     workdir=tmp_path / "work", target=target).run()
    assert (outcome.status, outcome.failures) == ("complete", 0)
    trials = _trials(store)
    notes = [t["notes"].get("profile") for t in trials]
    expected = ("not profiled: perf not found on local; install the Debian package linux-perf"
                if kind == "missing" else
                "not profiled: perf record exited 255: Access to performance monitoring and "
                "observability operations is limited. (kernel.perf_event_paranoid is 2: run "
                "as root, or lower it with sysctl)")
    assert notes == [expected, expected, None]  # trials: 2 per variant
    assert not [a for a in store.artifacts(outcome.run_id) if a["name"].startswith("profile.")]
    samples = store.samples(outcome.run_id)
    assert len([s for s in samples if s.metric == "time_per_checksum_s"]) == 3
    # the /proc counters need no perf: still there for the profiled trials
    assert len([s for s in samples if s.metric == "profile.interrupts"]) == 2
    assert not [s for s in samples if s.metric == "profile.task_clock_ms"]


def test_perf_is_on_this_machine() -> None:
    """The lab needs Debian's linux-perf (scripts/apt-packages.txt)."""
    assert shutil.which("perf") is not None


class _HostAsGuest(LibvirtGuestTarget):
    """A guest target whose commands run on this host: its kernel's /proc/kallsyms stands in
    for a guest's (this machine's /dev/kvm runs no guest)."""

    def run(self, argv: Sequence[str], **kwargs: Any) -> ProcResult:
        return LocalTarget().run(argv, **kwargs)


def test_a_guest_is_recorded_from_the_host_through_its_process(tmp_path: Path) -> None:
    """The guest scope's recording (perf record -p, perf stat -p) on a real process that
    carries a QEMU's `-name guest=DOMAIN` argument (this machine's /dev/kvm runs no guest)."""
    from virtbench.profiling import Profiler, ProfileSettings

    domain = f"vbprof-{os.getpid()}"
    host = LocalTarget()
    busy = host.spawn([*host.python(), "-c", "import time\nend = time.monotonic() + 60\n"
                       "while time.monotonic() < end: pass", "-name", f"guest={domain},x=y"])
    try:
        # The profiler finds the guest's process by its command line: wait (bounded) until the
        # child has exec'd, or a busy machine shows it with the parent's (CI, under load).
        cmdline = Path(f"/proc/{busy.pid}/cmdline")
        deadline = time.monotonic() + 20
        while f"guest={domain}".encode() not in cmdline.read_bytes():
            assert time.monotonic() < deadline, "the busy child never exec'd within 20 s"
            time.sleep(0.05)
        profiler = Profiler(host, {"w": ProfileSettings()}, {"w": 60.0})
        with profiler.trial("w", 0, False, LibvirtGuestTarget(None, domain)) as captured:
            host.run(["sleep", "1"])
        # The KVM path's commands with the real perf: `perf kvm --host --guest
        # --guestkallsyms --guestmodules record` and both perf script passes. The "guest"
        # whose symbols are copied is this host (its commands run here); no sample is in
        # guest mode, since no guest runs.
        kvm = Services("guest", (GuestMachine(domain, "kvm"),))
        with profiler.trial("w", 0, False, _HostAsGuest(None, domain), services=kvm) as under_kvm:
            host.run(["sleep", "1"])
    finally:
        busy.kill_group()
    assert under_kvm.notes["profile"].startswith("profiled: scope guest"), under_kvm.notes
    assert "guest kernel frames: perf kvm with the guest's /proc/kallsyms (" in \
        under_kvm.notes["profile"]
    kvm_info = json.loads({a.name: a for a in under_kvm.artifacts}["profile.json"].content)
    assert kvm_info["accelerator"] == "kvm" and kvm_info["samples"] > 0
    assert kvm_info["guest_mode_samples"] == 0
    assert captured.notes["profile"].startswith("profiled: scope guest, 99 Hz"), captured.notes
    artifacts = {a.name: a for a in captured.artifacts}
    info = json.loads(artifacts["profile.json"].content)
    assert info["scope"] == "guest" and info["samples"] > 0
    roots = {line.split(";")[0] for line in artifacts["profile.folded"].content.decode()
             .splitlines()}
    assert roots and all(root.startswith("python") for root in roots), roots  # its process only
    metrics = {m.metric for m in captured.measurements}
    assert {"profile.task_clock_ms", "profile.context_switches"} <= metrics


def _run_in_lab(spec_text: str, folder: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    """`virtbench run` of ``spec_text`` (its lab's files below ``folder``); the store it wrote."""
    monkeypatch.setenv("VIRTBENCH_LAB_ROOT", str(folder / "labs"))
    spec = folder / "exp.yaml"
    spec.write_text(spec_text)
    db = folder / "s.db"
    result = CliRunner().invoke(app, ["run", str(spec), "--store", str(db), "--quiet"],
                                env={"XDG_CACHE_HOME": str(folder / "cache")})
    assert result.exit_code == 0, result.output
    return Store(str(db))


WEB_SPEC = """\
name: vbprof-web
seed: 3
lab:
  kind: web
  params: {{sites: 2, pages_per_site: 20, page_bytes: 500000, disk_dir: {disk},
           cache_size: 256M, cache_memory_mib: 48}}
variants:
  - {{name: disk, knobs: {{cache_storage: file-disk}}}}
workloads:
  - name: web.load
    params: {{model: open, rate_per_s: 60, duration_s: 3, timeout_s: 30, stat_interval_s: 1}}
    profile: {{frequency_hz: 199}}
repetitions: 1
warmup: 0
"""


def test_a_web_labs_daemons_count_as_the_workloads(open_dir: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Varnish works in varnishd, started by the lab before the trial: its processes (the
    manager and the child, found below the PID the lab gives) count as the workload's."""
    if shutil.which("varnishd") is None or shutil.which("nginx") is None:
        pytest.fail("varnishd and nginx are needed (Debian packages varnish, nginx-light)")
    (open_dir / "disk").mkdir()
    store = _run_in_lab(WEB_SPEC.format(disk=open_dir / "disk"), open_dir, monkeypatch)
    try:
        (trial,) = _trials(store)
        note = str(trial["notes"]["profile"])
        assert "the lab's daemons count as the workload's: nginx (2 processes), varnishd " \
               "(2 processes)" in note, note
        named = {a["name"]: a for a in store.artifacts(store.run("latest").id)}
        info = json.loads(bytes(named["profile.json"]["content"]))
        assert set(info["serving_daemons"]) == {"nginx", "varnishd"}
        # varnishd's threads are named cache-worker, cache-epoll...: their samples are in
        cache_threads = {c for c in info["workload_comms"] if c.startswith("cache-")}
        assert cache_threads, info["workload_comms"]
        workload = bytes(named["profile.workload.folded"]["content"]).decode().splitlines()
        served = sum(int(line.rsplit(" ", 1)[1]) for line in workload
                     if line.split(";", 1)[0] in cache_threads)
        assert 0 < served <= info["workload_samples"]
    finally:
        store.close()


CGROUP_SPEC = """\
name: vbprof-cgroup
seed: 2
lab:
  kind: storage
variants:
  - {name: one-cpu, knobs: {vm_size: {vcpus: 1, memory_mib: 512}, filesystem: tmpfs,
                          cpu_features: []}}
workloads:
  - name: cpu.crc32c
    params: {size_mib: 32, loops: 16}
    profile: {scope: cgroup}
repetitions: 2
warmup: 0
"""


def test_scope_cgroup_records_only_the_labs_group(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The storage lab's vm_size is a cgroup; on this v1 host (cpu, cpuset, memory) the group
    joins the v2 hierarchy too, and perf -G records only its processes."""
    store = _run_in_lab(CGROUP_SPEC, tmp_path, monkeypatch)
    try:
        trials = _trials(store)
        assert len(trials) == 2
        for trial in trials:
            assert str(trial["notes"]["profile"]).startswith("profiled: scope cgroup, 99 Hz"), \
                trial["notes"]
        for artifact in store.artifacts(store.run("latest").id):
            if artifact["name"] == "profile.json":
                assert json.loads(bytes(artifact["content"]))["scope"] == "cgroup"
            if artifact["name"] != "profile.folded":
                continue
            comms = {line.split(";", 1)[0] for line in
                     bytes(artifact["content"]).decode().splitlines()}
            # the probe (python; the software path: long enough for many samples) and the
            # launcher that joined the group: no swapper, no virtbench, no other process
            assert comms and comms <= {"python", "python3", "sh"}, comms
            assert "_crc32c_sw_slicing_by_8" in bytes(artifact["content"]).decode()
    finally:
        store.close()


VSWITCH_SPEC = """\
name: vbprof-ovs
seed: 2
lab:
  kind: vswitch
  params: {background_settle_s: 0.5}
variants:
  - {name: ovs, knobs: {switch: ovs, background_mbps: 0}}
workloads:
  - name: net.qos-transfer
    params: {duration_s: 2, capture: false, probe: false}
    profile: {}
repetitions: 1
warmup: 0
"""


def test_an_ovs_switchs_forwarding_counts_as_the_workloads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """OVS's userspace datapath forwards in ovs-vswitchd, which the vswitch lab names with the
    iperf3 server: their samples are the workload's with the client's."""
    store = _run_in_lab(VSWITCH_SPEC, tmp_path, monkeypatch)
    try:
        (trial,) = _trials(store)
        note = str(trial["notes"]["profile"])
        assert "the lab's daemons count as the workload's:" in note, note
        named = {a["name"]: a for a in store.artifacts(store.run("latest").id)}
        info = json.loads(bytes(named["profile.json"]["content"]))
        assert set(info["serving_daemons"]) == {"iperf3-server", "irtt-server", "ovs-vswitchd"}
        workload = bytes(named["profile.workload.folded"]["content"]).decode().splitlines()
        vswitchd = set(info["serving_daemons"]["ovs-vswitchd"])
        assert vswitchd, info
        # the switch's threads (ovs-vswitchd's main thread forwards on the netdev datapath):
        # their names are in the workload's stacks, and so is the iperf3 server's
        comms = {line.split(";", 1)[0] for line in workload}
        assert "ovs-vswitchd" in comms and "iperf3" in comms, comms
    finally:
        store.close()
