"""System facts snapshots, stored with every run before and after."""

from virtbench.facts.collect import collect_facts, parse_cpuinfo, parse_meminfo

__all__ = ["collect_facts", "parse_cpuinfo", "parse_meminfo"]
