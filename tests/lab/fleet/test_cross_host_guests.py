"""Lab cross-host with endpoints: guests, on two SSH hosts (network namespaces with their own
sshd): a TCG guest of the net image on each host, bridged onto the hosts' network, one 1 s
net.qos-transfer from the client guest to the server guest, and the hosts as they were after
the run (no bridge, tap, domain, libvirtd; eth0 holding the host's address again). First a
guest address off the hosts' network: refused naming it, the other host's bridge removed."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from images import cache_dir
from sshhosts import SshFleet, SshHost

from virtbench.labs.cleanup import clean_leftovers
from virtbench.labs.lab_contract import Manifest, lab_root
from virtbench.labs.net.crosshost import CrossHostLab
from virtbench.labs.net.crosshost_guests import RoleGuest, new_session, new_tag
from virtbench.plugins import all_labs
from virtbench.store import Store
from virtbench.targets.local import NetnsTarget
from virtbench.targets.ssh import SSHTarget

pytestmark = [pytest.mark.lab, pytest.mark.slow, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[3]
VIRTBENCH = str(REPO / ".venv" / "bin" / "virtbench")
# The net image vswitch-guests builds (tests/lab/guest), cached by content; found by both
# namespace hosts at the same path.
CACHE = cache_dir("virtbench-guest/net-image")
EXPERIMENT = """\
name: cross-host-guests
lab:
  kind: cross-host
  params:
    roles: {{server: h2, client: h1}}
    endpoints: guests
    guest_addresses: {{server: 10.77.0.20/24, client: {client}}}
    guest_image_cache: {cache}
baseline: base
variants: [{{name: base, knobs: {{}}}}]
workloads:
  - {{name: net.qos-transfer, params: {{duration_s: 1}}}}
repetitions: 1
warmup: 0
"""


def _in(host: SshHost, *argv: str) -> str:
    return subprocess.run(["ip", "netns", "exec", host.namespace, *argv], capture_output=True,
                          text=True, timeout=60).stdout


def _as_before(host: SshHost) -> dict[str, object]:
    """What of the lab is left on ``host``: links, processes; where its address is."""
    links = [line.split(": ")[1].split("@")[0] for line in _in(host, "ip", "-o", "link")
             .splitlines()]
    pids = _in(host, "ip", "netns", "pids", host.namespace).split()
    comms = {Path(f"/proc/{p}/comm").read_text().strip() for p in pids
             if Path(f"/proc/{p}/comm").exists()}
    eth0 = json.loads(_in(host, "ip", "-j", "addr", "show", "dev", "eth0"))[0]
    return {"ours": [name for name in links if name.startswith("vbxh")],
            "daemons": sorted(comms & {"libvirtd", "qemu-system-x86_64", "qemu-system-x86"}),
            "eth0": [a["local"] for a in eth0["addr_info"] if a["family"] == "inet"],
            "eth0 master": eth0.get("master")}


def _run(tmp_path: Path, fleet: SshFleet, client: str) -> subprocess.CompletedProcess[str]:
    experiment, inventory = tmp_path / "exp.yaml", tmp_path / "inventory.yaml"
    experiment.write_text(EXPERIMENT.format(client=client, cache=CACHE))
    inventory.write_text(fleet.inventory_yaml())
    return subprocess.run(
        [VIRTBENCH, "run", str(experiment), "--hosts", str(inventory), "--store",
         str(tmp_path / "fleet.db"), "--netns", fleet.controller], capture_output=True,
        text=True, timeout=800)


def test_qos_transfer_between_guests_on_two_hosts(tmp_path: Path, two_hosts: SshFleet) -> None:
    h1, h2 = two_hosts.hosts
    before = {h.name: _as_before(h) for h in (h1, h2)}
    assert before["h1"]["eth0"] == [h1.address] and before["h2"]["eth0"] == [h2.address]

    # Off the hosts' network: refused naming the parameter; h2's bridge (made first) is gone.
    sessions = set(Path("/tmp").glob("vbxh*"))
    (tmp_path / "bad").mkdir()
    bad = _run(tmp_path / "bad", two_hosts, "10.78.0.21/24")
    assert bad.returncode != 0
    said = " ".join((bad.stdout + bad.stderr).replace("│", " ").split())  # the table's cells
    assert "guest_addresses.client 10.78.0.21/24 is not on h1's network 10.77.0.0/24" in said, \
        said
    assert {h.name: _as_before(h) for h in (h1, h2)} == before

    result = _run(tmp_path, two_hosts, "10.77.0.21/24")
    assert result.returncode == 0, result.stderr + result.stdout
    store = Store(str(tmp_path / "fleet.db"))
    (run,) = store.runs()
    assert run.host == "h1" and run.status == "complete"
    throughput = [s.value for s in store.samples(run.id) if s.metric == "throughput_mbps"]
    assert len(throughput) == 1 and throughput[0] and throughput[0] > 0
    # iperf3 ran in the client guest towards the server guest, over the hosts' bridges
    (iperf3,) = [json.loads(a["content"]) for a in store.artifacts(run.id)
                 if a["name"].endswith("iperf3.json")]
    start = iperf3["start"]["connected"][0]
    assert (start["local_host"], start["remote_host"]) == ("10.77.0.21", "10.77.0.20")
    (realisation,) = store.realisations(run.id)
    settings = realisation["settings"]
    assert settings["lab.server"].startswith("h2 (") and "10.77.0.20" in settings["lab.server"]
    assert settings["lab.client"].startswith("h1 (") and "10.77.0.21" in settings["lab.client"]
    # both hosts as they were: no bridge, tap, libvirtd or QEMU; eth0 has its address back
    assert {h.name: _as_before(h) for h in (h1, h2)} == before
    assert not list((tmp_path / "labs").glob("*.json"))  # the manifest went with its objects
    assert set(Path("/tmp").glob("vbxh*")) == sessions  # the guests' session folders too


def test_lab_clean_gives_a_crashed_runs_host_its_interface_back(
        tmp_path: Path, two_hosts: SshFleet) -> None:
    """A run that died with its bridge up on h2: lab clean reaches h2 again from
    the manifest (its ssh spec) and gives eth0 its address back. No guest: none is booted."""
    h2 = two_hosts.hosts[1]
    before = _as_before(h2)
    host = SSHTarget(h2.address, user="root", identity_file=str(two_hosts.client_key),
                     known_hosts=str(two_hosts.known_hosts), via=NetnsTarget(two_hosts.controller))
    tag = new_tag("server")
    guest = RoleGuest("server", "h2", host, h2.address, "10.77.0.20/24", tag, new_session(tag))
    guest.take_interface(Manifest(lab_root() / f"{tag}.json", CrossHostLab.name))
    host.close()  # the run is gone; its bridge stays
    crashed = _as_before(h2)
    assert crashed["ours"] == [guest.bridge] and crashed["eth0"] == []
    assert crashed["eth0 master"] == guest.bridge
    outcome = clean_leftovers(all_labs())  # `virtbench lab clean`, in this (owning) process
    assert outcome.complete, outcome.events
    assert [e.text for e in outcome.events] == [
        f"removed guest {guest.domain} and bridge {guest.bridge} on h2 (eth0 given back)"]
    assert _as_before(h2) == before
    assert not list(lab_root().glob("*.json")) and not guest.session.exists()
