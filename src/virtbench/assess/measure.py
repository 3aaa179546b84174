"""Measured effects: the CPU-flag what-if run through the normal runner and stored as a run.

Study 000's preview with this host's real masks (OPENSSL_ia32cap for AES, CRC32C_SW_MODE for
crc32c, x265's asm level): a variant without the flags the finding is about against one with
them, each workload that uses those flags, interleaved and adaptive until every speedup's 95 %
CI half-width is within the target or the time budget is spent.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Iterable
from dataclasses import dataclass

from virtbench.analysis import analyse
from virtbench.assess.findings import Gain
from virtbench.runner import Runner
from virtbench.runner.engine import ProgressHook
from virtbench.spec.loader import parse_experiment
from virtbench.store import Store
from virtbench.workloads.cpu.features import KNOWN_FEATURES

__all__ = ["EXPERIMENT_NAME", "FlagEffect", "WhatIf", "plan_whatif", "run_whatif"]

EXPERIMENT_NAME = "assess"
WITHOUT, WITH = "without-flags", "with-flags"
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

    def experiment_text(self, budget_s: float) -> str:
        data = {
            "name": EXPERIMENT_NAME,
            "description": "virtbench assess: CPU-flag what-if with this host's masks "
                           f"({', '.join(self.flags()) or 'host'})",
            "seed": 1,
            "baseline": WITHOUT,
            "variants": [
                {"name": WITHOUT, "knobs": {"cpu_features": list(self.without)}},
                {"name": WITH, "knobs": {"cpu_features": list(self.with_)
                                         if self.with_ is not None else "host"}}],
            "workloads": list(self.workloads),
            "repetitions": {"min": MIN_REPETITIONS, "max": 400, "target_rel_ci": TARGET_REL_CI,
                            "criterion": "speedup", "budget_s": round(max(1.0, budget_s), 1)},
            "warmup": 1,
        }
        return json.dumps(data, indent=1)

    def flags(self) -> list[str]:
        if self.with_ is None:
            return [f for f in KNOWN_FEATURES if f not in self.without]
        return sorted(set(self.with_) - set(self.without))


@dataclass(frozen=True)
class FlagEffect:
    workload: str
    metric: str
    speedup: float
    ci_low: float
    ci_high: float
    n: int

    @property
    def half_width(self) -> float:
        """CI half-width relative to the speedup."""
        return (self.ci_high - self.ci_low) / 2 / self.speedup if self.speedup else math.inf

    def gain(self) -> Gain:
        return Gain("measured", f"{self.workload} {self.metric}: ×{self.speedup:.2f} "
                                f"[{self.ci_low:.2f}, {self.ci_high:.2f}]",
                    self.speedup, self.ci_low, self.ci_high, source="this assessment's run")


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


def run_whatif(store: Store, whatif: WhatIf, budget_s: float,
               progress: ProgressHook | None = None) -> tuple[str, list[FlagEffect]]:
    """Run it as a normal stored run; returns the run id and each workload's primary speedup."""
    text = whatif.experiment_text(budget_s)
    experiment = parse_experiment(text, "<assess>")
    outcome = Runner(store, experiment, text, "virtbench assess", progress=progress).run()
    analysis = analyse(store, [outcome.run_id])
    effects = []
    for row in analysis.rows:
        if row.variant != WITH or not row.metric.primary or row.speedup is None:
            continue
        n = row.summary.n if row.summary is not None else 0
        effects.append(FlagEffect(row.workload_id, row.metric.name, row.speedup.ratio,
                                  row.speedup.ci_low, row.speedup.ci_high, n))
    return outcome.run_id, effects

