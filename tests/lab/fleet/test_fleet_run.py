"""One experiment on three real SSH hosts (namespaces with their own sshd) into one store."""

from __future__ import annotations

import collections
import re
import subprocess
import threading
import time
from pathlib import Path

import pytest
from sshhosts import SshFleet
from waits import communicate, join

from virtbench.fleet import FleetHost, FleetRunner, load_inventory, parse_inventory
from virtbench.fleet.drive import FleetOutcome
from virtbench.spec import load_experiment
from virtbench.store import Store

pytestmark = [pytest.mark.lab, pytest.mark.slow, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[3]
VIRTBENCH = str(REPO / ".venv" / "bin" / "virtbench")

EXPERIMENT = """\
name: fleet-test
seed: 7
baseline: quick
variants:
  - {name: quick, knobs: {}}
  - {name: slow, knobs: {}}
workloads:
  - name: exec.command
    params: {argv: [sleep, "SLEEP"]}
repetitions: REPS
"""


def _experiment(tmp_path: Path, reps: int, sleep: float = 0.05) -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(EXPERIMENT.replace("REPS", str(reps)).replace("SLEEP", str(sleep)))
    return path


def _inventory(tmp_path: Path, fleet: SshFleet) -> Path:
    path = tmp_path / "inventory.yaml"
    path.write_text(fleet.inventory_yaml())
    return path


def _samples_per_host(store: Store, outcome: FleetOutcome) -> dict[str, list[tuple[str, int]]]:
    return {h.host: [(s.variant, s.repetition) for s in store.samples(h.run_id)]
            for h in outcome.hosts}


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_three_hosts_every_sample_once_and_report_compares_them(
        tmp_path: Path, three_hosts: SshFleet, backend: str,
        request: pytest.FixtureRequest) -> None:
    exp_path, inventory = _experiment(tmp_path, 4), _inventory(tmp_path, three_hosts)
    db = tmp_path / "fleet.db"
    location = str(db) if backend == "sqlite" else request.getfixturevalue("postgres_url")
    result = subprocess.run(
        [VIRTBENCH, "run", str(exp_path), "--hosts", str(inventory), "--store", location,
         "--netns", three_hosts.controller], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr + result.stdout
    store = Store(location)
    fleet_id = re.search(r"fleet id (\w+)", result.stderr).group(1)  # type: ignore[union-attr]
    record = store.load_state(f"fleet/{fleet_id}")
    assert record is not None, result.stderr
    runs = [store.run(h["run_id"]) for h in record["hosts"].values()]
    assert sorted(r.host for r in runs) == ["h1", "h2", "h3"]
    for run in runs:
        assert run.status == "complete"
        address = next(h.address for h in three_hosts.hosts if h.name == run.host)
        assert run.target == f"ssh:root@{address}:22"
        pairs = [(s.variant, s.repetition) for s in store.samples(run.id)]
        assert sorted(pairs) == sorted({(v, r) for v in ("quick", "slow") for r in range(4)})
        # each host's facts were collected on that host (its own namespace's address)
        before = [f for f in store.facts(run.id) if f[1] == "before"]
        assert len(before) == 1
    # every host has its own randomised order: the order differs between some hosts
    orders = {r.host: [(t["variant"], t["repetition"]) for t in
                       sorted(store.trials(r.id), key=lambda t: t["order_index"])]
              for r in runs}
    assert len({tuple(o) for o in orders.values()}) > 1
    # the report shows the three hosts side by side (labelled with their inventory names)
    for name in ("h1/quick", "h2/quick", "h3/slow", "Hosts side by side"):
        assert name in result.stdout
    listed = subprocess.run([VIRTBENCH, "hosts", "runs", fleet_id, "--store", location],
                            capture_output=True, text=True, check=True, timeout=300)
    assert sorted(line.split("\t")[:2] for line in listed.stdout.splitlines()) == sorted(
        [r.id, r.host] for r in runs)
    # no credential in the store: neither the key's path nor its content
    if backend == "sqlite":
        key_text = three_hosts.client_key.read_text()
        dump = db.read_bytes()
        assert str(three_hosts.client_key).encode() not in dump
        assert key_text.encode()[:60] not in dump
    assert "id_ed25519" not in str(record)


def test_killed_sshd_fails_that_host_only_and_resume_finishes_it(
        tmp_path: Path, three_hosts: SshFleet) -> None:
    exp_path = _experiment(tmp_path, 12, sleep=0.15)
    exp, text = load_experiment(exp_path)
    hosts = load_inventory(_inventory(tmp_path, three_hosts))
    db = str(tmp_path / "fleet.db")
    watcher = Store(db)  # the schema exists before the fleet's threads open it
    messages: list[tuple[str, str]] = []
    runner = FleetRunner(db, exp, text, str(exp_path), hosts, netns=three_hosts.controller,
                         say=lambda h, m: messages.append((h, m)))
    outcomes: list[FleetOutcome] = []
    thread = threading.Thread(target=lambda: outcomes.append(runner.run()), daemon=True)
    thread.start()
    victim = three_hosts.hosts[1]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # kill h2's sshd once it has measured a few trials
        h2 = [r for r in watcher.runs() if r.host == victim.name]
        if h2 and len(watcher.trials(h2[0].id)) >= 3:
            break
        time.sleep(0.05)
    victim.kill_sshd()
    join(thread, 300, "the fleet run")
    outcome = outcomes[0]
    by_host = {h.host: h for h in outcome.hosts}
    assert by_host["h1"].status == by_host["h3"].status == "complete"
    assert by_host["h2"].status == "failed"
    failed = [t for t in watcher.trials(by_host["h2"].run_id) if t["status"] == "failed"]
    # ssh's own failure (exit 255) with the host's address and ssh's reason
    assert failed and all("exited 255" in t["error"] and victim.address in t["error"]
                          for t in failed), [t["error"] for t in failed]
    assert any(reason in t["error"] for t in failed
               for reason in ("Connection refused", "closed", "Broken pipe", "reset")), [
        t["error"][-300:] for t in failed]
    assert "trials failed in a row" in watcher.run(by_host["h2"].run_id).stop_reason
    measured_before = len(watcher.samples(by_host["h2"].run_id))
    assert 0 < measured_before < 24

    victim.start_sshd()
    resumed = FleetRunner(db, exp, text, str(exp_path), hosts, netns=three_hosts.controller)
    again = resumed.run(resume_fleet_id=outcome.fleet_id)
    assert {h.host: h.status for h in again.hosts} == {"h1": "complete", "h2": "complete",
                                                       "h3": "complete"}
    assert {h.host: h.reason for h in again.hosts}["h1"] == "already complete"
    for host in outcome.hosts:  # every sample exactly once, on every host
        pairs = [(s.variant, s.repetition) for s in watcher.samples(host.run_id)]
        counts = collections.Counter(pairs)
        assert set(counts) == {(v, r) for v in ("quick", "slow") for r in range(12)}
        assert max(counts.values()) == 1


def test_unknown_host_key_is_refused_with_how_to_add_it(
        tmp_path: Path, three_hosts: SshFleet) -> None:
    lines = three_hosts.known_hosts.read_text().splitlines()
    three_hosts.known_hosts.write_text("\n".join(lines[1:]) + "\n")  # h1's key is unknown
    exp_path = _experiment(tmp_path, 2)
    db = tmp_path / "fleet.db"
    result = subprocess.run(
        [VIRTBENCH, "run", str(exp_path), "--hosts", str(_inventory(tmp_path, three_hosts)),
         "--store", str(db), "--netns", three_hosts.controller],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 1
    store = Store(str(db))
    by_host = {r.host: r for r in store.runs()}
    assert by_host["h1"].status == "failed"
    assert "host key" in by_host["h1"].stop_reason and "unknown" in by_host["h1"].stop_reason
    assert f"ssh-keyscan {three_hosts.hosts[0].address} >> {three_hosts.known_hosts}" in \
        by_host["h1"].stop_reason
    assert "ssh-keyscan" in result.stderr
    assert by_host["h2"].status == by_host["h3"].status == "complete"
    assert three_hosts.known_hosts.read_text().count("\n") == 2  # nothing was added


@pytest.mark.parametrize("agent_python", ["python3", "no-such-python-vb"])
def test_ssh_batch_returns_each_commands_output_and_exit_code(
        three_hosts: SshFleet, agent_python: str) -> None:
    from virtbench.targets.local import NetnsTarget
    from virtbench.targets.ssh import SSHTarget

    host = load_inventory_text(three_hosts)[0]
    target = SSHTarget(host.address, user=host.user, port=host.port,
                       identity_file=host.key_file, known_hosts=host.known_hosts,
                       via=NetnsTarget(three_hosts.controller), agent_python=agent_python)
    try:
        results = target.run_batch([["echo", "one two"], ["sh", "-c", "echo err >&2; exit 3"],
                                    ["no-such-binary-vb"], ["printf", "no newline"]])
        env = target.run(["sh", "-c", 'echo "$A ${HOME-unset}"; cat; pwd'],
                         env={"A": "x y", "HOME": None}, cwd="/tmp", input="in")
        missing = target.run(["no-such-binary-vb"], check=False)
        shell = target.which("sh")
    finally:
        target.close()
    # the agent served it, or (no such python) one ssh session per command did, saying why
    assert bool(target.agent_problem) == (agent_python != "python3"), target.agent_problem
    assert [(r.returncode, r.stdout, r.stderr) for r in results[:2]] == [
        (0, "one two\n", ""), (3, "", "err\n")]
    assert results[2].returncode == 127
    assert results[3].stdout == "no newline"
    assert env.stdout == "x y unset\nin/tmp\n"
    assert missing.returncode == 127
    assert shell is not None and shell.endswith("/sh")


def load_inventory_text(fleet: SshFleet) -> list[FleetHost]:
    return parse_inventory(fleet.inventory_yaml(), "inventory")


def test_sigterm_stops_every_host_process_as_interrupted_and_resume_finishes(
        tmp_path: Path, three_hosts: SshFleet) -> None:
    exp_path, inventory = _experiment(tmp_path, 10, sleep=0.2), _inventory(tmp_path, three_hosts)
    db = str(tmp_path / "fleet.db")
    watcher = Store(db)
    command = [VIRTBENCH, "run", str(exp_path), "--hosts", str(inventory), "--store", db,
               "--netns", three_hosts.controller]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:  # every host has measured something
        runs = watcher.runs()
        if len(runs) == 3 and all(watcher.trials(r.id) for r in runs):
            break
        time.sleep(0.05)
    proc.terminate()
    _, stderr = communicate(proc, 120)
    assert proc.returncode == 130, stderr
    runs = watcher.runs()
    assert {r.host: r.status for r in runs} == {"h1": "interrupted", "h2": "interrupted",
                                                "h3": "interrupted"}, stderr
    assert all(len(watcher.samples(r.id)) < 20 for r in runs)
    # each host's process ended its agent: no command of ours is left on any host
    for host in three_hosts.hosts:
        pids = subprocess.run(["ip", "netns", "pids", host.namespace], capture_output=True,
                              text=True, timeout=60).stdout.split()
        commands = [Path(f"/proc/{pid}/comm").read_text().strip() for pid in pids
                    if Path(f"/proc/{pid}/comm").exists()]
        assert "sleep" not in commands, commands
    resumed = subprocess.run([*command, "--resume", "latest"], capture_output=True, text=True,
                             timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    for run in watcher.runs():
        assert run.status == "complete"
        counts = collections.Counter((s.variant, s.repetition) for s in watcher.samples(run.id))
        assert set(counts) == {(v, r) for v in ("quick", "slow") for r in range(10)}
        assert max(counts.values()) == 1
