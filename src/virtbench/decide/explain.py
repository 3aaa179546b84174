"""Why BASE and NEW differ: which functions' share of the profile samples changed, with CIs.

Per profiled trial (a `profile.folded` artifact, virtbench.decide.stack_shares), a function's
**total share** is the fraction of the trial's samples with the function anywhere on the stack
(counted once per sample, however often it recurs), its **self share** the fraction with it as
the leaf. The process name (each stack's first frame) is not a function and is not ranked.
Per side, the mean share over trials with a 95 % interval (Wilson with the effective n of the
trial shares, virtbench.stats.intervals); the difference NEW − BASE in percentage points with
a Welch t interval over the trials. Functions are ranked by the larger of their |self| and
|total| differences. Definitions: docs/explain.md, "Reading an explanation".

Shares are of the workload's samples when the profiles say which those are (the
`profile.workload.folded` artifact: the stacks of the processes virtbench started during the
trial and their descendants; or, for scope guest, the whole recording of the guest's QEMU
process), else, or with scope "system", of every sample of the recording.
"""

from __future__ import annotations

import base64
import json
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from virtbench.decide.stack_shares import (
    Frame,
    FrameKind,
    Profile,
    Stack,
    parse_folded,
)
from virtbench.model import (
    FOLDED_MEDIA_TYPE,
    PROFILE_ARTIFACT,
    PROFILE_PREFIX,
    PROFILE_SUMMARY_ARTIFACT,
    PROFILE_WORKLOAD_ARTIFACT,
    Domain,
)
from virtbench.stats._sample import t_quantile, welch_df
from virtbench.stats.intervals import mean_interval

__all__ = ["ARTIFACT", "ARTIFACT_META", "ARTIFACT_WORKLOAD", "CONFIDENCE", "MEDIA_TYPE",
           "NO_PROFILES", "NO_SYMBOLS_PCT", "PROFILE_PREFIX", "SCOPES", "Estimate",
           "Explanation", "FunctionChange",
           "RunProfiles", "TrialProfile", "VariantProfile", "WorkloadExplanation", "explain",
           "explain_run", "explain_runs", "is_diagnostic", "load_profiles", "mean_stacks"]

ARTIFACT = PROFILE_ARTIFACT
ARTIFACT_META = PROFILE_SUMMARY_ARTIFACT
ARTIFACT_WORKLOAD = PROFILE_WORKLOAD_ARTIFACT
SCOPES = ("workload", "system")
"""Whose samples the shares are of: the workload's (when the profiles say; else every
sample, with a note) or every sample the recording holds."""
MAX_COMMS = 64
"""Most process names read from a profile.json's `workload_comms`."""
MAX_COMM_CHARS = 64
MEDIA_TYPE = FOLDED_MEDIA_TYPE
CONFIDENCE = 0.95
NO_SYMBOLS_PCT = 50.0
"""Above this share of samples whose leaf frame is unresolved, an explanation says symbols are
missing (a stripped binary, no debug symbols, a guest's frames seen from the host)."""
TOP = 10


def is_diagnostic(metric_name: str) -> bool:
    """A `profile.` metric: shown under --explain, never a compare row or a gate input."""
    return metric_name.startswith(PROFILE_PREFIX)


@dataclass(frozen=True)
class TrialProfile:
    variant: str
    workload_id: str
    repetition: int
    profile: Profile
    meta: dict[str, Any] = field(default_factory=dict)
    """the trial's `profile.json` (frequency_hz, duration_s, samples, scope,
    unresolved_frames_pct, notes, workload_comms), {} without one"""
    workload: Profile | None = None
    """the workload's stacks (`profile.workload.folded`; for scope guest the whole profile);
    None when the profile does not say which samples are the workload's"""

    def comms(self) -> list[str]:
        """The workload's process names from `profile.json` (stored text: a list of at most
        MAX_COMMS short strings, else none)."""
        value = self.meta.get("workload_comms")
        if not isinstance(value, list) or len(value) > MAX_COMMS or not all(
                isinstance(c, str) and 0 < len(c) <= MAX_COMM_CHARS for c in value):
            return []
        return list(value)


@dataclass
class RunProfiles:
    """A run's profiled trials (warm-ups and failed trials left out)."""

    run_id: str
    trials: list[TrialProfile]

    def of(self, variant: str, workload_id: str) -> list[TrialProfile]:
        return [t for t in self.trials if t.variant == variant and t.workload_id == workload_id]

    @property
    def workloads(self) -> list[str]:
        return list(dict.fromkeys(t.workload_id for t in self.trials))


def _meta(content: bytes) -> dict[str, Any]:
    try:
        value = json.loads(content.decode("utf-8", errors="replace"))
    except ValueError:
        return {"notes": ["profile.json is not JSON: ignored"]}
    return value if isinstance(value, dict) else {}


def load_profiles(store: Any, run_id: str) -> RunProfiles:
    """The profiles stored with ``run_id``'s trials (store.trials / store.artifacts)."""
    artifacts = store.artifacts(run_id)
    if not any(artifact["name"] == ARTIFACT for artifact in artifacts):
        # no profile: the trials are not read (a 10^6-sample run has 10^4 of them, a twentieth
        # of a second of every report that has nothing to explain)
        return RunProfiles(run_id, [])
    trials = {t["id"]: t for t in store.trials(run_id)
              if not t["warmup"] and t["status"] == "ok"}
    folded: dict[int, Profile] = {}
    workloads: dict[int, Profile] = {}
    metas: dict[int, dict[str, Any]] = {}
    for artifact in artifacts:
        trial_id = artifact["trial_id"]
        if trial_id not in trials:
            continue
        if artifact["name"] == ARTIFACT:
            folded[trial_id] = parse_folded(bytes(artifact["content"]))
        elif artifact["name"] == ARTIFACT_WORKLOAD:
            workloads[trial_id] = parse_folded(bytes(artifact["content"]))
        elif artifact["name"] == ARTIFACT_META:
            metas[trial_id] = _meta(bytes(artifact["content"]))
    out: list[TrialProfile] = []
    for tid, profile in sorted(folded.items()):
        meta = metas.get(tid, {})
        # scope guest: every sample is the guest's QEMU process, the workload's
        workload = workloads.get(tid, profile if meta.get("scope") == "guest" else None)
        out.append(TrialProfile(str(trials[tid]["variant"]), str(trials[tid]["workload_id"]),
                                int(trials[tid]["repetition"]), profile, meta, workload))
    return RunProfiles(run_id, out)


def _scoped(base: Sequence[TrialProfile], new: Sequence[TrialProfile], scope: str
            ) -> tuple[list[TrialProfile], list[TrialProfile], str, list[str]]:
    """Both sides' trials with the profile the shares are of, the scope used, and a note when
    the workload's samples were asked for but not every profile says which they are."""
    if scope not in SCOPES:
        raise ValueError(f"explain scope must be one of {', '.join(SCOPES)}, got {scope!r}")
    trials = [*base, *new]
    if scope == "system" or not trials:
        return list(base), list(new), "system", []
    unknown = sum(1 for t in trials if t.workload is None)
    if unknown:
        return list(base), list(new), "system", [
            f"shares are of every sample recorded (all processes, idle included): {unknown} of "
            f"{len(trials)} profiles do not say which samples are the workload's (recorded "
            "before virtbench kept them apart, or the workload started no process)"]

    def pick(side: Sequence[TrialProfile]) -> list[TrialProfile]:
        return [replace(t, profile=t.workload) for t in side if t.workload is not None]

    return pick(base), pick(new), "workload", []


# ---- shares ------------------------------------------------------------------------------

def _shares(profile: Profile) -> tuple[dict[Frame, float], dict[Frame, float]]:
    """(self, total) share of every function in one trial, as fractions of its samples."""
    own: dict[Frame, float] = defaultdict(float)
    total: dict[Frame, float] = defaultdict(float)
    samples = profile.samples
    if samples == 0:
        return {}, {}
    for stack, count in profile.stacks.items():
        functions = stack[1:]
        if not functions:
            continue
        own[functions[-1]] += count / samples
        for f in set(functions):
            total[f] += count / samples
    return own, total


def mean_stacks(profiles: Iterable[Profile]) -> dict[Stack, float]:
    """Each stack's mean share of its trial's samples (%, every trial weighs the same): what a
    flame graph of a variant draws."""
    items = [p for p in profiles if p.samples]
    out: dict[Stack, float] = defaultdict(float)
    for p in items:
        for stack, count in p.stacks.items():
            out[stack] += 100.0 * count / p.samples / len(items)
    return dict(out)


@dataclass(frozen=True)
class Estimate:
    """A mean (a share in %, or a difference in percentage points) with its 95 % interval;
    nan bounds when there is none (fewer than 3 trials for a share, 2 per side for a
    difference)."""

    value: float
    low: float = math.nan
    high: float = math.nan

    @property
    def has_interval(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)

    def excludes_zero(self) -> bool:
        return self.has_interval and (self.low > 0 or self.high < 0)

    def as_dict(self) -> dict[str, float]:
        return {"value": self.value, "ci_low": self.low, "ci_high": self.high}


def _share(values: np.ndarray) -> Estimate:
    mean = float(np.mean(values)) if values.size else math.nan
    interval = mean_interval(values, CONFIDENCE, Domain.PROPORTION)
    return Estimate(mean, interval.low, interval.high)


def _difference(base: np.ndarray, new: np.ndarray) -> Estimate:
    """NEW − BASE with a Welch t interval (percentage points)."""
    diff = float(np.mean(new) - np.mean(base))
    if base.size < 2 or new.size < 2:
        return Estimate(diff)
    vb = float(np.var(base, ddof=1)) / base.size
    vn = float(np.var(new, ddof=1)) / new.size
    if vb + vn == 0.0:  # every trial the same share on both sides
        return Estimate(diff, diff, diff)
    df = welch_df([(vb, base.size), (vn, new.size)])
    half = t_quantile(CONFIDENCE, df) * math.sqrt(vb + vn)
    return Estimate(diff, diff - half, diff + half)


@dataclass(frozen=True)
class FunctionChange:
    """One function's shares on either side and their difference."""

    frame: Frame
    self_base: Estimate
    self_new: Estimate
    self_diff: Estimate
    total_base: Estimate
    total_new: Estimate
    total_diff: Estimate

    @property
    def score(self) -> float:
        """What the ranking sorts by: the larger |difference| of self and total share."""
        return max(abs(self.self_diff.value), abs(self.total_diff.value))

    @property
    def significant(self) -> bool:
        return self.self_diff.excludes_zero() or self.total_diff.excludes_zero()

    def as_dict(self) -> dict[str, Any]:
        return {"function": self.frame.name, "kind": self.frame.kind.value,
                "self_base_pct": self.self_base.as_dict(), "self_new_pct": self.self_new.as_dict(),
                "self_diff_pp": self.self_diff.as_dict(),
                "total_base_pct": self.total_base.as_dict(),
                "total_new_pct": self.total_new.as_dict(),
                "total_diff_pp": self.total_diff.as_dict(), "significant": self.significant}


@dataclass
class Explanation:
    """BASE against NEW for one workload (and one variant pair)."""

    workload_id: str
    base: str
    """what BASE is, in words ('variant default of run 1a2b…')"""
    new: str
    base_trials: int
    new_trials: int
    functions: list[FunctionChange]
    """ranked, at most ``top``"""
    base_stacks: dict[Stack, float]
    new_stacks: dict[Stack, float]
    unresolved_base_pct: float
    unresolved_new_pct: float
    unresolved_frames: list[str]
    """the unresolved frame names seen ('[unknown]', '[libfoo.so]'), most samples first"""
    notes: list[str] = field(default_factory=list)
    counters: list[Any] = field(default_factory=list)
    scope: str = "system"
    """whose samples the shares are of: 'workload' or 'system' (every sample recorded)"""
    workload_comms: list[str] = field(default_factory=list)
    """the workload's process names (scope workload), from the profiles"""

    @property
    def scope_text(self) -> str:
        """Whose samples the shares are of, in words."""
        if self.scope == "workload":
            names = ", ".join(self.workload_comms[:8]) + (
                " …" if len(self.workload_comms) > 8 else "")
            return ("share of the workload's samples (the processes virtbench started for it"
                    + (f": {names}" if names else "") + ")")
        return "share of all samples recorded (every process, idle included)"
    """compare rows (virtbench.decide.compare.ComparisonRow) of `profile.` metrics whose 95 %
    interval excludes no change"""

    def as_dict(self) -> dict[str, Any]:
        return {"workload_id": self.workload_id, "base": self.base, "new": self.new,
                "base_trials": self.base_trials, "new_trials": self.new_trials,
                "unresolved_base_pct": self.unresolved_base_pct,
                "unresolved_new_pct": self.unresolved_new_pct,
                "unresolved_frames": self.unresolved_frames, "notes": self.notes,
                "scope": self.scope, "workload_comms": self.workload_comms,
                "functions": [f.as_dict() for f in self.functions],
                "counters": [row.as_dict() for row in self.counters]}


def _unresolved_pct(trials: Sequence[TrialProfile]) -> float:
    shares = [100.0 * t.profile.unresolved_samples() / t.profile.samples
              for t in trials if t.profile.samples]
    return float(np.mean(shares)) if shares else math.nan


def _unresolved_names(trials: Iterable[TrialProfile]) -> list[str]:
    seen: dict[str, int] = defaultdict(int)
    for t in trials:
        for stack, count in t.profile.stacks.items():
            for f in set(stack):
                if f.kind is FrameKind.UNRESOLVED:
                    seen[f.name] += count
    return sorted(seen, key=lambda name: (-seen[name], name))


def _notes(side: str, trials: Sequence[TrialProfile], unresolved: float) -> list[str]:
    notes: list[str] = []
    empty = sum(1 for t in trials if not t.profile.samples)
    if empty:
        notes.append(f"{side}: {empty} of {len(trials)} profiles hold no sample")
    for t in trials:
        for note in t.profile.notes:
            notes.append(f"{side}, repetition {t.repetition}: {note}")
        extra = t.meta.get("notes")
        if isinstance(extra, list):
            notes.extend(f"{side}, repetition {t.repetition}: {n}" for n in extra[:20])
    if math.isfinite(unresolved) and unresolved > NO_SYMBOLS_PCT:
        notes.append(f"{side}: {unresolved:.0f} % of the samples ran in an unresolved frame "
                     "(no symbols: a stripped binary, missing debug symbols, or a guest's "
                     "frames seen from the host); the ranking names what was resolved")
    return notes


def explain(base: Sequence[TrialProfile], new: Sequence[TrialProfile], *, workload_id: str,
            base_label: str, new_label: str, top: int = TOP,
            scope: str = "workload") -> Explanation:
    """The functions whose share changed most between the BASE and NEW trials of one
    workload, ranked by |difference| (at most ``top``); shares of the workload's samples
    (``scope`` workload, when every profile says which they are) or of all samples."""
    base, new, used, scope_notes = _scoped(base, new, scope)
    comms = sorted({c for t in [*base, *new] for c in t.comms()}) if used == "workload" else []
    sides = [[_shares(t.profile) for t in trials if t.profile.samples] for trials in (base, new)]
    functions = {f for side in sides for own, total in side for f in (*own, *total)}
    changes: list[FunctionChange] = []
    for f in functions:
        arrays = [(np.array([100.0 * own.get(f, 0.0) for own, _ in side]),
                   np.array([100.0 * total.get(f, 0.0) for _, total in side]))
                  for side in sides]
        (self_b, total_b), (self_n, total_n) = arrays
        if not self_b.size or not self_n.size:
            continue
        changes.append(FunctionChange(
            f, _share(self_b), _share(self_n), _difference(self_b, self_n),
            _share(total_b), _share(total_n), _difference(total_b, total_n)))
    changes.sort(key=lambda c: (-c.score, c.frame.name))
    unresolved_b, unresolved_n = _unresolved_pct(base), _unresolved_pct(new)
    notes = [*scope_notes, *_notes("BASE", base, unresolved_b),
             *_notes("NEW", new, unresolved_n)]
    if not sides[0] or not sides[1]:
        notes.append("no profile with samples on " + " and ".join(
            side for side, s in (("BASE", sides[0]), ("NEW", sides[1])) if not s)
            + ": nothing to compare")
    return Explanation(
        workload_id, base_label, new_label, len(sides[0]), len(sides[1]), changes[:top],
        mean_stacks(t.profile for t in base), mean_stacks(t.profile for t in new),
        unresolved_b, unresolved_n, _unresolved_names([*base, *new]), notes,
        scope=used, workload_comms=comms)




NO_PROFILES = ("no profiles: neither run has `profile.folded` artifacts of its trials (run the "
               "experiment with profiling to explain a difference)")


class _ExportedRun:
    """An exported file's trials and artifacts, read as the store gives them."""

    def __init__(self, path: str) -> None:
        from virtbench.store.portable import read_tables

        tables = read_tables(Path(path))  # the import's checks: a file read is a file imported
        self._trials = tables.get("trials", [])
        self._artifacts = tables.get("artifacts", [])

    def trials(self, _run_id: str) -> list[dict[str, Any]]:
        return list(self._trials)

    def artifacts(self, _run_id: str) -> list[dict[str, Any]]:
        return [a | {"content": base64.b64decode(a["content"])} for a in self._artifacts
                if a["name"] in (ARTIFACT, ARTIFACT_META, ARTIFACT_WORKLOAD)]


def _profiles_of(open_store: Callable[[], Any], run: Any) -> RunProfiles:
    """A run's profiles, from the store or from the exported file it was read from."""
    source = open_store() if run.source == "store" else _ExportedRun(run.source)
    return load_profiles(source, run.id)


def explain_runs(open_store: Callable[[], Any], base: Any, new: Any, *,
                 counters: Any = None, top: int = TOP, scope: str = "workload"
                 ) -> tuple[list[Explanation], str]:
    """Per variant pair (compare's pairing) and shared workload, the explanation of BASE →
    NEW (``base``/``new``: decide.runs.RunData), with the `profile.` counters of ``counters``
    (a diagnostics Comparison) whose verdict is better or worse; and '' or why there is none."""
    from virtbench.decide.compare import variant_pairs

    profiles = (_profiles_of(open_store, base), _profiles_of(open_store, new))
    if not profiles[0].trials and not profiles[1].trials:
        return [], NO_PROFILES
    out: list[Explanation] = []
    for label, bvar, nvar in variant_pairs(base, new):
        for wid in base.workloads:
            if wid not in new.workloads:
                continue
            b, n = profiles[0].of(bvar, wid), profiles[1].of(nvar, wid)
            if not b and not n:
                continue
            item = explain(b, n, workload_id=wid, base_label=f"{bvar} (run {base.id})",
                           new_label=f"{nvar} (run {new.id})", top=top, scope=scope)
            if counters is not None:
                item.counters = [row for row in counters.rows
                                 if row.variant == label and row.workload_id == wid
                                 and row.result.verdict in ("better", "worse")]
            if not b or not n:
                item.notes.append(f"no profile in {'BASE' if not b else 'NEW'} for {wid}, "
                                  f"variant {bvar if not b else nvar}")
            out.append(item)
    return out, "" if out else NO_PROFILES


@dataclass
class VariantProfile:
    """One variant's profiles of one workload, merged for its flame graph."""

    variant: str
    trials: int
    stacks: dict[Stack, float]
    """each stack's mean share of its trial's samples, %"""
    unresolved_pct: float


@dataclass
class WorkloadExplanation:
    """A run's profiles of one workload (the report's Explain section): each variant's, and
    each variant against the baseline."""

    workload_id: str
    variants: list[VariantProfile]
    comparisons: list[Explanation]


def explain_run(store: Any, run_id: str, variants: Sequence[str], baseline: str, *,
                top: int = TOP, scope: str = "workload") -> list[WorkloadExplanation]:
    """Per profiled workload of ``run_id``: every variant's profile (``variants``' order) and
    the explanation of each variant against ``baseline``; [] when the run has no profiles."""
    profiles = load_profiles(store, run_id)
    out: list[WorkloadExplanation] = []
    for wid in profiles.workloads:
        per_variant = {v: profiles.of(v, wid) for v in variants}
        graphed = {v: _scoped(trials, [], scope)[0] for v, trials in per_variant.items()}
        shown = [VariantProfile(v, len(trials), mean_stacks(t.profile for t in trials),
                                _unresolved_pct(trials))
                 for v, trials in graphed.items() if trials]
        base = per_variant.get(baseline, [])
        comparisons = [explain(base, trials, workload_id=wid, base_label=baseline,
                               new_label=v, top=top, scope=scope)
                       for v, trials in per_variant.items() if v != baseline and trials
                       and base]
        out.append(WorkloadExplanation(wid, shown, comparisons))
    return out
