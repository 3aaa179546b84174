"""Measured effects, all in one run of experiment ``assess`` through the normal runner.

Two variants, a baseline and the changed one, each named by what it measures
(:meth:`Plan.variant_names`): ``as-found`` against ``recommended`` when the findings propose
changes; ``without-flags`` (this machine with its CPU flags masked) against ``as-found`` when the
machine already has the flags and the what-if shows what they buy (``recommended`` when probes
change other settings in that variant too). Each workload answers to exactly one of their knobs,
so each speedup is what one fix buys:

- the CPU-flag what-if, study 000's preview with this host's real masks (OPENSSL_ia32cap for
  AES, CRC32C_SW_MODE for crc32c, x265's asm level): ``cpu_features`` without the flags the
  finding is about against with them, each workload that uses those flags;
- the disk and network probes (:mod:`virtbench.assess.probes`) on lab ``assess-probes``'s
  scratch loop device and veth pair.

Interleaved, adaptive: a workload whose speedup's 95 % CI half-width is within the target stops,
the others go on until the time budget is spent.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Iterable
from dataclasses import dataclass

from virtbench.analysis import analyse
from virtbench.assess.findings import Gain
from virtbench.assess.probes import PROBE_TRIAL_S, Probe
from virtbench.runner import Runner, RunRecord, build_plan
from virtbench.runner.engine import ProgressHook
from virtbench.spec.loader import parse_resolved
from virtbench.spec.models import Adaptive
from virtbench.store import Store
from virtbench.workloads.cpu.features import KNOWN_FEATURES

__all__ = ["AS_FOUND", "EXPERIMENT_NAME", "RECOMMENDED", "WITHOUT_FLAGS", "Effect", "Plan",
           "WhatIf", "plan_whatif", "run_plan"]

EXPERIMENT_NAME = "assess"
AS_FOUND, RECOMMENDED = "as-found", "recommended"
WITHOUT_FLAGS = "without-flags"
"""This machine with the CPU flags in question masked: a configuration it does not have."""
CPU_TRIAL_S = 0.5
"""What one CPU trial costs here (a fresh Python process and ~30 ms of work), for planning."""
# libvirt flag names -> the names the cpu_features knob uses
_KNOB_NAMES = {"pclmuldq": "pclmulqdq", "sha-ni": "sha_ni"}
# Which workload each flag speeds up. Sizes keep each timed unit near a millisecond (the median
# of many then leaves out preempted ones on a busy host) and each trial short, so a budget buys
# many repetitions: the software paths' trial-to-trial spread dominates the CI.
_WORKLOADS: tuple[tuple[set[str], dict[str, object]], ...] = (
    ({"sse4.2"}, {"name": "cpu.crc32c", "params": {"size_mib": 1, "loops": 60}}),
    ({"aes"}, {"name": "cpu.aes", "params": {"mode": "bulk", "bulk_mib": 0.5,
                                                 "chunk_kib": 16}}),
    ({"ssse3", "sse4.1", "sse4.2", "avx", "avx2"},
     {"name": "media.x265", "params": {"clip": "quick", "duration_s": 0.6}}),
)
X265_MIN_BUDGET_S = 180.0
"""x265 trials take seconds each (the others milliseconds): below this measurement budget they
would take the repetitions the fast workloads need to converge, so x265 is left out (noted)."""
MIN_REPETITIONS = 8
"""A bootstrap CI from three or four trials can look tight by luck: stop at eight or more."""
TARGET_REL_CI = 0.04
"""Stop once every speedup's CI half-width is within 4 % (the floor is 5 %)."""


@dataclass(frozen=True)
class WhatIf:
    """The experiment to run: flags granted without and with the change (knob names), or
    ``None`` for the unmasked host."""

    without: tuple[str, ...]
    with_: tuple[str, ...] | None
    workloads: tuple[dict[str, object], ...]
    skipped: tuple[str, ...] = ()
    """Why an affected workload is not measured."""

    @property
    def with_is_as_found(self) -> bool:
        """The side with the flags is this machine as it is (``with_`` None: all it has), so
        the side without them is the hypothetical one (the machine masked), not as found."""
        return self.with_ is None

    def flags(self) -> list[str]:
        if self.with_ is None:
            return [f for f in KNOWN_FEATURES if f not in self.without]
        return sorted(set(self.with_) - set(self.without))


@dataclass(frozen=True)
class Plan:
    """What the assessment's run measures: the CPU what-if (or None) and the probes."""

    cpu: WhatIf | None
    probes: tuple[Probe, ...] = ()
    skipped: tuple[str, ...] = ()

    def empty(self) -> bool:
        return not self.probes and (self.cpu is None or not self.cpu.workloads)

    def min_cost_s(self) -> float:
        """Seconds the minimum repetitions and the warm-up take (both variants)."""
        trials = 2 * (MIN_REPETITIONS + 1)
        cpu = len(self.cpu.workloads) * CPU_TRIAL_S if self.cpu else 0.0
        return trials * (cpu + len(self.probes) * PROBE_TRIAL_S)

    def round_s(self) -> float:
        """Seconds one round of every workload (both variants) takes, for planning."""
        cpu = len(self.cpu.workloads) * CPU_TRIAL_S if self.cpu else 0.0
        return 2 * (cpu + len(self.probes) * PROBE_TRIAL_S)

    def variant_names(self) -> tuple[str, str]:
        """(baseline, changed): names that say what each variant is. The CPU what-if of a
        machine that has the flags measures it masked (``without-flags``) against itself
        (``as-found``, or ``recommended`` when probes apply their changes in that variant);
        otherwise the findings' settings (``as-found``) against their changes."""
        if self.cpu is not None and self.cpu.workloads and self.cpu.with_is_as_found:
            return WITHOUT_FLAGS, (RECOMMENDED if self.probes else AS_FOUND)
        return AS_FOUND, RECOMMENDED

    def variant_knobs(self) -> tuple[dict[str, object], dict[str, object]]:
        """The knobs of the (baseline, changed) variants: the CPU without and with the flags;
        each probe's setting as found and as recommended."""
        baseline: dict[str, object] = {}
        changed: dict[str, object] = {}
        if self.cpu is not None and self.cpu.workloads:
            baseline["cpu_features"] = list(self.cpu.without)
            changed["cpu_features"] = list(self.cpu.with_) if self.cpu.with_ is not None \
                else "host"
        for probe in self.probes:
            baseline[probe.knob], changed[probe.knob] = probe.as_found, probe.recommended
        return baseline, changed

    def experiment_text(self) -> str:
        """The run's experiment file. The same subject with the same findings gives the same
        text (no time budget in it: the runner gets that separately), so ``history`` and
        ``compare`` take the assessments of one subject as runs of one experiment file."""
        baseline_knobs, changed_knobs = self.variant_knobs()
        baseline, changed = self.variant_names()
        workloads = [*(self.cpu.workloads if self.cpu else ()), *(p.spec() for p in self.probes)]
        what = [f"CPU flags ({', '.join(self.cpu.flags()) or 'host'})"] if self.cpu else []
        what += [f"{p.knob} {p.as_found} → {p.recommended}" for p in self.probes]
        data: dict[str, object] = {
            "name": EXPERIMENT_NAME,
            "description": "virtbench assess: " + "; ".join(what),
            "seed": 1,
            "baseline": baseline,
            "variants": [{"name": baseline, "knobs": baseline_knobs},
                         {"name": changed, "knobs": changed_knobs}],
            "workloads": workloads,
            "repetitions": {"min": MIN_REPETITIONS, "max": 400, "target_rel_ci": TARGET_REL_CI,
                            "criterion": "speedup"},
            "warmup": 1,
        }
        if self.probes:
            data["lab"] = {"kind": "assess-probes", "params": {
                "disk": any(p.needs == "disk" for p in self.probes),
                "network": any(p.needs == "network" for p in self.probes)}}
        return json.dumps(data, indent=1)


@dataclass(frozen=True)
class Effect:
    """One measured speedup of the changed variant over the baseline (the recommended setting
    over the one found, or the flags this machine has over the machine without them)."""

    workload: str
    metric: str
    speedup: float
    ci_low: float
    ci_high: float
    n: int
    measure: str = "cpu-flags"
    """Which findings it quantifies (Finding.measure)."""
    what: str = ""
    """What exactly was measured, and where."""
    not_measured: str = ""

    @property
    def half_width(self) -> float:
        """CI half-width relative to the speedup."""
        return (self.ci_high - self.ci_low) / 2 / self.speedup if self.speedup else math.inf

    def gain(self) -> Gain:
        # What was measured goes with the finding's evidence, not into every gain line.
        summary = (f"{self.workload} {self.metric}: ×{self.speedup:.2f} "
                   f"[{self.ci_low:.2f}, {self.ci_high:.2f}]")
        return Gain("measured", summary, self.speedup, self.ci_low, self.ci_high,
                    source="this assessment's run")

    def as_dict(self) -> dict[str, object]:
        return {"workload": self.workload, "metric": self.metric, "speedup": self.speedup,
                "ci_low": self.ci_low, "ci_high": self.ci_high, "n": self.n,
                "ci_half_width_rel": self.half_width, "measure": self.measure,
                "measured": self.what, "cited": self.not_measured}


def _knob(flags: Iterable[str]) -> tuple[str, ...]:
    names = {_KNOB_NAMES.get(f, f) for f in flags}
    return tuple(f for f in KNOWN_FEATURES if f in names)


def plan_whatif(granted: Iterable[str], added: Iterable[str] | None,
                budget_s: float = math.inf) -> WhatIf | None:
    """The what-if for a guest with ``granted`` flags (libvirt names) gaining ``added``
    (None: everything this host has) within a measurement budget of ``budget_s`` seconds.
    None when no measurable workload uses the difference."""
    without = _knob(granted)
    with_ = None if added is None else _knob({*granted, *added})
    affected = set(KNOWN_FEATURES) - set(without) if with_ is None else set(with_) - set(without)
    workloads: list[dict[str, object]] = []
    skipped: list[str] = []
    for flags, spec in _WORKLOADS:
        if not flags & affected:
            continue
        if spec["name"] == "media.x265":
            if shutil.which("ffmpeg") is None:
                skipped.append("media.x265 not measured: ffmpeg is missing (apt-get install "
                               "ffmpeg)")
                continue
            if budget_s < X265_MIN_BUDGET_S:
                skipped.append("media.x265 not measured: its trials take seconds; give "
                               "--budget 4m or more")
                continue
        workloads.append(spec)
    return WhatIf(without, with_, tuple(workloads), tuple(skipped)) if workloads else None


def _where(store: Store, run_id: str) -> dict[str, str]:
    """Each probe's device or path, from its last trial's notes."""
    where: dict[str, str] = {}
    for trial in store.trials(run_id):
        notes = trial.get("notes") or {}
        place = notes.get("device") or notes.get("path")
        if place:
            where[str(trial["workload_id"])] = str(place)
    return where


def run_plan(store: Store, plan: Plan, budget_s: float,
             progress: ProgressHook | None = None) -> tuple[str, list[Effect]]:
    """Run the plan as a normal stored run; returns the run id and each workload's primary
    speedup of the changed variant over the baseline (``Plan.variant_names``)."""
    text = plan.experiment_text()
    resolved = parse_resolved(text, "<assess>")
    experiment = resolved.experiment
    assert isinstance(experiment.repetitions, Adaptive)
    experiment.repetitions.budget_s = round(max(1.0, budget_s), 1)
    experiment.description += (f" (this run's time for trials: "
                               f"{experiment.repetitions.budget_s:g} s)")
    outcome = Runner(build_plan(resolved), RunRecord.new(store, text, "virtbench assess"),
                     progress=progress).run()
    analysis = analyse(store, [outcome.run_id])
    changed = plan.variant_names()[1]
    probes = {p.id: p for p in plan.probes}
    where = _where(store, outcome.run_id) if probes else {}
    effects = []
    for row in analysis.rows:
        if row.variant != changed or not row.metric.primary or row.speedup is None:
            continue
        n = row.summary.n if row.summary is not None else 0
        probe = probes.get(row.workload_id)
        extra: dict[str, str] = {}
        if probe is not None:
            place = where.get(row.workload_id)
            extra = {"measure": probe.measure,
                     "what": probe.measures + (f"; device {place}" if place else ""),
                     "not_measured": probe.not_measured}
        effects.append(Effect(row.workload_id, row.metric.name, row.speedup.ratio,
                              row.speedup.ci_low, row.speedup.ci_high, n, **extra))
    return outcome.run_id, effects

