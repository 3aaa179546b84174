"""Issue 3, item 4 end to end: the engine runs its CPU workloads inside a real libvirt guest,
once per guest CPU configuration, and the domain's original configuration comes back —
after a complete run and after Ctrl-C.

The guest is the small Debian guest of kvm_debian_guest.py (python3, crc32c, cryptography,
sshd) under QEMU TCG: the session's sandbox guest (conftest.py's debian_sandbox, in the
sandbox's own private libvirtd, booted once for this module and test_assess_sandbox.py),
reached over SSH on 127.0.0.1 with its host key pinned. The experiment is
examples/kvm-guest-tcg.yaml with this test's domain, port and keys filled in. TCG timings
are not hardware results: nothing here compares times; the tests assert which code path ran
(crc32c's hardware flag) and where.
"""

from __future__ import annotations

import io
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import libvirt
import pytest
from kvm_debian_guest import sandbox_ssh, wait_answering
from ruamel.yaml import YAML

from virtbench.kvm.domxml import read_cpu
from virtbench.kvm.hostcpu import cpuinfo_flags
from virtbench.kvm.sandbox import Sandbox, SandboxInfo
from virtbench.runner import Runner, RunRecord, build_plan
from virtbench.runner.schedule import blocked_variant_order
from virtbench.spec.loader import parse_experiment
from virtbench.store import Store
from virtbench.targets.ssh import SSHTarget
from virtbench.workloads.cpu.aes import AesWorkload
from virtbench.workloads.cpu.crc32c import Crc32cWorkload

pytestmark = [pytest.mark.lab, pytest.mark.timeout(1500)]

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "examples" / "kvm-guest-tcg.yaml"
DEFAULT = "qemu64-default"
TUNED = ("qemu64-sse42-aes", "nehalem-aes")


@dataclass
class Guest:
    conn: Any
    uri: str
    name: str
    info: SandboxInfo
    tmp: Path

    @property
    def port(self) -> int:
        return int(self.info.ssh.rsplit(":", 1)[1])

    def ssh(self) -> SSHTarget:
        return sandbox_ssh(self.info)

    def flags(self) -> frozenset[str]:
        return cpuinfo_flags(self.ssh().run(["cat", "/proc/cpuinfo"], timeout=60).stdout)


@pytest.fixture(scope="module")
def guest(debian_sandbox: tuple[Sandbox, SandboxInfo]) -> Iterator[Guest]:
    """The session's sandbox guest for the module: each test ends with the domain's original
    configuration restored (and asserts it), so the next starts from the state a fresh guest
    has, without a TCG boot of its own."""
    _, info = debian_sandbox
    # Our own temp dir (not tmp_path) for the state and lab manifests the tests check.
    tmp = Path(tempfile.mkdtemp(prefix="vbkvm-deb-test-"))
    conn = libvirt.open(info.uri)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("VIRTBENCH_STATE_DIR", str(tmp / "state"))
        env.setenv("VIRTBENCH_LAB_ROOT", str(tmp / "labs"))
        try:
            wait_answering(info)  # a test before may have restarted it (a rollback)
            yield Guest(conn, info.uri, info.domain, info, tmp)
        finally:
            conn.close()
            shutil.rmtree(tmp, ignore_errors=True)


def experiment_text(g: Guest, *, variants: tuple[str, ...] | None = None,
                    seed: int | None = None, workloads: tuple[str, ...] | None = None) -> str:
    """examples/kvm-guest-tcg.yaml with this test's domain, libvirt, port and keys."""
    yaml = YAML(typ="rt")
    data = yaml.load(EXAMPLE.read_text())
    access = {"known_hosts": g.info.known_hosts, "identity_file": g.info.identity}
    data["target"]["params"].update(domain=g.name, connect=g.uri, ssh_port=g.port, **access)
    data["lab"]["params"].update(domain=g.name, connect=g.uri, ssh=g.info.ssh, **access)
    if variants is not None:
        data["variants"] = [v for v in data["variants"] if v["name"] in variants]
    if seed is not None:
        data["seed"] = seed
    if workloads is not None:
        data["workloads"] = [w for w in data["workloads"] if w["name"] in workloads]
    # One trial per variant and workload, no warm-up: what is asserted is where and on which
    # CPU each trial ran, not its time (TCG's times are not hardware results); every trial
    # under TCG costs seconds of the suite's time.
    data["repetitions"], data["warmup"] = 1, 0
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


def snapshot(g: Guest) -> tuple[str, Any]:
    """The domain's stored definition (exact text) and the CPU it runs with now."""
    dom = g.conn.lookupByName(g.name)
    return dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE), read_cpu(dom.XMLDesc(0))


def assert_restored(g: Guest, original: tuple[str, Any]) -> None:
    dom = g.conn.lookupByName(g.name)
    assert dom.isActive() and dom.isPersistent()
    assert snapshot(g) == original
    # The guest answers again and sees qemu64's CPU: the flags the variants added are gone.
    flags = g.flags()
    assert "sse2" in flags
    assert not {"ssse3", "sse4.1", "sse4.2", "aes"} & flags
    assert list((g.tmp / "state").rglob("*.json")) == [], "saved original not forgotten"
    assert list((g.tmp / "labs").glob("*.json")) == [], "lab manifest left behind"


def leftover_processes(marker: str) -> list[str]:
    """Processes (e.g. SSH multiplexing masters) whose command line names ``marker``."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in cmdline:
            found.append(f"{proc.name}: {cmdline}")
    return found


def close_target(runner: Runner) -> None:
    close = getattr(runner.target, "close", None)
    if callable(close):
        close()


def test_workloads_run_inside_guest_for_each_cpu_variant(guest: Guest, tmp_path: Path) -> None:
    g = guest
    original = snapshot(g)
    assert not {"sse4.2", "aes"} & g.flags()
    # The default and the study's tuned XML: each variant is a TCG boot and trials under TCG
    # (about 20 CPU-s of the suite). The named model (Nehalem + aes) is entered, verified and
    # restored by the lab test of test_kvm_guest_e2e.py on the small guest.
    variants = [DEFAULT, TUNED[0]]
    text = experiment_text(g, variants=tuple(variants))
    exp = parse_experiment(text, str(EXAMPLE))
    store = Store(str(tmp_path / "store.db"))
    runner = Runner(build_plan(exp), RunRecord.new(store, text, str(EXAMPLE)),
                    workdir=tmp_path / "work")
    try:
        outcome = runner.run()
    finally:
        close_target(runner)
    assert outcome.status == "complete", outcome.stop_reason
    run_id = outcome.run_id
    workloads = {"cpu.crc32c": {"time_per_checksum_s", "throughput_Bps"},
                 "cpu.aes": {"encrypt_time_s", "decrypt_time_s", "bulk_throughput_Bps"}}

    # Every trial ran in the guest, over the lab's SSH target, and succeeded.
    trials = store.trials(run_id)
    guest_target = f"guest:{g.name} via ssh:{g.info.ssh}"
    assert {t["target"] for t in trials} == {guest_target}
    assert [t for t in trials if t["status"] != "ok"] == []
    assert isinstance(exp.repetitions, int)  # a fixed count, not adaptive
    assert len(trials) == len(variants) * len(workloads) * (exp.warmup + exp.repetitions)

    # Every variant's samples are stored, for every metric of every workload.
    samples = store.samples(run_id)
    for variant in variants:
        for workload, metrics in workloads.items():
            got = [s for s in samples if s.variant == variant and s.workload_id == workload]
            assert {s.metric for s in got} == metrics, (variant, workload)
            assert all(s.value is not None and s.value > 0 for s in got)
            assert len([s for s in got if s.metric == sorted(metrics)[0]]) == exp.repetitions

    # Blocked order: each variant's trials are contiguous, blocks in the seeded order.
    blocks = [t["variant"] for t in trials]
    order = [v for i, v in enumerate(blocks) if i == 0 or blocks[i - 1] != v]
    assert order == blocked_variant_order(variants, exp.seed)

    # The guest CPU decided crc32c's path: software under plain qemu64 (no SSE4.2),
    # hardware (the SSE4.2 crc32 instruction) in the tuned one.
    paths = {(t["variant"], t["notes"]["crc32c_path"]) for t in trials
             if t["workload_id"] == "cpu.crc32c"}
    assert paths == {(DEFAULT, "software"), (TUNED[0], "hardware")}

    # The lab verified each tuned CPU inside the guest before the trials ran.
    settings = {r["variant"]: r["settings"] for r in store.realisations(run_id)}
    first = blocked_variant_order(variants, exp.seed)[0]
    for variant in variants:
        verified = settings[variant]["lab.verified_by"]
        if variant == DEFAULT and first == DEFAULT:
            assert verified == "already running this configuration"
        else:  # restarted with this CPU (the default too, after a tuned block)
            assert verified.startswith("/proc/cpuinfo over guest:"), (variant, verified)
    assert "aes" in settings[TUNED[0]]["lab.guest_cpu"]

    # Facts before and after the run come from inside the guest (qemu64: no SSE4.2).
    facts = store.facts(run_id)
    assert {phase for _, phase, _, _ in facts} == {"before", "after"}
    for _, _, _, data in facts:
        assert data["target"] == guest_target
        assert "sse2" in data["cpu"]["flags"] and "sse4_2" not in data["cpu"]["flags"]
        assert set(data["python_packages"]) == {"crc32c", "cryptography"}

    assert_restored(g, original)
    assert leftover_processes(g.info.identity) == []
    store.close()


def test_ctrl_c_inside_tuned_guest_restores_original(guest: Guest, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGINT reaches the runner while a command runs inside the tuned guest."""
    g = guest
    original = snapshot(g)
    variants = (DEFAULT, TUNED[0])
    # A seed whose block order runs the default first, so one variant is complete when the
    # interrupt arrives in the tuned one.
    seed = next(s for s in range(1, 100) if blocked_variant_order(list(variants), s)[0] == DEFAULT)
    seen_in_tuned: list[frozenset[str]] = []
    main_thread = threading.main_thread().ident
    assert main_thread is not None

    def interrupting(real: Any) -> Any:
        def run(self: Any, ctx: Any) -> Any:
            if ctx.variant != TUNED[0]:
                return real(self, ctx)
            seen_in_tuned.append(cpuinfo_flags(ctx.target.run(["cat", "/proc/cpuinfo"]).stdout))
            # What Ctrl-C does to the main thread, 1 s into a 60 s command in the guest.
            threading.Timer(1.0, signal.pthread_kill, (main_thread, signal.SIGINT)).start()
            ctx.target.run(["sleep", "60"], timeout=90)
            raise AssertionError("the run was not interrupted")
        return run

    monkeypatch.setattr(Crc32cWorkload, "run", interrupting(Crc32cWorkload.run))
    monkeypatch.setattr(AesWorkload, "run", interrupting(AesWorkload.run))
    # One workload: the default block's trials only need to be stored (a trial under TCG is
    # seconds of the suite's CPU); the interrupt comes in the tuned block's first trial.
    text = experiment_text(g, variants=variants, seed=seed, workloads=("cpu.crc32c",))
    exp = parse_experiment(text, str(EXAMPLE))
    store = Store(str(tmp_path / "store.db"))
    runner = Runner(build_plan(exp), RunRecord.new(store, text, str(EXAMPLE)),
                    workdir=tmp_path / "work")
    try:
        with pytest.raises(KeyboardInterrupt):
            runner.run()
    finally:
        close_target(runner)
    run = store.run("latest")
    assert run.status == "interrupted"
    # The interrupt hit the tuned guest (it had the flags), and the default block was stored.
    assert len(seen_in_tuned) == 1 and {"sse4.2", "aes"} <= seen_in_tuned[0]
    stored = {s.variant for s in store.samples(run.id)}
    assert stored == {DEFAULT}
    assert_restored(g, original)
    assert leftover_processes(g.info.identity) == []
    store.close()
