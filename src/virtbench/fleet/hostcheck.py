"""`virtbench hosts check`: per host, reachable? tools there? facts that break comparability?"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from virtbench.facts import collect_facts
from virtbench.fleet.connect import connect, probe
from virtbench.fleet.inventory import FleetHost
from virtbench.runner import check_experiment
from virtbench.spec.models import Experiment

__all__ = ["COMPARED_FACTS", "HostCheck", "check_hosts", "comparability_diff", "fact_value"]

# Facts that make two hosts' numbers incomparable when they differ (dotted paths into
# collect_facts' output; "tools" and "python_packages" are compared entry by entry).
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


def check_hosts(exp: Experiment, hosts: Sequence[FleetHost], *, known_hosts: str | None = None,
                netns: str | None = None) -> list[HostCheck]:
    """Every host checked at once: reachability, the experiment's problems there, its facts."""
    results: dict[str, HostCheck] = {}

    def one(host: FleetHost) -> None:
        target = connect(host, known_hosts=known_hosts, netns=netns)
        try:
            problem = probe(target, host, known_hosts)
            if problem is not None:
                results[host.name] = HostCheck(host.name, False, [problem])
                return
            problems = check_experiment(exp, target=target)
            results[host.name] = HostCheck(host.name, True, problems, collect_facts(target))
        except Exception as exc:  # one host's surprise must not hide the others' answers
            results[host.name] = HostCheck(host.name, False, [f"{type(exc).__name__}: {exc}"])
        finally:
            target.close()

    threads = [threading.Thread(target=one, args=(h,), daemon=True) for h in hosts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [results[h.name] for h in hosts]
