"""`virtbench hosts check`: per host, reachable? tools there? facts that break comparability?"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from virtbench.facts import collect_facts
from virtbench.fleet.connect import connect, probe
from virtbench.fleet.inventory import FleetHost
from virtbench.runner import Plan, build_plan, check_experiment
from virtbench.spec.models import Experiment
from virtbench.spec.resolve import ResolvedExperiment

__all__ = ["COMPARED_FACTS", "HostCheck", "check_hosts", "comparability_diff", "fact_value"]

# Facts that make two hosts' numbers incomparable when they differ (dotted paths into
# collect_facts' output; "tools" and "python_packages" are compared entry by entry).
CHECK_TIMEOUT_S = 300.0
"""How long ``hosts check`` waits for one host's answer (s): ssh's connect timeouts, the
experiment's checks and facts take seconds; a host still silent then is reported as such."""
COMPARED_FACTS = ("cpu.model", "cpu.count", "hypervisor.kind", "kernel", "os",
                  "memory.MemTotal")


@dataclass
class HostCheck:
    host: str
    reachable: bool
    problems: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.reachable and not self.problems


def fact_value(facts: Mapping[str, Any], path: str) -> Any:
    node: Any = facts
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _flat(facts: Mapping[str, Any]) -> dict[str, Any]:
    flat = {path: fact_value(facts, path) for path in COMPARED_FACTS}
    for group in ("tools", "python_packages"):
        for name, version in dict(facts.get(group) or {}).items():
            flat[f"{group}.{name}"] = version
    return flat


def comparability_diff(facts_by_host: Mapping[str, Mapping[str, Any]],
                       ) -> dict[str, dict[str, Any]]:
    """Fact -> {host: value} for every compared fact whose value differs between hosts."""
    flats = {host: _flat(facts) for host, facts in facts_by_host.items()}
    keys = sorted({k for flat in flats.values() for k in flat})
    diff: dict[str, dict[str, Any]] = {}
    for key in keys:
        values = {host: flat.get(key) for host, flat in flats.items()}
        if len({repr(v) for v in values.values()}) > 1:
            diff[key] = values
    return diff


def check_hosts(exp: Experiment | ResolvedExperiment | Plan, hosts: Sequence[FleetHost], *,
                known_hosts: str | None = None,
                netns: str | None = None, timeout_s: float = CHECK_TIMEOUT_S) -> list[HostCheck]:
    """Every host checked at once: reachability, the experiment's problems there, its facts.
    A host whose check has not ended after ``timeout_s`` is reported unreachable with that
    reason (its thread is left behind; the others' answers are not held up)."""
    plan = exp if isinstance(exp, Plan) else build_plan(exp)  # once, for every host
    results: dict[str, HostCheck] = {}
    lock = threading.Lock()  # a check given up for good: its late answer is dropped

    def one(host: FleetHost) -> None:
        answer = checked(host)
        with lock:
            results.setdefault(host.name, answer)

    def checked(host: FleetHost) -> HostCheck:
        try:
            target = connect(host, known_hosts=known_hosts, netns=netns)
        except Exception as exc:
            return HostCheck(host.name, False, [f"{type(exc).__name__}: {exc}"])
        try:
            problem = probe(target, host, known_hosts)
            if problem is not None:
                answer = HostCheck(host.name, False, [problem])
            else:
                problems = check_experiment(plan, target=target)
                answer = HostCheck(host.name, True, problems, collect_facts(target))
        except Exception as exc:  # one host's surprise must not hide the others' answers
            answer = HostCheck(host.name, False, [f"{type(exc).__name__}: {exc}"])
        finally:
            target.close()
        return answer

    threads = [threading.Thread(target=one, args=(h,), daemon=True) for h in hosts]
    for thread in threads:
        thread.start()
    ends_at = time.monotonic() + timeout_s
    for thread in threads:
        thread.join(max(0.0, ends_at - time.monotonic()))
    with lock:
        for host in hosts:
            results.setdefault(host.name, HostCheck(
                host.name, False, [f"no answer within {timeout_s:g} s (check stopped waiting)"]))
        return [results[h.name] for h in hosts]
