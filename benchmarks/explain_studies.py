"""Validation of `compare --explain` on the issue's studies (issue #25), as a user gets it.

Sub-command ``vswitch`` (study 001: linux-bridge vs OVS vs OVS-DPDK): one profiled run per
switch of the vswitch lab's net.qos-transfer workload (the settings of examples/vswitch-qos.yaml:
3 s transfers, 10 ms probes, no background traffic; 3 repetitions, no warm-up, perf at 99 Hz,
scope system), each run one variant, then ``virtbench compare A B --explain --json
--explain-scope system`` for the three pairs. A vswitch does its work in its daemons, kernel
threads and softirqs, not in the workload's processes: hence the system scope. This machine has
no openvswitch kernel module, so "ovs" is OVS's userspace (netdev) datapath and "ovs-dpdk" is
DPDK with its poll-mode driver thread (the lab's DPDK ports are af_packet vdevs on veths).

Recorded in BENCHMARKS.md ("explain: study 001, switches"), per switch: the functions with the
largest self share of all samples (mean over trials, 95 % interval as the explanation computes
it), the share of samples per process name (the switch's own threads among them), the total
share of a few packet-path functions, and the NET_RX / NET_TX softirq counters (mean, 95 % t
interval over trials); per pair, the first functions of compare's ranking and the counters
compare found changed. Whole machine: whatever else runs on it is in the samples too.

Usage: python benchmarks/explain_studies.py vswitch [--store FILE]   (root: perf -a, netns, OVS)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "src"))

from benchmarks.record import record  # noqa: E402
from virtbench.decide.explain import _share, _shares, load_profiles  # noqa: E402
from virtbench.model import Domain  # noqa: E402
from virtbench.stats.intervals import mean_interval  # noqa: E402
from virtbench.store import Store  # noqa: E402

SWITCHES = ("linux-bridge", "ovs", "ovs-dpdk")
PAIRS = (("linux-bridge", "ovs"), ("ovs", "ovs-dpdk"), ("linux-bridge", "ovs-dpdk"))
SECTION = "explain: study 001, switches, both scopes"
TOP_SELF = 8
TOP_RANKED = 5
PATH_FUNCTIONS = ("br_handle_frame", "__br_forward", "net_rx_action", "process_backlog",
                  "tun_do_read", "tun_get_user", "packet_sendmsg", "tpacket_rcv",
                  "[ovs-vswitchd]", "[ovs-vswitchd-dpdk]", "[librte_net_af_packet.so.23.0]")
COMM_GROUPS = (("ovs-vswitchd", "ovs-vswitchd"), ("pmd", "pmd-c*"), ("handler", "handler*"),
               ("revalidator", "revalidator*"), ("ksoftirqd", "ksoftirqd/*"),
               ("kworker", "kworker/*"), ("iperf3", "iperf3"), ("irtt", "irtt"),
               ("swapper", "swapper (idle)"))
DATAPATH = frozenset(key for key, _label in COMM_GROUPS)
"""The processes that move the study's packets (the switch's threads, the kernel's softirq and
worker threads, the workload's tools, the idle task that runs softirqs after interrupts)."""
SPEC = """\
name: explain-s001-{switch}
seed: 1
lab:
  kind: vswitch
  params: {{background_settle_s: 1.0}}
baseline: "switch={switch},background_mbps=0"
matrix:
  switch: [{switch}]
  background_mbps: [0]
workloads:
  - name: net.qos-transfer
    params: {{duration_s: 3, probe_interval_ms: 10, snaplen: 96}}
    profile: {{frequency_hz: 99}}
repetitions: 3
warmup: 0
"""


def _virtbench(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.run([sys.executable, "-m", "virtbench", *args], env=env, text=True,
                          capture_output=True, check=False, timeout=300)


def _fmt(value: float, low: float, high: float, digits: int = 1) -> str:
    if not (math.isfinite(low) and math.isfinite(high)):
        return f"{value:.{digits}f}"
    return f"{value:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def _share_text(values: list[float]) -> str:
    est = _share(np.array(values))
    return _fmt(est.value, est.low, est.high)


def _comm_group(comm: str) -> str | None:
    """The group of a process name (perf's comm: threads of one process may differ)."""
    return next((key for key, _label in COMM_GROUPS if comm.startswith(key)), None)


def _switch_figures(store: Store, run_id: str) -> dict[str, Any]:
    trials = load_profiles(store, run_id).trials
    own: dict[str, list[float]] = defaultdict(lambda: [0.0] * len(trials))
    own_dp: dict[str, list[float]] = defaultdict(lambda: [0.0] * len(trials))
    total: dict[str, list[float]] = defaultdict(lambda: [0.0] * len(trials))
    comms: dict[str, list[float]] = defaultdict(lambda: [0.0] * len(trials))
    samples = []
    for i, t in enumerate(trials):
        o, tt = _shares(t.profile)
        for f, v in o.items():
            own[f.label][i] = 100.0 * v
        for f, v in tt.items():
            total[f.name][i] = max(total[f.name][i], 100.0 * v)
        n = t.profile.samples
        samples.append(n)
        for stack, count in t.profile.stacks.items():
            group = _comm_group(stack[0].name)
            if group:
                comms[group][i] += 100.0 * count / n
                if len(stack) > 1:
                    own_dp[stack[-1].label][i] += 100.0 * count / n
    counters: dict[str, str] = {}
    for metric in ("profile.softirq_net_rx", "profile.softirq_net_tx"):
        values = np.array([s.value for s in store.samples(run_id, metric=metric)
                           if s.value is not None], dtype=float)
        ci = mean_interval(values, 0.95, Domain.REAL)
        counters[metric] = _fmt(float(np.mean(values)), ci.low, ci.high, 0) if values.size \
            else "none"
    top = sorted(own.items(), key=lambda kv: -float(np.mean(kv[1])))[:TOP_SELF]
    top_dp = sorted(own_dp.items(), key=lambda kv: -float(np.mean(kv[1])))[:TOP_SELF]
    return {"trials": len(trials), "samples": samples,
            "top": [(name, _share_text(v)) for name, v in top],
            "top_dp": [(name, _share_text(v)) for name, v in top_dp],
            "comms": {k: _share_text(comms[k]) if k in comms else "0.0" for k, _ in COMM_GROUPS},
            "paths": {f: _share_text(total[f]) if f in total else "0.0"
                      for f in PATH_FUNCTIONS},
            "counters": counters}


def _pair_figures(document: dict[str, Any]) -> dict[str, Any]:
    explanation = document["explain"]["explanations"][0]
    ranked = []
    for f in explanation["functions"][:TOP_RANKED]:
        name = f["function"] + ("" if f["kind"] in ("user", "unresolved") else f" [{f['kind']}]")
        ranked.append((name,
                       _fmt(*(f["self_base_pct"][k] for k in ("value", "ci_low", "ci_high"))),
                       _fmt(*(f["self_new_pct"][k] for k in ("value", "ci_low", "ci_high"))),
                       _fmt(*(f["self_diff_pp"][k] for k in ("value", "ci_low", "ci_high"))),
                       _fmt(*(f["total_diff_pp"][k] for k in ("value", "ci_low", "ci_high")))))
    counters = [(c["metric"], f"{c['mean_base']:.0f} → {c['mean_new']:.0f}",
                 _fmt(c["ratio"], c["ci_low"], c["ci_high"], 2), c["verdict"])
                for c in explanation["counters"]]
    return {"ranked": ranked, "counters": counters, "scope": explanation["scope"],
            "unresolved": (explanation["unresolved_base_pct"], explanation["unresolved_new_pct"])}


def vswitch(store_path: Path) -> None:
    work = store_path.parent
    work.mkdir(parents=True, exist_ok=True)
    runs: dict[str, str] = {}
    for switch in SWITCHES:
        spec = work / f"{switch}.yaml"
        spec.write_text(SPEC.format(switch=switch))
        done = _virtbench("run", "-q", "-s", str(store_path), str(spec))
        if done.returncode != 0:
            print(f"{switch}: run exited {done.returncode}\n{done.stderr[-2000:]}", file=sys.stderr)
        store = Store(str(store_path))
        mine = [r for r in store.runs() if r.experiment == f"explain-s001-{switch}"]
        if mine:
            runs[switch] = max(mine, key=lambda r: r.started_at).id
        print(f"{switch}: run {runs.get(switch)}", file=sys.stderr)
    store = Store(str(store_path))
    figures = {s: _switch_figures(store, runs[s]) for s in SWITCHES if s in runs}
    pairs: dict[tuple[str, str, str], dict[str, Any]] = {}
    for base, new in PAIRS:
        if base not in runs or new not in runs:
            continue
        # system: every sample; workload: the transfer's processes and the lab's daemons
        # (the iperf3 and irtt servers, ovs-vswitchd)
        for scope in ("system", "workload"):
            done = _virtbench("compare", "-s", str(store_path), runs[base], runs[new],
                              "--explain", "--json", "--explain-scope", scope)
            (work / f"compare-{base}-{new}-{scope}.json").write_text(done.stdout)
            if done.returncode not in (0, 1):
                print(f"compare {base} {new} exited {done.returncode}\n{done.stderr[-2000:]}",
                      file=sys.stderr)
                continue
            pairs[(base, new, scope)] = _pair_figures(json.loads(done.stdout))
    body = _markdown(runs, figures, pairs, store_path)
    print(body)
    record(SECTION, "python benchmarks/explain_studies.py vswitch", body)


def _markdown(runs: dict[str, str], figures: dict[str, dict[str, Any]],
              pairs: dict[tuple[str, str, str], dict[str, Any]], store_path: Path) -> str:
    lines = [
        "Study 001 as a user gets it: one profiled `virtbench run` per switch (vswitch lab, "
        "net.qos-transfer, 3 s transfers, 10 ms probes, no background traffic, 3 repetitions, "
        "no warm-up, `profile: {frequency_hz: 99}`, scope system), then "
        "`virtbench compare BASE NEW --explain --json --explain-scope system` per pair, and "
        "the same at scope workload (the transfer's processes and the lab's daemons: the "
        "iperf3 and irtt servers, ovs-vswitchd). No "
        "openvswitch kernel module here: `ovs` is OVS's userspace (netdev) datapath, `ovs-dpdk` "
        "DPDK with its PMD thread (af_packet vdevs on the lab's veths). Shares are of every "
        "sample of the whole machine (2 CPUs, idle included), with whatever else ran on it; "
        "mean over trials [95 % interval, the explanation's].",
        "",
        "Runs: " + ", ".join(f"{s} `{r}`" for s, r in runs.items()) + ".",
        "",
        "Largest self shares (% of all samples):",
        "",
        "| switch | rank | function | self share % [95 % CI] |",
        "|---|---:|---|---|",
    ]
    for switch, fig in figures.items():
        for rank, (name, share) in enumerate(fig["top"], 1):
            lines.append(f"| {switch} | {rank} | `{name}` | {share} |")
    lines += ["", "Largest self shares among the data path's samples (stacks of the processes "
              "of the next table: the switch's threads, softirq and worker threads, iperf3, irtt, "
              "idle), in % of all samples, so other processes of the machine drop out:", "",
              "| switch | rank | function | self share % [95 % CI] |", "|---|---:|---|---|"]
    for switch, fig in figures.items():
        for rank, (name, share) in enumerate(fig["top_dp"], 1):
            lines.append(f"| {switch} | {rank} | `{name}` | {share} |")
    lines += ["", "Samples per process name (% of all samples [95 % CI]):", "",
              "| process | " + " | ".join(figures) + " |",
              "|---|" + "---|" * len(figures)]
    for key, label in COMM_GROUPS:
        lines.append(f"| `{label}` | " + " | ".join(f["comms"][key] for f in figures.values())
                     + " |")
    lines += ["", "Packet-path functions, total share (% of all samples with the function on "
              "the stack [95 % CI]):", "",
              "| function | " + " | ".join(figures) + " |", "|---|" + "---|" * len(figures)]
    for fn in PATH_FUNCTIONS:
        lines.append(f"| `{fn}` | " + " | ".join(f["paths"][fn] for f in figures.values())
                     + " |")
    lines += ["", "Softirqs raised on the host per trial (/proc/softirqs, summed over CPUs; "
              "mean [95 % t interval]):", "",
              "| counter | " + " | ".join(figures) + " |", "|---|" + "---|" * len(figures)]
    for metric in ("profile.softirq_net_rx", "profile.softirq_net_tx"):
        lines.append(f"| `{metric}` | " + " | ".join(f["counters"][metric]
                                                      for f in figures.values()) + " |")
    lines += ["", "Samples per trial: " + "; ".join(
        f"{s} {', '.join(str(n) for n in f['samples'])}" for s, f in figures.items()) + "."]
    for (base, new, scope), pair in pairs.items():
        lines += ["", f"`compare {base} {new} --explain --explain-scope {scope}` (scope "
                  f"{pair['scope']}; unresolved leaves {pair['unresolved'][0]:.1f} % → "
                  f"{pair['unresolved'][1]:.1f} %), first {TOP_RANKED} of its ranking:", "",
                  "| function | self BASE % | self NEW % | Δ self pp | Δ total pp |",
                  "|---|---|---|---|---|"]
        for row in pair["ranked"]:
            lines.append(f"| `{row[0]}` | " + " | ".join(row[1:]) + " |")
        if pair["counters"]:
            lines.append("")
            lines.append("Counters compare found changed: " + "; ".join(
                f"`{m}` {means} (NEW/BASE {ratio}, {verdict})"
                for m, means, ratio, verdict in pair["counters"]) + ".")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="study", required=True)
    vs = sub.add_parser("vswitch", help="study 001: linux-bridge vs OVS vs OVS-DPDK")
    vs.add_argument("--store", type=Path, default=None,
                    help="store file (default: a new one in a temporary folder)")
    args = parser.parse_args()
    store = args.store or Path(tempfile.mkdtemp(prefix="vb-bench-explain-")) / "store.db"
    if args.study == "vswitch":
        vswitch(store)


if __name__ == "__main__":
    main()
