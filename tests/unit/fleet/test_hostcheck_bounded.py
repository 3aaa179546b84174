"""`hosts check` waits for each host a bounded time: a host whose check never ends is
reported as not answering, and the other hosts' answers still come (no ssh: stand-ins)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from virtbench.fleet import hostcheck
from virtbench.fleet.inventory import FleetHost
from virtbench.spec.loader import parse_experiment

EXPERIMENT = """\
name: check
variants: [{name: a, knobs: {}}]
workloads: [{name: exec.command, params: {argv: ["true"]}}]
repetitions: 1
"""


class _Target:
    def close(self) -> None:
        pass


def test_a_host_whose_check_never_ends_is_reported_after_the_bound(
        monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()

    def probe(_target: Any, host: FleetHost, _known: str | None) -> str | None:
        if host.name == "silent":
            release.wait(30)  # a host that never answers, until the test ends
        return f"unreachable: {host.address}"

    monkeypatch.setattr(hostcheck, "connect", lambda *_a, **_k: _Target())
    monkeypatch.setattr(hostcheck, "probe", probe)
    hosts = [FleetHost("quick", "10.0.0.1"), FleetHost("silent", "10.0.0.2")]
    try:
        checks = hostcheck.check_hosts(parse_experiment(EXPERIMENT, "t.yaml"), hosts,
                                       timeout_s=0.2)
    finally:
        release.set()
    assert [(c.host, c.reachable, c.problems) for c in checks] == [
        ("quick", False, ["unreachable: 10.0.0.1"]),
        ("silent", False, ["no answer within 0.2 s (check stopped waiting)"])]


def test_a_host_that_cannot_even_be_connected_is_answered_at_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def connect(*_args: Any, **_kwargs: Any) -> _Target:
        raise OSError("no ssh binary")

    monkeypatch.setattr(hostcheck, "connect", connect)
    checks = hostcheck.check_hosts(parse_experiment(EXPERIMENT, "t.yaml"),
                                   [FleetHost("h1", "10.0.0.1")], timeout_s=30)
    assert [(c.host, c.problems) for c in checks] == [("h1", ["OSError: no ssh binary"])]
