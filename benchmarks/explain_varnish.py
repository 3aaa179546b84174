"""Issue #25, study 004: does `compare --explain` show the extra work of Varnish's file storage
(page faults, I/O paths) against its malloc storage, in counters and stacks?

A small real experiment, run through the CLI as a user would: the web lab (static multisite
behind Varnish), two profiled `virtbench run`s of one variant each — storage malloc (BASE) and
storage file on the disk (file-disk, a file in /var/tmp; NEW) — with the same web.load (open
model, seeded URLs). The working set (sites × pages × page_bytes) is several times the storage
size, so most requests miss and Varnish keeps evicting and writing new objects into storage:
with file storage those writes go into the mmap'd file (page faults on its pages, dirty pages
written back to the disk). Then
`virtbench compare MALLOC_RUN FILE_RUN --explain --json --explain-scope system`: Varnish's work
happens in varnishd, started by the lab before the trial, so the workload's own processes (the
load generator) would not show it.

Usage: python benchmarks/explain_varnish.py [REPETITIONS [CACHE_SIZE [CACHE_MEMORY_MIB]]]
(default 3 16M; root: the web lab, perf -a). 16M: the storage is a quarter of the working set
(constant eviction, the file's pages reused); 1G: every object goes to storage pages not
touched before (the mmap'd file's first-touch faults against malloc's). A size other than 16M
gets its own section. Both at scope system.

With CACHE_MEMORY_MIB (e.g. `3 1G 64`), the study's setting: the cache server has that much
memory (web lab param cache_memory_mib: varnishd in a memory cgroup, page cache included);
the file storage is CACHE_SIZE on the disk, larger than that memory, so its pages are read
from the disk again; the malloc storage is what fits in it (MALLOC_SIZE). Compared at the
default scope, the workload's samples: the load generator's and the lab's daemons' (varnishd,
nginx). Its own section.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.record import record

REPETITIONS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
CACHE_SIZE = sys.argv[2] if len(sys.argv) > 2 else "16M"
CACHE_MEMORY_MIB = int(sys.argv[3]) if len(sys.argv) > 3 else 0
MALLOC_SIZE = "16M" if CACHE_MEMORY_MIB else CACHE_SIZE
"""malloc storage is varnishd's own memory: with a memory limit, one that fits beside varnishd
and the allocator's overhead (in 64 MiB, malloc 16M did not: the kernel killed varnishd's child
at 59 MB of its own memory; in 128 MiB, malloc 32M did not either, after about 40 s)."""
PAGES = 80 if CACHE_MEMORY_MIB else 40
"""With a memory limit, a working set (120 MB) larger than the page cache left beside varnishd."""
SCOPE = "workload" if CACHE_MEMORY_MIB else "system"
SITES, PAGE_BYTES = 3, 500_000
RATE, DURATION_S, HZ = 80, 8, 199
COUNTERS = ("profile.page_faults", "profile.major_faults", "profile.softirq_block",
            "profile.iowait_pct",
            "profile.task_clock_ms", "profile.context_switches", "profile.interrupts")


def spec(variant: str, storage: str, size: str) -> str:
    return f"""\
name: vb-explain-varnish-{variant}
seed: 4
target: {{kind: local}}
lab:
  kind: web
  params: {{origin: static-multisite, sites: {SITES}, pages_per_site: {PAGES},
           page_bytes: {PAGE_BYTES}, cache_max_age_s: 3600,
           cache_memory_mib: {CACHE_MEMORY_MIB}}}
baseline: {variant}
variants:
  - {{name: {variant}, knobs: {{cache_storage: {storage}, cache_size: {size}}}}}
workloads:
  - name: web.load
    params: {{model: open, rate_per_s: {RATE}, duration_s: {DURATION_S}, timeout_s: 30,
             stat_interval_s: 4}}
    profile: {{frequency_hz: {HZ}}}
repetitions: {REPETITIONS}
warmup: 0
order: blocked
"""


def virtbench(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "virtbench", *args], env=env, check=False,
                          capture_output=True, text=True, timeout=600)


def _ci(d: dict[str, Any] | None, fmt: str = "{:+.1f}") -> str:
    if not d or d.get("value") is None:
        return "–"
    low, high = d.get("ci_low"), d.get("ci_high")
    text = fmt.format(d["value"])
    if low is None or high is None:
        return text + " [no CI]"
    return f"{text} [{fmt.format(low)}, {fmt.format(high)}]"


def _num(x: Any, digits: int = 3) -> str:
    if x is None:
        return "–"
    return f"{x:.{digits}g}" if isinstance(x, float) else str(x)


def _all_counters(store_path: Path, base_ref: str, new_ref: str) -> dict[str, dict[str, Any]]:
    """Every `profile.` counter compared as `compare --explain` compares them (the same call,
    compare_runs(diagnostics=True); no noise profile is stored), the unchanged ones included:
    --explain lists only those whose interval excludes 1."""
    from virtbench.cli.decide import _opener
    from virtbench.decide.compare import compare_runs
    from virtbench.decide.runs import load_run

    open_store = _opener(str(store_path))
    base, new = load_run(base_ref, open_store), load_run(new_ref, open_store)
    rows = compare_runs(base, new, diagnostics=True).rows
    return {row.metric.name: row.as_dict() for row in rows}


def _varnish_samples(store_path: Path, run_ref: str) -> list[tuple[int, int, int, int, int]]:
    """Per profiled trial of the run, from its stored profile.folded (scope system) or
    profile.workload.folded (scope workload): (samples, samples of varnishd's child threads —
    process names `cache-*` —, those of them with a page-fault frame (a name holding
    `page_fault`) on the stack, and of those the ones through the kernel's file-backed fault
    path `do_fault` and through the anonymous one `do_anonymous_page`). This script's own
    count, not the command's."""
    from virtbench.store import Store

    wanted = "profile.folded" if SCOPE == "system" else "profile.workload.folded"
    out = []
    for artifact in Store(str(store_path)).artifacts(run_ref):
        if artifact["name"] != wanted:
            continue
        total = varnish = faulting = file_path = anon_path = 0
        for line in bytes(artifact["content"]).decode("utf-8", "replace").splitlines():
            stack, _, count = line.rpartition(" ")
            n = int(count)
            frames = stack.split(";")
            total += n
            if frames[0].startswith("cache-"):
                varnish += n
                if any("page_fault" in f for f in frames[1:]):
                    faulting += n
                    file_path += n if "do_fault_[k]" in frames else 0
                    anon_path += n if "do_anonymous_page_[k]" in frames else 0
        out.append((total, varnish, faulting, file_path, anon_path))
    return out


def _child_restarts(store_path: Path, run_ref: str) -> int:
    """Trials of the run in which varnishd's child died (web.load's note)."""
    from virtbench.store import Store

    return sum(1 for trial in Store(str(store_path)).trials(run_ref)
               if trial["notes"].get("varnish_child_restarts"))


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="vb-bench-explain-varnish-"))
    env = dict(os.environ, VIRTBENCH_STORE=str(work / "store.db"))
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    runs: dict[str, str] = {}
    logs: list[str] = []
    try:
        for variant, storage, size in (("memory", "malloc", MALLOC_SIZE),
                                       ("disk-file", "file-disk", CACHE_SIZE)):
            path = work / f"{variant}.yaml"
            path.write_text(spec(variant, storage, size))
            t0 = time.monotonic()
            done = virtbench(env, "run", str(path))
            found = re.search(r"run (\S+): (\S+)", done.stderr)
            logs.append(f"run {variant}: exit {done.returncode}, {time.monotonic() - t0:.0f} s, "
                        f"{found.group(0) if found else done.stderr[-300:]!r}")
            if done.returncode != 0 or not found:
                raise SystemExit("\n".join(logs) + "\n" + done.stderr[-2000:])
            runs[variant] = found.group(1)
        command = ("virtbench compare MEMORY_RUN DISK_FILE_RUN --explain --json "
                   f"--explain-scope {SCOPE}")
        compared = virtbench(env, "compare", runs["memory"], runs["disk-file"], "--explain",
                             "--json", "--explain-scope", SCOPE)
        if not compared.stdout.strip():
            raise SystemExit(f"compare exited {compared.returncode}: {compared.stderr[-2000:]}")
        document = json.loads(compared.stdout)
        (work / "compare.json").write_text(compared.stdout)
        every_counter = _all_counters(work / "store.db", runs["memory"], runs["disk-file"])
        varnish = {v: _varnish_samples(work / "store.db", runs[v]) for v in runs}
        restarts = {v: _child_restarts(work / "store.db", runs[v]) for v in runs}
    finally:
        wall_s = time.monotonic() - started
        keep = os.environ.get("KEEP_WORK")
        if keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    explanations = document["explain"]["explanations"]
    if not explanations:
        raise SystemExit(f"no explanation: {document['explain'].get('note')}")
    e = explanations[0]
    function_rows = "\n".join(
        f"| {i} | `{f['function']}` | {f['kind']} | {_ci(f['self_base_pct'], '{:.1f}')} | "
        f"{_ci(f['self_new_pct'], '{:.1f}')} | {_ci(f['self_diff_pp'])} | "
        f"{_ci(f['total_base_pct'], '{:.1f}')} | {_ci(f['total_new_pct'], '{:.1f}')} | "
        f"{_ci(f['total_diff_pp'])} |"
        for i, f in enumerate(e["functions"], 1))
    listed = {c.get("metric"): c for c in e["counters"]}
    counter_rows = []
    for name in COUNTERS:
        c = listed.get(name) or every_counter.get(name)
        if c is None:
            counter_rows.append(f"| `{name}` | not in the document | | | |")
            continue
        counter_rows.append(
            f"| `{name}` | {_num(c.get('mean_base'))} | {_num(c.get('mean_new'))} | "
            f"{_num(c.get('ratio'))} [{_num(c.get('ci_low'))}, {_num(c.get('ci_high'))}] | "
            f"{c.get('verdict', '–')}{' (listed by --explain)' if name in listed else ''} |")
    other = [f"`{m}`" for m in listed if m not in COUNTERS]
    if CACHE_MEMORY_MIB:
        setting = f"""\
The web lab (static multisite: {SITES} sites × {PAGES} pages of {PAGE_BYTES:,} bytes, a
{SITES * PAGES * PAGE_BYTES / 1e6:.0f} MB working set) behind Varnish on a cache server of
{CACHE_MEMORY_MIB} MiB (`cache_memory_mib: {CACHE_MEMORY_MIB}`: varnishd in a memory cgroup,
page cache included); web.load open model {RATE} req/s for {DURATION_S} s, {REPETITIONS}
repetitions (repetition 0 starts from an empty cache), profiled (`profile: {{frequency_hz:
{HZ}}}`). Two runs of one variant each: `cache_storage: malloc, cache_size: {MALLOC_SIZE}`
(BASE: what fits in that memory beside varnishd) and `cache_storage: file-disk, cache_size:
{CACHE_SIZE}` (NEW: a file in /var/tmp on the machine's virtio disk, larger than the memory),
then `{command}`: the shares are of the workload's samples, the load generator's and the
lab's daemons' (varnishd, nginx)."""
    else:
        setting = f"""\
The web lab (static multisite: {SITES} sites × {PAGES} pages of {PAGE_BYTES:,} bytes, a
{SITES * PAGES * PAGE_BYTES / 1e6:.0f} MB working set) behind Varnish with {CACHE_SIZE} of
storage, so most requests miss and Varnish keeps evicting and storing objects; web.load open
model {RATE} req/s for {DURATION_S} s, {REPETITIONS} repetitions (repetition 0 starts from an
empty cache), profiled (`profile: {{frequency_hz: {HZ}}}`, scope system). Two runs of one
variant each: `cache_storage: malloc` (BASE) and `cache_storage: file-disk` (NEW, a file in
/var/tmp on the machine's virtio disk), then `{command}`."""
    body = f"""\
{setting} Load average {load_before:.1f} before
and {os.getloadavg()[0]:.1f} after, on {os.cpu_count()} CPUs; {wall_s:.0f} s in all.
{'; '.join(logs)}.

Shares of the samples (scope `{e['scope']}`), BASE {e['base_trials']} trials, NEW
{e['new_trials']} trials; BASE and NEW means with their 95 % intervals, Δ in pp with its 95 %
Welch interval. Unresolved leaves: BASE {e['unresolved_base_pct']:.1f} %, NEW
{e['unresolved_new_pct']:.1f} %.

| rank | function | kind | self BASE % | self NEW % | Δ self pp | total BASE % | total NEW % | Δ total pp |
|---:|---|---|---|---|---|---|---|---|
{function_rows}

Counters (means per trial; ratio NEW/BASE with compare's 95 % interval, computed as `compare
--explain` computes them; "listed by --explain" when it listed the counter, its interval
excluding 1; the others are not in the command's output and come from the same function,
`compare_runs(diagnostics=True)`, called by this script):

| counter | BASE (malloc) | NEW (file-disk) | NEW/BASE [95 % CI] | verdict |
|---|---:|---:|---|---|
{chr(10).join(counter_rows)}

varnishd's share, counted by this script in the stored profiles (scope {SCOPE}), per trial:
samples of all those processes / of varnishd's child threads (`cache-*`) / of those with a page-fault frame on the
stack / of those through `do_fault` (file-backed) / through `do_anonymous_page`:
{'; '.join(f"{v}: " + ", ".join(" / ".join(map(str, c)) for c in varnish[v])
                   for v in varnish)}.

Trials in which varnishd's child died (web.load's note `varnish_child_restarts`):
{', '.join(f"{v} {n}" for v, n in restarts.items())}.

Other counters listed by --explain: {', '.join(other) or 'none'}.
Notes of the explanation: {'; '.join(e['notes']) or 'none'}; of the document:
{document['explain'].get('note') or 'none'}.
"""
    section = "explain: study 004, Varnish storage"
    if CACHE_MEMORY_MIB:
        section += (f" (file {CACHE_SIZE} vs malloc {MALLOC_SIZE}, cache server "
                    f"{CACHE_MEMORY_MIB} MiB)")
    elif CACHE_SIZE != "16M":
        section += f" (storage {CACHE_SIZE})"
    memory_arg = f" {CACHE_MEMORY_MIB}" if CACHE_MEMORY_MIB else ""
    record(section, "(as root) PYTHONPATH=src python benchmarks/explain_varnish.py "
           f"{REPETITIONS} {CACHE_SIZE}{memory_arg}", body)
    print(body)


if __name__ == "__main__":
    main()
