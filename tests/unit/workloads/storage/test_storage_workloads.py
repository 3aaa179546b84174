"""Knob parsing, bonnie++ sizing rules and the fio command line (no tools run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from virtbench.labs.storage_lab import parse_filesystem, parse_vm_size
from virtbench.model import VirtbenchError
from virtbench.plugins import all_workloads
from virtbench.services import FilesystemService, Services
from virtbench.targets.local import LocalTarget
from virtbench.workloads.storage.bonnie import BonnieParams, bonnie_plan
from virtbench.workloads.storage.fio import FioWorkload
from virtbench.workloads.workload_contract import TrialContext


def test_vm_size_forms() -> None:
    assert parse_vm_size({"vcpus": 2, "memory_mib": 1024}).vcpus == 2
    assert parse_vm_size("1x512").memory_mib == 512
    assert parse_vm_size("host").vcpus is None
    with pytest.raises(VirtbenchError, match="vm_size"):
        parse_vm_size("two cpus")
    with pytest.raises(VirtbenchError, match="vm_size"):
        parse_vm_size({"vcpus": 0})


def test_filesystem_forms() -> None:
    assert parse_filesystem("ext4", 1024) == ("ext4", None, 1024)
    assert parse_filesystem("xfs:2048", 1024) == ("xfs", None, 2048)
    assert parse_filesystem("dir:/var/tmp", 1024) == ("dir", "/var/tmp", 0)
    for bad in ("btrfs", "dir:", "ext4:big", ""):
        with pytest.raises(VirtbenchError, match="filesystem"):
            parse_filesystem(bad, 1024)


def test_bonnie_size_defaults_to_twice_ram_and_refuses_less() -> None:
    assert bonnie_plan(BonnieParams(), 256, "vm") == (512, 256)
    assert bonnie_plan(BonnieParams(size_mib=2048, ram_mib=1024), 99, "vm") == (2048, 1024)
    with pytest.raises(VirtbenchError, match=r"size_mib=300 .* 2 × RAM"):
        bonnie_plan(BonnieParams(size_mib=300), 256, "vm")


def test_workloads_registered_with_active_metrics() -> None:
    found = all_workloads()
    assert {"storage.bonnie", "storage.fio"} <= set(found)
    bonnie = found["storage.bonnie"](BonnieParams(fast=True, files=0))
    names = {m.name for m in bonnie.active_metrics()}
    assert "seq_output_block_KiBps" in names
    assert not any(n.startswith(("seq_output_per_char", "seq_create")) for n in names)


def test_fio_argv_one_stonewalled_job_per_pattern(tmp_path: Path) -> None:
    fio = FioWorkload(FioWorkload.Params(patterns=["seqread", "randwrite"], runtime_s=2))
    ctx = TrialContext(target=LocalTarget(), variant="v", knobs={}, workdir=tmp_path,
                       repetition=0, seed=7, services=Services("storage", (FilesystemService(
                           path=str(tmp_path), kind="dir", spec=f"dir:{tmp_path}", mount={},
                           size_mib=0, free_mib=1024, cache_policy="", drop_caches=True),)))
    argv = fio.argv(ctx)
    assert argv[0] == "fio" and "--output-format=json" in argv
    assert argv.count("--stonewall") == 2
    assert "--rw=read" in argv and "--rw=randwrite" in argv and "--direct=1" in argv
    assert f"--filename={tmp_path}/vbfs-fio.dat" in argv
    assert {m.name.split("_")[0] for m in fio.active_metrics()} == {"seqread", "randwrite"}


def test_lab_rejects_unknown_knob() -> None:
    from virtbench.spec import SpecError, parse_experiment

    text = ("name: s\nlab: {kind: storage}\nvariants: [{name: v, knobs: {vm_sizes: 1x128}}]\n"
            "workloads: [{name: storage.fio}]\n")
    with pytest.raises(SpecError, match=r"s.yaml:3: .*unknown knob 'vm_sizes'; did you mean "
                                        r"'vm_size'\?"):
        parse_experiment(text, "s.yaml")


def test_tool_failures_say_why(tmp_path: Path) -> None:
    from virtbench.workloads.storage.common import run_tool

    ctx = TrialContext(target=LocalTarget(), variant="v", knobs={}, workdir=tmp_path,
                       repetition=0, seed=1)

    def explain(text: str) -> str | None:
        return "the filesystem is full" if "No space left" in text else None

    def fail(script: str) -> str:
        with pytest.raises(VirtbenchError) as info:
            run_tool(ctx, ["sh", "-c", script], 30, "storage.x", "xtool", explain)
        return str(info.value)

    assert fail("echo 'No space left on device' >&2; exit 1").startswith(
        "storage.x: the filesystem is full: ")
    assert "xtool was killed (SIGKILL), most likely by the OOM killer" in fail("kill -9 $$")
    assert fail("exit 3").startswith("storage.x: xtool failed: ")
    assert run_tool(ctx, ["true"], 30, "storage.x", "xtool", explain).returncode == 0
