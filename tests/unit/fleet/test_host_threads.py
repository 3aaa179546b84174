"""Hosts driven as threads of one process: a Ctrl-C while waiting for them still lets every
host finish its current trial and report, and a host that does not stop is given up after a
bounded wait (no ssh: each host's drive is a stand-in)."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from virtbench.fleet import FleetRunner
from virtbench.fleet.drive import STOP_TEARDOWN_S, HostOutcome
from virtbench.fleet.inventory import FleetHost
from virtbench.runner.deadline import GRACE_S
from virtbench.spec.loader import parse_experiment

EXPERIMENT = """\
name: threads
variants: [{name: a, knobs: {}}]
workloads: [{name: exec.command, params: {argv: ["true"]}}]
repetitions: 1
"""
NO_STOP_S = 30.0
"""A stand-in trial that is not asked to stop within this time fails its test (no hang)."""


@pytest.fixture(autouse=True)
def sigint_raises() -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt here however pytest was started (a background job or a
    CI runner inherits SIGINT ignored, and the interrupt would then never come)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _runner(hosts: list[FleetHost], **kwargs: Any) -> FleetRunner:
    return FleetRunner(":memory:", parse_experiment(EXPERIMENT, "t.yaml"), EXPERIMENT,
                       "t.yaml", hosts, **kwargs)


def _ctrl_c_in(seconds: float, sig: int = signal.SIGINT) -> threading.Timer:
    timer = threading.Timer(seconds, os.kill, (os.getpid(), sig))
    timer.start()
    return timer


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_ctrl_c_while_waiting_lets_every_host_thread_finish(sig: signal.Signals) -> None:
    hosts = [FleetHost(f"h{i}", f"10.0.0.{i}") for i in (1, 2, 3)]
    runner = _runner(hosts)

    def drive(host: FleetHost, run_id: str, resume: bool) -> HostOutcome:
        if not runner.stop.wait(NO_STOP_S):  # "a trial": until asked to stop
            return HostOutcome(host.name, run_id, "failed", f"no stop within {NO_STOP_S} s")
        time.sleep(0.3 if host.name == "h1" else 0.05)  # h1's trial ends last
        return HostOutcome(host.name, run_id, "interrupted", "interrupted")

    runner._drive_safely = drive  # type: ignore[method-assign]
    results: dict[str, HostOutcome] = {}
    # Ctrl-C (or SIGTERM, stopping as Ctrl-C does) while the main thread waits (Thread.join
    # here marked h1 ended while it ran)
    _ctrl_c_in(0.3, sig)
    with pytest.raises(KeyboardInterrupt):
        runner._in_threads({h.name: h.name for h in hosts}, False, results)
    assert {name: o.reason for name, o in results.items()} == {
        "h1": "interrupted", "h2": "interrupted", "h3": "interrupted"}


def test_a_host_that_does_not_stop_is_given_up_after_the_bound() -> None:
    hosts = [FleetHost("quick", "10.0.0.1"), FleetHost("stuck", "10.0.0.2")]
    said: list[tuple[str, str]] = []
    runner = _runner(hosts, stop_wait_s=0.2)
    runner.say = lambda host, text: said.append((host, text))
    release = threading.Event()  # the stuck host's trial ignores the stop until the test ends

    def drive(host: FleetHost, run_id: str, resume: bool) -> HostOutcome:
        if not runner.stop.wait(NO_STOP_S):
            return HostOutcome(host.name, run_id, "failed", f"no stop within {NO_STOP_S} s")
        if host.name == "stuck":
            release.wait(NO_STOP_S)
            return HostOutcome(host.name, run_id, "interrupted", "late")
        return HostOutcome(host.name, run_id, "interrupted", "interrupted")

    runner._drive_safely = drive  # type: ignore[method-assign]
    results: dict[str, HostOutcome] = {}
    _ctrl_c_in(0.1)
    try:
        with pytest.raises(KeyboardInterrupt):
            runner._in_threads({"quick": "r1", "stuck": "r2"}, False, results)
        reason = ("did not stop within 0.2 s of the interrupt (left running; its lab may need "
                  "`virtbench lab clean`)")
        assert results["quick"] == HostOutcome("quick", "r1", "interrupted", "interrupted")
        assert results["stuck"] == HostOutcome("stuck", "r2", "interrupted", reason)
        assert said == [("stuck", reason)]
    finally:
        release.set()
    late = [t for t in threading.enumerate() if t.name == "fleet-stuck"]
    for thread in late:
        thread.join(NO_STOP_S)
        assert not thread.is_alive(), "the stuck host's thread did not end once released"
    assert results["stuck"].reason == reason  # a late outcome does not overwrite the verdict


def test_the_default_bound_is_the_longest_trial_limit_plus_grace_and_teardown() -> None:
    two = EXPERIMENT.replace("{name: exec.command,", "{name: exec.command, timeout_s: 30,"
                             ).replace("workloads: [", "workloads: [{name: exec.command, id: "
                                       "slow, timeout_s: 600, params: {argv: [\"true\"]}}, ")
    runner = FleetRunner(":memory:", parse_experiment(two, "t.yaml"), two, "t.yaml",
                         [FleetHost("h1", "10.0.0.1")])
    assert runner.stop_wait_s() == 600.0 + GRACE_S + STOP_TEARDOWN_S
    # without timeout_s: the workload's own default
    default = _runner([FleetHost("h1", "10.0.0.1")]).stop_wait_s()
    assert default == 3600.0 + GRACE_S + STOP_TEARDOWN_S
    assert _runner([FleetHost("h1", "10.0.0.1")], stop_wait_s=3.0).stop_wait_s() == 3.0
