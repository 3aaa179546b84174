"""The guest lab end to end: ONE private libvirtd, one guest redefined for two variants (the
second boot is the variant switch), verification of what was asked, refusals before boot, and
nothing left afterwards. Needs root, mmdebstrap, qemu (TCG)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from images import cache_dir

from virtbench.labs import guest as guest_lab
from virtbench.labs.guest import GuestLab, GuestParams
from virtbench.profiling import Profiler, ProfileSettings
from virtbench.services import FilesystemService
from virtbench.targets.local import LocalTarget

pytestmark = [pytest.mark.timeout(420), pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("mmdebstrap") is None
    or shutil.which("qemu-system-x86_64") is None, reason="needs root, mmdebstrap and QEMU")]


def _fio(state_target: object, directory: str) -> dict[str, object]:
    out = state_target.run(  # type: ignore[attr-defined]
        ["fio", "--name=t", f"--directory={directory}", "--rw=randread", "--bs=4k",
         "--size=16M", "--runtime=2", "--time_based", "--ioengine=psync",
         "--output-format=json"], timeout=120).stdout
    return json.loads(out)["jobs"][0]  # type: ignore[no-any-return]


NR_HUGEPAGES = Path("/proc/sys/vm/nr_hugepages")


@pytest.fixture
def hugepages() -> Iterator[int]:
    """640 more 2 MiB huge pages for the test, given back by count afterwards: 384 for one
    guest's 768 MiB, the rest for whatever else maps huge pages while they are there (a
    PostgreSQL started with huge_pages=try takes ~72). Relative, as the vswitch lab's own
    reservation (labs/net/hugepages.py): the suite's other lines reserve and give back pages
    of the same pool meanwhile, and a value written whole would undo theirs, or they ours."""
    NR_HUGEPAGES.write_text(f"{int(NR_HUGEPAGES.read_text()) + 640}\n")
    try:
        yield int(NR_HUGEPAGES.read_text())
    finally:
        NR_HUGEPAGES.write_text(f"{max(0, int(NR_HUGEPAGES.read_text()) - 640)}\n")


def test_guest_lab_variants_verified_and_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 hugepages: int) -> None:
    monkeypatch.setenv("VIRTBENCH_LAB_ROOT", str(tmp_path / "labs"))
    params = GuestParams(image_cache=str(cache_dir("virtbench-guest/image")),
                         disk_mib=256)
    lab = GuestLab(params, tmp_path, LocalTarget())
    # Refused before anything starts, each naming its knob.
    assert any("knob iothreads" in p and "sata" in p
               for p in lab.check_variant("bad", {"bus": "sata", "iothreads": 1}))
    assert any("knob cache" in p for p in lab.check_variant("bad", {"cache": "sometimes"}))
    assert any("knob memory_mib" in p and "available" in p
               for p in lab.check_variant("bad", {"memory_mib": 1 << 30}))
    assert any("knob io" in p and "O_DIRECT" in p
               for p in lab.check_variant("bad", {"cache": "writeback", "io": "native"}))
    assert lab.check_variant("ok", {"cache": "none", "io": "native"}) == []
    assert any("knob vcpupin" in p and "online" in p
               for p in lab.check_variant("bad", {"vcpupin": "0-63"}))
    assert any("knob queues" in p and "per CPU" in p
               for p in lab.check_variant("bad", {"vcpus": 1, "queues": 2}))
    # more guest memory than the host has free huge pages: refused, naming the host's count
    # (the pool is never emptied here: the suite's other lines use it meanwhile)
    assert any("knob hugepages" in p and ("HugePages_Total 0" in p or "free of" in p)
               for p in lab.check_variant("bad", {"hugepages": True, "memory_mib": 1 << 30}))
    session = None
    try:
        lab.up()
        session = lab.session
        assert session is not None and session.exists()
        manifest = json.loads(next((tmp_path / "labs").glob("vbguest-*.json")).read_text())
        assert manifest["objects"]["guest"][0]["domain"] == lab.domain
        # the host's own view: sata is refused for this image (no AHCI in the guest kernel)
        with pytest.raises(Exception, match="knob bus"):
            lab.enter("sata", {"bus": "sata"})
        first = lab.enter("one", {"vcpus": 1, "cache": "none", "io": "native", "queues": 1,
                                  "preallocation": "falloc"})
        assert "emulated" in first.notes["emulated"]
        assert first.caveats and "CPU-bound figures" in first.caveats[0]
        assert "256 MiB allocated of 256 MiB" in first.notes["preallocation_verified"]
        assert "1 queue(s)" in first.notes["verified_guest"]
        assert json.loads(first.notes["verified_qemu"])["queues"] == 1
        assert json.loads(first.notes["verified_qemu"])["aio"] == "native"
        assert json.loads(first.notes["verified_qemu"])["direct"] is True
        assert "write_cache 'write back'" in first.notes["verified_guest"]
        fs = first.services.get(FilesystemService)
        assert fs.mount["fstype"] == "ext4"
        assert float(_fio(first.target, fs.path)["read"]["iops"]) > 0  # type: ignore[index]
        two = {"vcpus": 2, "cache": "writethrough", "io": "threads", "bus": "scsi",
               "format": "qcow2", "preallocation": "metadata", "iothreads": 1, "queues": 2,
               "vcpupin": "0/1", "emulatorpin": 1, "hugepages": True}
        second = lab.enter("two", two)
        assert "nproc=2" in second.notes["verified_guest"]
        assert "write_cache 'write through'" in second.notes["verified_guest"]
        assert "driver sd" in second.notes["verified_guest"]
        qemu = json.loads(second.notes["verified_qemu"])
        assert qemu["format"] == "qcow2" and qemu["direct"] is False and qemu["smp"] == 2
        assert qemu["iothread"] == "iothread1" and qemu["queues"] == 2  # the scsi controller
        assert "2 queue(s)" in second.notes["verified_guest"]
        live = json.loads(second.notes["verified_xml"])
        assert (live["vcpupin"], live["emulatorpin"], live["hugepages"]) == ("0/1", "1", "True")
        placement = second.notes["verified_placement"]
        assert "CPU 0/TCG 0" in placement and "CPU 1/TCG 1" in placement
        assert "main 1" in placement and "768 MiB of QEMU's memory on 2048 kB" in placement
        assert float(second.notes["boot_s"]) > 0
        # --profile of a trial in the guest, recorded from the host: its QEMU process's
        # threads, named as QEMU names them (vCPUs, the IOThread), with their samples
        profiler = Profiler(LocalTarget(), {"w": ProfileSettings()}, {"w": 120.0})
        with profiler.trial("w", 0, False, second.target, services=second.services) as captured:
            _fio(second.target, second.services.get(FilesystemService).path)
        info = json.loads({a.name: a for a in captured.artifacts}["profile.json"].content)
        assert info["scope"] == "guest", captured.notes
        # TCG: the lab says so (GuestMachine), and the note says why no guest kernel frame
        assert info["accelerator"] == "qemu" and info["guest_mode_samples"] == 0
        assert "guest kernel frames need KVM: the guest runs under qemu (TCG)" in \
            captured.notes["profile"]
        threads = info["qemu_threads"]
        assert {"CPU_0/TCG", "CPU_1/TCG", "IO_iothread1"} <= set(threads), threads
        assert threads["CPU_0/TCG"] + threads["CPU_1/TCG"] > 0, threads
        # the same knobs again: no reboot, the same state
        assert lab.enter("two-again", two) is second
        # A knob the hypervisor drops (simulated: QEMU's vCPU threads found unpinned) is
        # refused after the boot, and the guest and its disk are rolled back at once.
        monkeypatch.setattr(guest_lab, "qemu_thread_affinity", lambda pid: {
            "main": frozenset({0, 1}), "CPU 0/TCG": frozenset({0, 1})})
        with pytest.raises(Exception, match=r"refused, guest removed.*vcpupin: vCPU 0"):
            lab.enter("dropped", {"vcpus": 1, "vcpupin": "0", "emulatorpin": "1"})
        assert lab.conn.listAllDomains() == []
        assert not (session / "disk.raw").exists()
    finally:
        lab.down()
    assert session is not None and not session.exists()
    assert not list((tmp_path / "labs").glob("vbguest-*.json"))
    assert not [p for p in Path("/proc").iterdir() if p.name.isdigit() and
                lab.domain.encode() in _cmdline(p)]


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""


def test_lab_clean_removes_what_a_crashed_run_left(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that dies after up (no down): `virtbench lab clean` finds the manifest through
    the plugin registry and removes the private daemon, its domain and the session files."""
    from virtbench.labs.cleanup import clean_leftovers
    from virtbench.plugins import all_labs

    monkeypatch.setenv("VIRTBENCH_LAB_ROOT", str(tmp_path / "labs"))
    lab = GuestLab(GuestParams(image_cache=str(cache_dir("virtbench-guest/image"))),
                   tmp_path, LocalTarget())
    try:
        lab.up()
        assert lab.daemon is not None and lab.daemon.pid() is not None
        daemon_pid = lab.daemon.pid()
        session = lab.session
        lab.conn.close()  # the crash: nothing of down() runs
        summary = clean_leftovers(all_labs(), tmp_path / "labs")
        assert summary.complete and summary.count("removed") == 1, summary.events
        assert session is not None and not session.exists()
        assert daemon_pid is not None and not Path(f"/proc/{daemon_pid}").exists()
        assert not list((tmp_path / "labs").glob("*.json"))
    finally:
        lab.manifest = None
        if lab.daemon is not None:
            lab.daemon.stop()
