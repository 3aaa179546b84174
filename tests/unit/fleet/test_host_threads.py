"""Hosts driven as threads of one process: a Ctrl-C while waiting for them still lets every
host finish its current trial and report (no ssh: each host's drive is a stand-in)."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from virtbench.fleet import FleetRunner
from virtbench.fleet.drive import HostOutcome
from virtbench.fleet.inventory import FleetHost
from virtbench.spec.loader import parse_experiment

EXPERIMENT = """\
name: threads
variants: [{name: a, knobs: {}}]
workloads: [{name: exec.command, params: {argv: ["true"]}}]
repetitions: 1
"""


def test_ctrl_c_while_waiting_lets_every_host_thread_finish(
        monkeypatch: pytest.MonkeyPatch) -> None:
    hosts = [FleetHost(f"h{i}", f"10.0.0.{i}") for i in (1, 2, 3)]
    runner = FleetRunner(":memory:", parse_experiment(EXPERIMENT, "t.yaml"), EXPERIMENT,
                         "t.yaml", hosts)

    def drive(host: FleetHost, run_id: str, resume: bool) -> HostOutcome:
        while not runner.stop.is_set():  # "a trial": until asked to stop
            time.sleep(0.01)
        time.sleep(0.3 if host.name == "h1" else 0.05)  # h1's trial ends last
        return HostOutcome(host.name, run_id, "interrupted", "interrupted")

    monkeypatch.setattr(runner, "_drive_safely", drive)
    results: dict[str, HostOutcome] = {}
    # Ctrl-C while the main thread waits (Thread.join here marked h1 ended while it ran)
    threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
    with pytest.raises(KeyboardInterrupt):
        runner._in_threads({h.name: h.name for h in hosts}, False, results)
    assert sorted(results) == ["h1", "h2", "h3"]
