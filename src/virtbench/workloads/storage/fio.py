"""storage.fio: sequential and random read/write with fio, one stonewalled job per pattern."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from virtbench.contract import MAX_SECONDS, Params
from virtbench.model import Artifact, Metric, VirtbenchError
from virtbench.parsers.fio import FIO_METRICS, parse_fio
from virtbench.parsers.parser_contract import ParseError
from virtbench.workloads.storage.common import (
    free_mib,
    fs_kind,
    memory_limit_mib,
    run_tool,
    work_dir,
)
from virtbench.workloads.workload_contract import Tool, TrialContext, TrialResult, Workload

__all__ = ["FioParams", "FioWorkload"]

Pattern = Literal["seqread", "seqwrite", "randread", "randwrite"]
_DEFAULT_PATTERNS: tuple[Pattern, ...] = ("seqwrite", "seqread", "randwrite", "randread")
_RW = {"seqread": "read", "seqwrite": "write", "randread": "randread", "randwrite": "randwrite"}


class FioParams(Params):
    patterns: list[Pattern] = Field(
        default_factory=lambda: list(_DEFAULT_PATTERNS),
        min_length=1, description="access patterns, run one after the other (stonewall)")
    seq_block_size: str = Field("1M", description="block size of sequential patterns (fio bs)")
    rand_block_size: str = Field("4k", description="block size of random patterns (fio bs)")
    iodepth: int = Field(16, ge=1, le=65536, description="I/Os in flight per job")
    direct: bool = Field(True, description="O_DIRECT: bypass the page cache")
    ioengine: str = Field("libaio", description="fio ioengine (libaio, io_uring, psync ...)")
    runtime_s: float = Field(5, ge=1, le=MAX_SECONDS,
                             description="seconds per pattern (time_based)")
    ramp_s: float = Field(0, ge=0, le=MAX_SECONDS,
                          description="seconds per pattern not counted (ramp_time)")
    size_mib: int = Field(256, ge=1, description="size of the test file, MiB")
    numjobs: int = Field(1, ge=1, le=4096,
                         description="parallel jobs per pattern (group_reporting)")
    directory: str | None = Field(None, description="where to write; default the fs lab's "
                                  "filesystem, else the trial's work dir")

    @property
    def file_name(self) -> str:
        return "vbfs-fio.dat"


class FioWorkload(Workload):
    name = "storage.fio"
    description = ("fio: bandwidth, IOPS, completion latency (mean, p50, p99, p99.9) and CPU of "
                   "sequential and random reads and writes")
    metrics = tuple(m for m in FIO_METRICS if m.name.startswith(_DEFAULT_PATTERNS))
    tools = (Tool("fio", "fio", "the benchmark"), Tool("df", "coreutils", "free space"))
    Params = FioParams

    def active_metrics(self) -> list[Metric]:
        return [m for m in self.metrics if m.name.startswith(tuple(self.params.patterns))]

    def primary_metrics(self) -> list[Metric]:
        return [m for m in self.active_metrics() if m.primary]

    def argv(self, ctx: TrialContext) -> list[str]:
        """The fio command for one trial (also used by the overhead benchmark)."""
        p = self.params
        directory = work_dir(ctx, p.directory, self.name)
        argv = [
            "fio", "--output-format=json", f"--filename={directory}/{p.file_name}",
            f"--size={p.size_mib}M", f"--ioengine={p.ioengine}", f"--iodepth={p.iodepth}",
            f"--direct={int(p.direct)}", f"--runtime={p.runtime_s:g}", "--time_based",
            f"--ramp_time={p.ramp_s:g}", f"--numjobs={p.numjobs}", "--group_reporting",
            f"--randseed={ctx.seed % (2**31)}",
        ]
        for pattern in p.patterns:
            bs = p.seq_block_size if pattern.startswith("seq") else p.rand_block_size
            argv += [f"--name={pattern}", f"--rw={_RW[pattern]}", f"--bs={bs}", "--stonewall"]
        return argv

    def setup(self, ctx: TrialContext) -> None:
        directory = work_dir(ctx, self.params.directory, self.name)
        free = free_mib(ctx, directory)
        if free < self.params.size_mib + 16:
            raise VirtbenchError(
                f"storage.fio: {directory} has {free} MiB free; params.size_mib="
                f"{self.params.size_mib} needs {self.params.size_mib + 16} MiB")

    def notes(self, ctx: TrialContext) -> dict[str, str]:
        if self.params.direct:
            cache = "direct=1 (O_DIRECT): the page cache is bypassed"
            if fs_kind(ctx) == "tmpfs":
                cache += "; but tmpfs is memory, so no disk is measured"
            return {"cache": cache, "page_cache_dominated": "no"}
        memory = memory_limit_mib(ctx)
        return {
            "cache": f"direct=0 (buffered): results include the page cache; file "
                     f"{self.params.size_mib} MiB vs memory "
                     f"{f'{memory} MiB' if memory else 'unlimited (host RAM)'}",
            "page_cache_dominated": "yes" if not memory or memory >= self.params.size_mib
            else "partly",
        }

    def run(self, ctx: TrialContext) -> TrialResult:
        argv = self.argv(ctx)
        timeout = (self.params.runtime_s + self.params.ramp_s + 60) * len(self.params.patterns)
        def explain(text: str) -> str | None:
            if "No space left" in text:
                return "the filesystem is full"
            if self.params.direct and "Invalid argument" in text:
                return "this filesystem refused O_DIRECT; set params.direct=false"
            return None

        result = run_tool(ctx, argv, timeout, "storage.fio", "fio", explain)
        try:
            measurements = parse_fio(result.stdout)
        except ParseError as exc:
            raise VirtbenchError(f"storage.fio: cannot read fio output: {exc}") from exc
        return TrialResult(measurements=measurements,
                           artifacts=[Artifact("fio.json", result.stdout.encode(),
                                               "application/json")],
                           notes=self.notes(ctx))

    def teardown(self, ctx: TrialContext) -> None:
        directory = work_dir(ctx, self.params.directory, self.name)
        ctx.target.run(["rm", "-f", f"{directory}/{self.params.file_name}"], check=False)


