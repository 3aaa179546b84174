"""One run as decide needs it, read from the store or straight from an exported file."""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from virtbench.model import Metric, VirtbenchError, parse_better

__all__ = ["RunData", "experiment_digest", "host_fingerprint", "load_run"]

Values = dict[tuple[str, str, str], npt.NDArray[np.float64]]


def experiment_digest(spec_yaml: str) -> str:
    """The experiment file's hash (the one `run --resume` checks): sha256, 16 hex digits."""
    return hashlib.sha256(spec_yaml.encode()).hexdigest()[:16]


def host_fingerprint(host: str, facts: dict[str, Any]) -> str:
    """Host name and CPU model: a run on a re-installed kernel is the same host, a new CPU is
    not. 12 hex digits."""
    cpu = facts.get("cpu", {}) if isinstance(facts.get("cpu"), dict) else {}
    text = f"{host}\n{cpu.get('model', '')}\n{cpu.get('logical_cpus', '')}"
    return hashlib.sha256(text.encode()).hexdigest()[:12]


@dataclass
class RunData:
    """A run's identity, settings, facts and (optionally) its per-trial values."""

    id: str
    experiment: str
    host: str
    started_at: float
    status: str
    spec_yaml: str
    source: str
    """'store' or the exported file's path"""
    variants: dict[str, dict[str, Any]]
    """name -> knobs, in the experiment's order"""
    baseline: str
    workloads: dict[str, tuple[str, dict[str, Any]]]
    """workload id -> (workload name, parameters)"""
    metrics: dict[tuple[str, str], Metric]
    facts: dict[str, Any]
    """the facts captured before the run ({} when none)"""
    values: Values = field(default_factory=dict)
    """(variant, workload id, metric) -> per-trial values"""

    @property
    def digest(self) -> str:
        return experiment_digest(self.spec_yaml)

    @property
    def fingerprint(self) -> str:
        return host_fingerprint(self.host, self.facts)

    @property
    def label(self) -> str:
        return self.id if self.source == "store" else f"{self.id} ({Path(self.source).name})"


def _looks_like_file(ref: str) -> bool:
    return ref.endswith((".json", ".json.gz", ".gz")) or "/" in ref or Path(ref).is_file()


def load_run(ref: str, store: Callable[[], Any], *, with_values: bool = True) -> RunData:
    """``ref`` is an exported file (read directly, nothing imported) or a run reference in the
    store (id, unique prefix, experiment name or 'latest'). ``store`` opens the store lazily, so
    comparing two files never creates a store file."""
    if _looks_like_file(ref):
        path = Path(ref)
        if not path.is_file():
            raise VirtbenchError(f"{ref}: no such file (a run id or an exported file expected)")
        return _from_file(path, with_values)
    return _from_store(store(), ref, with_values)


def _from_store(st: Any, ref: str, with_values: bool) -> RunData:
    info = st.run(ref)
    facts = st.facts(info.id)
    before = next((data for _id, phase, _t, data in facts if phase == "before"),
                  facts[0][3] if facts else {})
    variants = st.variants(info.id)
    metrics = st.metrics(info.id)
    values: Values = {}
    if with_values:  # one index range per group, straight into numpy (the report's fast path)
        for name, _knobs, _b in variants:
            for wid, metric in metrics:
                _reps, group = st.group_values(info.id, name, wid, metric)
                if group.size:
                    values[(name, wid, metric)] = group
    return RunData(
        id=info.id, experiment=info.experiment, host=info.host, started_at=info.started_at,
        status=info.status, spec_yaml=info.spec_yaml, source="store",
        variants={name: knobs for name, knobs, _b in variants}, baseline=info.baseline,
        workloads={wid: (name, params) for wid, name, params in st.workloads(info.id)},
        metrics=metrics, facts=before, values=values)


def _from_file(path: Path, with_values: bool) -> RunData:
    from virtbench.store.portable import read_tables

    tables = read_tables(path)  # the import's checks: a file compared is a file imported
    try:
        (run,) = tables["runs"]
        facts = sorted(tables.get("facts", []), key=lambda f: f["id"])
        before = next((f for f in facts if f["phase"] == "before"), facts[0] if facts else None)
        variants = sorted(tables.get("variants", []), key=lambda v: v["position"])
        workloads = sorted(tables.get("workloads", []), key=lambda w: w["position"])
        metrics = {
            (m["workload_id"], m["name"]): Metric(m["name"], m["unit"],
                                                  parse_better(m["better"], f"{path}: metric "
                                                               f"{m['name']!r}"),
                                                  m["description"], bool(m["is_primary"]))
            for m in tables.get("metrics", [])}
        values: Values = {}
        if with_values:
            grouped: dict[tuple[str, str, str], list[float]] = defaultdict(list)
            for s in tables.get("samples", []):
                if s["t"] is None and s["value"] is not None:
                    grouped[(s["variant"], s["workload_id"], s["metric"])].append(s["value"])
            values = {k: np.asarray(v, dtype=np.float64) for k, v in grouped.items()}
        return RunData(
            id=str(run["id"]), experiment=run["experiment"], host=run.get("host", ""),
            started_at=float(run["started_at"]), status=run.get("status", ""),
            spec_yaml=run.get("spec_yaml", ""), source=str(path),
            variants={v["name"]: json.loads(v["knobs_json"]) for v in variants},
            baseline=run.get("baseline", ""),
            workloads={w["workload_id"]: (w["name"], json.loads(w["params_json"]))
                       for w in workloads},
            metrics=metrics, facts=json.loads(before["data_json"]) if before else {},
            values=values)
    except (KeyError, TypeError, ValueError) as exc:
        raise VirtbenchError(f"{path}: damaged virtbench result file ({exc!r} missing or "
                             "malformed)") from exc
