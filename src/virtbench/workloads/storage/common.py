"""What both storage workloads need: where to write, how much memory, cache handling."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from virtbench.model import VirtbenchError
from virtbench.services import FilesystemService, ResourceLimits
from virtbench.targets.target_contract import CommandFailed, ProcResult
from virtbench.workloads.workload_contract import TrialContext

__all__ = [
    "drop_caches",
    "free_mib",
    "fs_kind",
    "host_memory_mib",
    "memory_limit_mib",
    "run_tool",
    "work_dir",
]


def fs_kind(ctx: TrialContext) -> str | None:
    """The kind of the lab's filesystem (tmpfs, ext4, ...), None without the storage lab's."""
    fs = ctx.services.find(FilesystemService)
    return fs.kind if fs is not None else None


def work_dir(ctx: TrialContext, override: str | None, workload: str) -> Path:
    """params.directory, else the lab's filesystem, else the trial's workdir."""
    fs = ctx.services.find(FilesystemService)
    path = Path(override or (fs.path if fs is not None else "") or ctx.workdir)
    if ctx.target.run(["test", "-d", str(path)], check=False).returncode != 0:
        raise VirtbenchError(f"{workload}: directory {path} does not exist "
                             "(params.directory or the fs lab's filesystem)")
    return path


def host_memory_mib(ctx: TrialContext) -> int:
    """MemTotal of the target (the host, or the guest's RAM inside a VM), MiB."""
    text = ctx.target.run(["cat", "/proc/meminfo"]).stdout
    for line in text.splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    raise VirtbenchError("cannot read MemTotal from /proc/meminfo")


def memory_limit_mib(ctx: TrialContext) -> int | None:
    """The variant's memory limit (the storage lab's vm_size.memory_mib), MiB; None: none."""
    limits = ctx.services.find(ResourceLimits)
    return limits.memory_mib if limits is not None else None


def free_mib(ctx: TrialContext, path: Path) -> int:
    """Space available to an unprivileged writer at ``path`` on the target, MiB."""
    lines = ctx.target.run(["df", "-P", "-m", str(path)]).stdout.strip().splitlines()
    try:
        return int(lines[-1].split()[3])
    except (IndexError, ValueError) as exc:
        raise VirtbenchError(f"cannot read free space of {path} from df") from exc


def drop_caches(ctx: TrialContext) -> None:
    """Write dirty pages back and drop the page cache (system-wide; needs root)."""
    ctx.target.run(["sync"])
    result = ctx.target.run(["sysctl", "-q", "-w", "vm.drop_caches=3"], check=False)
    if result.returncode != 0:
        raise VirtbenchError("cannot drop caches (sysctl vm.drop_caches=3 needs root); "
                             "set params.drop_caches=false and read results as cached")


def run_tool(ctx: TrialContext, argv: Sequence[str], timeout: float, workload: str, tool: str,
             explain: Callable[[str], str | None]) -> ProcResult:
    """Run the benchmark tool; a failure becomes a VirtbenchError that says why: ``explain``
    (given the tool's output) names a known cause, else an OOM kill or the plain failure."""
    try:
        return ctx.target.run(argv, timeout=timeout)
    except CommandFailed as exc:
        cause = explain(exc.result.stderr + exc.result.stdout)
        if cause is not None:
            raise VirtbenchError(f"{workload}: {cause}: {exc}") from exc
        if exc.result.returncode in (-9, 137):
            raise VirtbenchError(f"{workload}: {tool} was killed (SIGKILL), most likely by the "
                                 "OOM killer of the vm_size memory limit") from exc
        raise VirtbenchError(f"{workload}: {tool} failed: {exc}") from exc
