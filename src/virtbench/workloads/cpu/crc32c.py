"""cpu.crc32c: CRC32C of a random buffer with the `crc32c` package (study 000's integrity check)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

from pydantic import Field

from virtbench.contract import MIN_SIZE_MIB, Params
from virtbench.model import Artifact, Better, Measurement, Metric, VirtbenchError
from virtbench.workloads.cpu.features import CPU_FEATURES_KNOB, crc32c_realisation, feature_set
from virtbench.workloads.probe import probe_window, run_probe
from virtbench.workloads.workload_contract import Realisation, TrialContext, TrialResult, Workload

__all__ = ["WORKLOADS", "Crc32cWorkload"]


class Crc32cParams(Params):
    size_mib: float = Field(10, ge=MIN_SIZE_MIB, le=4096,
                            description="buffer size in MiB, at least 1 KiB (study: 10 MB)")
    loops: int = Field(5, ge=1, le=100_000,
                       description="timed checksums per trial; the trial reports their median")


class Crc32cWorkload(Workload):
    name = "cpu.crc32c"
    description = ("CRC32C (Castagnoli) of a seeded random buffer with the Python `crc32c` "
                   "package, in a fresh process per trial; SSE4.2 selects the hardware path")
    metrics = (
        Metric("time_per_checksum_s", "s", Better.LOWER,
               "wall time of one CRC32C over the buffer (perf_counter): the median of `loops` "
               "timed checksums after one untimed warm-up (the median keeps a burst of other "
               "work on the machine out of the trial's value)", primary=True),
        Metric("throughput_Bps", "B/s", Better.HIGHER,
               "buffer size in bytes / time_per_checksum_s"),
    )
    python_modules = (("crc32c", "crc32c"),)
    Params = Crc32cParams
    knobs = (CPU_FEATURES_KNOB,)
    timeout_s = 600.0  # a probe of seconds; minutes only on a very slow or busy target

    def realise(self, knobs: Mapping[str, Any]) -> Realisation:
        return crc32c_realisation(feature_set(knobs), self.name)

    def run(self, ctx: TrialContext) -> TrialResult:
        size = int(self.params.size_mib * 1024 * 1024)
        result, raw = run_probe(ctx.target, "virtbench.workloads.cpu", "_probe_crc32c.py",
                                [str(size), str(self.params.loops), str(ctx.seed)], ctx.env)
        expect_hw = ctx.env.get("CRC32C_SW_MODE") != "force"
        if not expect_hw and result["hardware_based"]:
            raise VirtbenchError("crc32c ignored CRC32C_SW_MODE=force: the mask did not apply")
        per_checksum = statistics.median(result["times"])
        return TrialResult(
            measurements=[Measurement("time_per_checksum_s", per_checksum),
                          Measurement("throughput_Bps", size / per_checksum)],
            artifacts=[Artifact("probe.json", raw.encode(), "application/json")],
            notes={"crc32c_path": "hardware" if result["hardware_based"] else "software"},
            window=probe_window(result),
        )


WORKLOADS = (Crc32cWorkload,)
