"""A guest experiment run as a user runs it (`virtbench run FILE`), stopped by SIGTERM while its
TCG guest boots, then (a second run) while fio runs inside it: each run is stored as
interrupted (the second with its samples), exits 130 naming `--resume`, and the guest's QEMU,
its private libvirtd, its session files and the lab's manifest are gone. SIGTERM is what CI
and systemd send; Ctrl-C takes the same path in the runner (tests/e2e/test_interrupt_resume.py
runs both on a local lab). One and a half boots of the guest lab's built image. Needs root,
mmdebstrap, QEMU (TCG)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from images import cache_dir
from waits import finish, kill

from virtbench.store import Store

pytestmark = [pytest.mark.timeout(600), pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("mmdebstrap") is None
    or shutil.which("qemu-system-x86_64") is None, reason="needs root, mmdebstrap and QEMU")]

# Bounds for a hang, not expectations: a TCG boot on a loaded 2-core machine takes a minute.
HANG_S = 400.0

SPEC = """\
name: guest-interrupted
seed: 2
target: {{kind: local}}
lab:
  kind: guest
  params: {{image_cache: {cache}, disk_mib: 64, boot_timeout_s: 300}}
variants:
  - {{name: virtio, knobs: {{vcpus: 1, memory_mib: 768, bus: virtio, cache: none}}}}
workloads:
  - {{name: storage.fio, params: {{patterns: [randread], runtime_s: 2, size_mib: 16}}}}
repetitions: 30
warmup: 0
"""


def _samples(db: Path) -> int:
    """Samples stored so far, read-only (never creating the schema under the running child)."""
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
            return int(conn.execute("SELECT count(*) FROM samples").fetchone()[0])
    except sqlite3.OperationalError:  # no table yet
        return 0


def _mentioning(text: str) -> list[str]:
    """Processes whose command line holds ``text``."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            if text.encode() in (proc / "cmdline").read_bytes():
                found.append(proc.name)
        except OSError:
            continue
    return found


class Run:
    """`virtbench run FILE` in a subprocess, its output in files (no pipe to fill)."""

    def __init__(self, tmp_path: Path, spec: Path, db: Path, name: str) -> None:
        self.out, self.err = tmp_path / f"{name}.stdout", tmp_path / f"{name}.stderr"
        with self.out.open("w") as stdout, self.err.open("w") as stderr:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "virtbench", "run", str(spec), "--store", str(db),
                 "--quiet"], stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL,
                env={**os.environ, "VIRTBENCH_LAB_ROOT": str(tmp_path / "labs"),
                     "XDG_CACHE_HOME": str(tmp_path / "cache")})

    def output(self) -> str:
        return f"--- stdout\n{self.out.read_text()}--- stderr\n{self.err.read_text()}"

    def until(self, ready: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + HANG_S
        while not ready():
            assert self.proc.poll() is None, self.output()
            assert time.monotonic() < deadline, f"{what}: not within the bound\n{self.output()}"
            time.sleep(0.2)

    def terminated(self) -> None:
        """SIGTERM; the run must stop as interrupted (exit 130) and say how to resume."""
        self.proc.send_signal(signal.SIGTERM)
        assert finish(self.proc, HANG_S, self.output) == 130, self.output()
        assert "--resume" in self.err.read_text(), self.output()


def _the_guest(labs: Path) -> dict[str, str] | None:
    """The lab's guest as its manifest recorded it, once its QEMU runs."""
    for manifest in labs.glob("vbguest-*.json"):
        with contextlib.suppress(ValueError, KeyError, OSError):
            [guest] = json.loads(manifest.read_text())["objects"]["guest"]
            if _mentioning(f"guest={guest['domain']},"):
                return guest  # type: ignore[no-any-return]
    return None


def _nothing_left(labs: Path, guest: dict[str, str]) -> None:
    """No QEMU of the guest, no private libvirtd (its session holds its sockets), no session
    files (disks, keys), no manifest."""
    assert _mentioning(f"guest={guest['domain']},") == []
    assert _mentioning(guest["session"]) == []
    assert not Path(guest["session"]).exists()
    assert list(labs.glob("*.json")) == []


def test_sigterm_while_the_guest_boots_and_during_a_trial(tmp_path: Path) -> None:
    labs = tmp_path / "labs"
    spec = tmp_path / "exp.yaml"
    spec.write_text(SPEC.format(cache=json.dumps(str(cache_dir("virtbench-guest/image")))))
    db = tmp_path / "store.db"
    # 1. While the guest boots (its QEMU started, sshd not yet answering): nothing measured.
    booting = Run(tmp_path, spec, db, "booting")
    try:
        booting.until(lambda: _the_guest(labs) is not None, "the guest's QEMU")
        guest = _the_guest(labs)
        assert guest is not None
        booting.terminated()
    finally:
        kill(booting.proc)
    _nothing_left(labs, guest)
    assert _samples(db) == 0
    # 2. While fio runs in the guest, samples stored: they are kept.
    measuring = Run(tmp_path, spec, db, "measuring")
    try:
        measuring.until(lambda: _samples(db) >= 2, "two samples")
        guest = _the_guest(labs)
        assert guest is not None, measuring.output()
        measuring.terminated()
    finally:
        kill(measuring.proc)
    _nothing_left(labs, guest)
    store = Store(str(db))
    try:
        runs = store.runs()
        assert [r.status for r in runs] == ["interrupted", "interrupted"], measuring.output()
        assert store.sample_count(runs[0].id) == 0
        assert 2 <= store.sample_count(runs[1].id) < 30, measuring.output()
    finally:
        store.close()
