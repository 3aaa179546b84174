"""Workloads against a FakeTarget: what they ask the target and what they make of its answers,
with no process started."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from virtbench.model import VirtbenchError
from virtbench.targets.fake import FakeTarget
from virtbench.targets.target_contract import CommandFailed
from virtbench.workloads.command import CommandWorkload
from virtbench.workloads.cpu.crc32c import Crc32cWorkload
from virtbench.workloads.workload_contract import TrialContext

pytestmark = pytest.mark.usefixtures("no_processes")  # tests/conftest.py


def _ctx(tmp_path: Path, target: FakeTarget, env: dict[str, str | None] | None = None
         ) -> TrialContext:
    return TrialContext(target=target, variant="a", knobs={}, workdir=tmp_path, repetition=0,
                        seed=11, env=env or {})


def test_command_reports_the_timed_run_and_passes_its_limit(tmp_path: Path) -> None:
    target = FakeTarget().add("my-bench", duration_s=0.25)
    workload = CommandWorkload(CommandWorkload.Params(argv=["my-bench", "--fast"], timeout_s=30))
    result = workload.run(_ctx(tmp_path, target, {"VB_X": "1"}))
    assert [(m.metric, m.value) for m in result.measurements] == [("wall_time_s", 0.25)]
    [call] = target.calls
    assert (call.kind, call.argv, call.timeout, call.env) == (
        "run_timed", ("my-bench", "--fast"), 30, {"VB_X": "1"})


def test_command_fails_the_trial_on_a_non_zero_exit(tmp_path: Path) -> None:
    target = FakeTarget().add("my-bench", returncode=2, stderr="no input\n")
    with pytest.raises(CommandFailed, match="no input"):
        CommandWorkload(CommandWorkload.Params(argv=["my-bench"])).run(_ctx(tmp_path, target))


def _probe_target(hardware: bool) -> FakeTarget:
    printed = json.dumps({"times": [0.004, 0.002, 0.003], "hardware_based": hardware})
    return FakeTarget(python=["python3"]).add("python3", "-c", stdout=f"warming\n{printed}\n")


def test_crc32c_reports_the_median_checksum_time_from_its_probe(tmp_path: Path) -> None:
    target = _probe_target(hardware=True)
    result = Crc32cWorkload(Crc32cWorkload.Params(size_mib=1, loops=3)).run(_ctx(tmp_path, target))
    values = {m.metric: m.value for m in result.measurements}
    assert values == {"time_per_checksum_s": 0.003, "throughput_Bps": 1024 * 1024 / 0.003}
    assert result.notes == {"crc32c_path": "hardware"}
    assert target.calls[0].argv[3:] == (str(1024 * 1024), "3", "11")  # size, loops, seed


def test_crc32c_refuses_a_probe_that_ignored_the_software_mask(tmp_path: Path) -> None:
    target = _probe_target(hardware=True)
    with pytest.raises(VirtbenchError, match="ignored CRC32C_SW_MODE=force"):
        Crc32cWorkload(Crc32cWorkload.Params(size_mib=1)).run(
            _ctx(tmp_path, target, {"CRC32C_SW_MODE": "force"}))
    assert target.calls[0].env == {"CRC32C_SW_MODE": "force"}
