"""net.qos-transfer between two real SSH hosts (roles: server and client) over their network."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from sshhosts import SshFleet

from virtbench.store import Store

pytestmark = [pytest.mark.lab, pytest.mark.slow, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[3]
VIRTBENCH = str(REPO / ".venv" / "bin" / "virtbench")
# The receiver capture (tcpdump on h1, started, signalled and its pcap copied back by the
# agent), the sender capture on h2 (sent_count: capture) and the irtt probe's JSON over ssh.
EXPERIMENT = """\
name: cross-host-transfer
lab: {kind: cross-host, params: {roles: {server: h2, client: h1}}}
baseline: base
variants: [{name: base, knobs: {}}]
workloads:
  - {name: net.qos-transfer, params: {duration_s: 1, probe: true, sent_count: capture}}
repetitions: 2
warmup: 0
"""


def test_qos_transfer_runs_from_client_host_to_server_host(
        tmp_path: Path, three_hosts: SshFleet) -> None:
    experiment, inventory = tmp_path / "exp.yaml", tmp_path / "inventory.yaml"
    experiment.write_text(EXPERIMENT)
    inventory.write_text(three_hosts.inventory_yaml())
    db = tmp_path / "fleet.db"
    result = subprocess.run(
        [VIRTBENCH, "run", str(experiment), "--hosts", str(inventory), "--store", str(db),
         "--netns", three_hosts.controller], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr + result.stdout
    store = Store(str(db))
    (run,) = store.runs()  # one run: the client's, with the server as its peer
    assert run.host == "h1" and run.status == "complete"
    throughput = [s.value for s in store.samples(run.id) if s.metric == "throughput_mbps"]
    assert len(throughput) == 2 and all(v and v > 10 for v in throughput)
    # the irtt probe ran on the client host towards the server host's irtt server
    rtt = [s.value for s in store.samples(run.id) if s.metric == "rtt_mean_ms"]
    assert len(rtt) == 2 and all(v and v > 0 for v in rtt)
    # the captures on both hosts: packets at the receiver, the studies' QoS and loss metrics
    for metric in ("capture_packets", "study_loss_pct", "study_jitter_ms"):
        values = [s.value for s in store.samples(run.id) if s.metric == metric]
        assert len(values) == 2 and all(v is not None for v in values), (metric, values)
    assert all(s.value and s.value > 100 for s in store.samples(run.id)
               if s.metric == "capture_packets")
    h1, h2 = three_hosts.hosts[0].address, three_hosts.hosts[1].address
    artifacts = {a["name"]: json.loads(a["content"]) for a in store.artifacts(run.id)}
    assert sorted(artifacts) == ["r0-iperf3.json", "r0-irtt.json", "r1-iperf3.json",
                                 "r1-irtt.json"]
    for name, content in artifacts.items():
        if name.endswith("iperf3.json"):
            start = content["start"]["connected"][0]
            assert (start["local_host"], start["remote_host"]) == (h1, h2)
        else:
            assert content["config"]["remote_address"] == f"{h2}:2112"
    (realisation,) = store.realisations(run.id)
    assert "h2" in realisation["settings"]["lab.server"]
    assert "eth0" in realisation["settings"]["lab.client"]
    # the servers on h2 were stopped with the run
    listening = subprocess.run(["ip", "netns", "exec", three_hosts.hosts[1].namespace, "ss",
                                "-Htlnu"], capture_output=True, text=True, timeout=60).stdout
    assert ":5201" not in listening and ":2112" not in listening
    for host in three_hosts.hosts[:2]:  # no capture left running on either host
        pids = subprocess.run(["ip", "netns", "pids", host.namespace], capture_output=True,
                              text=True, timeout=60).stdout.split()
        assert not [pid for pid in pids if Path(f"/proc/{pid}/comm").exists()
                    and Path(f"/proc/{pid}/comm").read_text().strip() == "tcpdump"]
