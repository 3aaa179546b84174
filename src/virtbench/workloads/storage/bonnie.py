"""storage.bonnie: bonnie++ on the lab's filesystem, every field of its CSV line as a metric."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from virtbench.contract import MAX_SECONDS, Params
from virtbench.model import Artifact, VirtbenchError
from virtbench.parsers.bonnie import BONNIE_METRICS, BONNIE_TESTS, parse_bonnie
from virtbench.parsers.parser_contract import ParseError
from virtbench.services import FilesystemService
from virtbench.workloads.storage.common import (
    drop_caches,
    free_mib,
    fs_kind,
    host_memory_mib,
    memory_limit_mib,
    run_tool,
    work_dir,
)
from virtbench.workloads.workload_contract import Tool, TrialContext, TrialResult, Workload

__all__ = ["BonnieParams", "BonnieWorkload", "bonnie_plan"]


class BonnieParams(Params):
    size_mib: int | None = Field(
        None, ge=1, description="file size for the sequential tests, MiB (-s); default 2 × "
        "ram_mib. bonnie++ refuses a size below 2 × RAM")
    ram_mib: int | None = Field(
        None, ge=1, description="RAM bonnie++ assumes, MiB (-r); default the variant's "
        "vm_size.memory_mib, else the target's MemTotal")
    files: int = Field(16, ge=0, description="files for the create tests, in units of 1024 "
                       "(-n); 0 skips the create tests")
    fast: bool = Field(False, description="skip the per-char tests (-f)")
    directory: str | None = Field(None, description="where to write; default the fs lab's "
                                  "filesystem, else the trial's work dir")
    drop_caches: bool | None = Field(
        None, description="sync and drop the page cache before each trial (needs root); "
        "default: when the lab says the filesystem has a disk behind it")
    user: str = Field("root", description="user bonnie++ runs as when started as root (-u)")
    timeout_s: float = Field(3600, ge=1, le=MAX_SECONDS,
                             description="give up on one trial after this long")


def bonnie_plan(params: BonnieParams, ram_mib: int, ram_source: str) -> tuple[int, int]:
    """(size_mib, ram_mib) after defaults and the 2 × RAM rule; a clear error otherwise."""
    ram = params.ram_mib or ram_mib
    size = params.size_mib or 2 * ram
    if size < 2 * ram:
        raise VirtbenchError(
            f"storage.bonnie: params.size_mib={size} is less than 2 × RAM ({ram} MiB, "
            f"{'params.ram_mib' if params.ram_mib else ram_source}); bonnie++ refuses it because "
            f"the page cache would hold the file. Use size_mib >= {2 * ram}, or give the "
            "variant less memory (vm_size.memory_mib)")
    return size, ram


class BonnieWorkload(Workload):
    name = "storage.bonnie"
    description = ("bonnie++: sequential per-char/block/rewrite output, per-char/block input, "
                   "random seeks, sequential and random file create/stat/delete, with CPU and "
                   "worst-case latency of each")
    metrics = BONNIE_METRICS
    tools = (Tool("bonnie++", "bonnie++", "the benchmark"),
             Tool("sysctl", "procps", "dropping the page cache"),
             Tool("df", "coreutils", "checking free space"))
    Params = BonnieParams

    def active_metrics(self) -> list[Any]:
        skip = set()
        if self.params.fast:
            skip |= {"seq_output_per_char", "seq_input_per_char"}
        if self.params.files == 0:
            skip |= {t.key for t in BONNIE_TESTS[6:]}
        return [m for m in self.metrics if not any(m.name.startswith(k + "_") for k in skip)]

    def _ram(self, ctx: TrialContext) -> tuple[int, str, bool]:
        limit = memory_limit_mib(ctx)
        if limit:
            return limit, f"vm_size.memory_mib of variant {ctx.variant}", True
        return host_memory_mib(ctx), "MemTotal of the target (no memory limit)", False

    def argv(self, ctx: TrialContext) -> tuple[list[str], dict[str, str]]:
        """The bonnie++ command for this trial and the notes explaining its sizes."""
        directory = work_dir(ctx, self.params.directory, self.name)
        ram, source, limited = self._ram(ctx)
        size, ram = bonnie_plan(self.params, ram, source)
        tmpfs = fs_kind(ctx) == "tmpfs"
        if tmpfs and limited and size + 32 >= ram:
            raise VirtbenchError(
                f"storage.bonnie: on tmpfs the file itself is charged to the {ram} MiB memory "
                f"limit, so a {size} MiB file would be OOM-killed; use vm_size 'host' (no "
                "memory limit) with params.ram_mib for the tmpfs reference")
        free = free_mib(ctx, directory)
        need = size + 64 + self.params.files  # create tests use ~1 KiB inodes per file
        if free < need:
            raise VirtbenchError(
                f"storage.bonnie: {directory} has {free} MiB free but the test needs about "
                f"{need} MiB (size_mib={size}); lower vm_size.memory_mib / params.size_mib or "
                "use a larger filesystem (lab param image_size_mib)")
        argv = ["bonnie++", "-q", "-d", str(directory), "-s", f"{size}", "-r", f"{ram}",
                "-n", str(self.params.files), "-m", f"vb-{ctx.variant}"[:20],
                "-z", str(ctx.seed % (2**31))]
        if self.params.fast:
            argv.append("-f")
        if self.params.user:
            argv += ["-u", self.params.user]
        ratio = size / ram
        dominated = not limited or tmpfs
        why = ("the filesystem is tmpfs (memory)" if tmpfs else
               f"no memory limit: RAM is the target's {ram} MiB page cache, shared with "
               "everything else" if not limited else "")
        notes = {
            "file_size_mib": str(size),
            "ram_mib": f"{ram} ({source})",
            "size_to_ram_ratio": f"{ratio:.2f}",
            "page_cache_dominated": "yes" if dominated else "no",
            "page_cache": (f"WARNING: results may be dominated by the page cache: {why}"
                           if dominated else
                           f"file {size} MiB = {ratio:.1f} × the {ram} MiB memory limit, "
                           "which also bounds the page cache"),
        }
        return argv, notes

    def setup(self, ctx: TrialContext) -> None:
        self.argv(ctx)  # validates sizes and free space before the first trial

    def run(self, ctx: TrialContext) -> TrialResult:
        argv, notes = self.argv(ctx)
        fs = ctx.services.find(FilesystemService)
        drop = self.params.drop_caches
        if drop is None:
            drop = fs.drop_caches if fs is not None else False
        if drop:
            drop_caches(ctx)
        notes["caches"] = ("dropped before the trial (sync; vm.drop_caches=3)" if drop
                           else "not dropped")
        def explain(text: str) -> str | None:
            if "No space left" in text or "Can't write" in text:
                return f"the filesystem at {argv[3]} ran out of space"
            return None

        result = run_tool(ctx, argv, self.params.timeout_s, "storage.bonnie", "bonnie++", explain)
        try:
            measurements = parse_bonnie(result.stdout)
        except ParseError as exc:
            raise VirtbenchError(f"storage.bonnie: cannot read bonnie++ output: {exc}") from exc
        fast_metrics = {m.metric for m in measurements if m.status == "too_fast"}
        too_fast = [t.key for t in BONNIE_TESTS if f"{t.key}_cpu_pct" in fast_metrics]
        if too_fast:
            notes["too_fast"] = (
                f"{len(too_fast)} test(s) finished too fast to measure (+++++): "
                f"{', '.join(too_fast)}; use a larger size_mib (sequential, seeks) or files "
                "(create tests)")
        return TrialResult(
            measurements=measurements,
            artifacts=[Artifact("bonnie.csv", result.stdout.encode()),
                       Artifact("bonnie.txt", result.stderr.encode())],
            notes=notes,
        )
