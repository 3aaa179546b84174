"""Are two runs comparable? The facts and settings that differ between them.

Compared: CPU model and flags, kernel, OS, hypervisor, memory, tool and Python package versions
(from the facts captured before each run), the experiment file's hash, lab and target settings,
the parameters of each shared workload and the knobs of each shared variant. Differences in
workload parameters or CPU model are *strict*: `--strict` refuses to compare across them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from virtbench.decide.runs import RunData

__all__ = ["Difference", "differences", "differences_many", "strict_differences"]

FLAG_LIST_MAX = 8  # flags named in a difference before "and N more"


@dataclass(frozen=True)
class Difference:
    what: str
    """e.g. 'CPU model', 'kernel', 'tool qemu', 'workload cpu.crc32c params'"""
    base: str
    new: str
    strict: bool = False
    """refused by --strict (workload parameters, CPU model)"""

    def as_dict(self) -> dict[str, Any]:
        return {"what": self.what, "base": self.base, "new": self.new, "strict": self.strict}


def _text(value: Any) -> str:
    if value is None or value == "":
        return "–"
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)


def _lab_and_target(spec_yaml: str) -> dict[str, Any]:
    """The experiment's lab and target sections, read without validating the whole spec (an
    exported run may name plugins this installation lacks)."""
    from virtbench.inputs.yamlfile import YamlInputError, load_yaml

    try:  # bounded: an imported run's text may be hostile (nested aliases)
        tree = load_yaml(spec_yaml, "the stored experiment", typ="safe") if spec_yaml else None
    except YamlInputError:
        return {}
    if not isinstance(tree, dict):
        return {}
    return {key: tree.get(key) for key in ("lab", "target") if tree.get(key) is not None}


def _flag_diff(base: list[str], new: list[str]) -> Difference | None:
    only_base = sorted(set(base) - set(new))
    only_new = sorted(set(new) - set(base))
    if not only_base and not only_new:
        return None

    def named(flags: list[str]) -> str:
        more = len(flags) - FLAG_LIST_MAX
        return " ".join(flags[:FLAG_LIST_MAX]) + (f" and {more} more" if more > 0 else "")

    return Difference("CPU flags", f"only here: {named(only_base)}" if only_base else "–",
                      f"only here: {named(only_new)}" if only_new else "–")


def _cpu_diffs(bc: dict[str, Any], nc: dict[str, Any]) -> list[Difference]:
    out: list[Difference] = []
    if bc.get("model") != nc.get("model"):
        out.append(Difference("CPU model", _text(bc.get("model")), _text(nc.get("model")),
                              strict=True))
    for key, label in (("logical_cpus", "logical CPUs"), ("microcode", "CPU microcode")):
        if bc.get(key) != nc.get(key):
            out.append(Difference(label, _text(bc.get(key)), _text(nc.get(key))))
    flags = _flag_diff(list(bc.get("flags", [])), list(nc.get("flags", [])))
    if flags is not None:
        out.append(flags)
    return out


def _mapping_diffs(label: str, base: dict[str, Any], new: dict[str, Any]) -> list[Difference]:
    """'LABEL KEY' for each key whose value differs (or is on one side only), by key."""
    return [Difference(f"{label} {key}", _text(base.get(key)), _text(new.get(key)))
            for key in sorted(set(base) | set(new)) if base.get(key) != new.get(key)]


def _facts_diffs(base: dict[str, Any], new: dict[str, Any]) -> list[Difference]:
    def section(facts: dict[str, Any], name: str) -> dict[str, Any]:
        return facts.get(name, {}) or {}

    out = _cpu_diffs(section(base, "cpu"), section(new, "cpu"))
    for key, label in (("kernel", "kernel"), ("os", "OS")):
        if base.get(key) != new.get(key):
            out.append(Difference(label, _text(base.get(key)), _text(new.get(key))))
    out += _mapping_diffs("hypervisor", section(base, "hypervisor"), section(new, "hypervisor"))
    bm, nm = section(base, "memory").get("MemTotal"), section(new, "memory").get("MemTotal")
    if bm != nm:
        out.append(Difference("memory", _text(bm), _text(nm)))
    for name, label in (("tools", "tool"), ("python_packages", "Python package")):
        out += _mapping_diffs(label, section(base, name), section(new, name))
    return out


def differences(base: RunData, new: RunData) -> list[Difference]:
    """What differs between two runs' facts and settings (empty: comparable as far as known)."""
    out = _facts_diffs(base.facts, new.facts)
    if base.digest != new.digest:
        out.append(Difference("experiment file hash", base.digest, new.digest))
    bl, nl = _lab_and_target(base.spec_yaml), _lab_and_target(new.spec_yaml)
    for key in ("lab", "target"):
        if bl.get(key) != nl.get(key):
            out.append(Difference(f"{key} settings", _text(bl.get(key)), _text(nl.get(key))))
    for wid in [w for w in base.workloads if w in new.workloads]:
        (bname, bparams), (nname, nparams) = base.workloads[wid], new.workloads[wid]
        if bname != nname or bparams != nparams:
            out.append(Difference(f"workload {wid} params", _text(bparams), _text(nparams),
                                  strict=True))
    for name in [v for v in base.variants if v in new.variants]:
        if base.variants[name] != new.variants[name]:
            out.append(Difference(f"variant {name} knobs", _text(base.variants[name]),
                                  _text(new.variants[name])))
    return out


def strict_differences(diffs: list[Difference]) -> list[Difference]:
    return [d for d in diffs if d.strict]


def differences_many(runs: list[RunData]) -> dict[str, list[Difference]]:
    """Each later run's differences from the first (run id -> differences; only non-empty)."""
    out: dict[str, list[Difference]] = {}
    for run in runs[1:]:
        diffs = differences(runs[0], run)
        if diffs:
            out[run.id] = diffs
    return out
