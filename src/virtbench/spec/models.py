"""The experiment specification: what to run (variants × workloads × repetitions), not when."""

from __future__ import annotations

import itertools
import math
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    Strict,
    field_validator,
    model_validator,
)

from virtbench import safetext
from virtbench.contract import MAX_SECONDS, NumbersNotBooleans
from virtbench.search.spec import SearchSpec

__all__ = [
    "Adaptive",
    "Experiment",
    "Factorial",
    "LabSpec",
    "ProfileSpec",
    "TargetSpec",
    "VariantSpec",
    "WorkloadSpec",
]


MAX_VARIANTS = 10_000
"""Most variants one experiment may define (explicit, matrix grid and factorial subsets)."""
MAX_REPETITIONS = 100_000
SEED_MIN, SEED_MAX = -(2**63), 2**63 - 1
"""The store keeps a seed as a signed 64-bit integer."""


def _printable(text: str) -> str:
    """Names are shown in terminals, HTML and file names and kept by the store as they are: only
    characters the store's rule (safetext.stored) keeps as themselves."""
    at = safetext.unshown(text, line=True)
    if at is not None:
        raise ValueError(f"must not contain control characters (found U+{ord(text[at]):04X})")
    return text


Name = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_printable)]


class _Strict(NumbersNotBooleans):
    """Unknown fields refused, numbers finite, no yes/no value taken for a number, whole
    numbers strictly whole (``2.0`` or ``"2"`` is not a count)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class TargetSpec(_Strict):
    kind: str = Field("local", description="local | ssh | libvirt-guest (see docs)")
    params: dict[str, Any] = Field(default_factory=dict)


class LabSpec(_Strict):
    kind: str = Field("host", description="a registered lab (`virtbench labs`)")
    params: dict[str, Any] = Field(default_factory=dict)


class VariantSpec(_Strict):
    name: Name
    knobs: dict[str, Any] = Field(default_factory=dict)


class Factorial(_Strict):
    """Every subset of ``factors`` becomes a variant whose knob ``knob`` is that subset."""

    knob: str = "cpu_features"
    factors: list[str] = Field(min_length=1, max_length=12)
    base: list[str] = Field(default_factory=list, description="always included in the set")
    empty_name: Name = Field("default", description="name of the variant with no factor")
    other_knobs: dict[str, Any] = Field(default_factory=dict)


MAX_PROFILE_HZ = 10_000
"""Highest sampling rate ``profile.frequency_hz`` accepts (perf's own default ceiling on most
kernels is kernel.perf_event_max_sample_rate, often 25-100 kHz; beyond 10 kHz the cost
dwarfs the workload)."""


class ProfileSpec(_Strict):
    """CPU samples with call stacks and counters during trials (docs/explain.md)."""

    trials: int | None = Field(None, ge=1, le=MAX_REPETITIONS, strict=True,
                               description="profiled trials per variant, the first measured "
                                           "ones (default: every measured trial)")
    frequency_hz: int = Field(99, ge=1, le=MAX_PROFILE_HZ, strict=True,
                              description="perf record sampling rate, samples per second "
                                          "per CPU")
    scope: Literal["auto", "system", "cgroup"] = Field(
        "auto", description="auto: the QEMU process from the host for a libvirt guest, else "
                            "the whole host; system: the whole host; cgroup: the lab's cgroup "
                            "of the workload")


class WorkloadSpec(_Strict):
    name: str
    id: Name | None = Field(None, description="alias when one workload appears twice")
    params: dict[str, Any] = Field(default_factory=dict)
    timeout_s: float | None = Field(
        None, gt=0, le=MAX_SECONDS,
        description="time limit of one trial, s (default: the workload's own); a trial past "
                    "it is killed and recorded as failed")
    search: SearchSpec | None = Field(None, description="search the highest load that passes "
                                                        "(docs/capacity.md)")
    profile: ProfileSpec | None = Field(None, description="record CPU profiles and counters "
                                                          "during trials (`true`: defaults)")

    @field_validator("profile", mode="before")
    @classmethod
    def _profile_switch(cls, value: Any) -> Any:
        """``profile: true`` profiles at the defaults, ``false`` not at all."""
        if value is True:
            return {}
        if value is False:
            return None
        return value

    @property
    def workload_id(self) -> str:
        return self.id or self.name


class Adaptive(_Strict):
    min: int = Field(5, ge=2, le=MAX_REPETITIONS, strict=True)
    max: int = Field(20, ge=2, le=MAX_REPETITIONS, strict=True)
    target_rel_ci: float = Field(0.02, gt=0, lt=1,
                                 description="stop when every primary metric's 95 % CI "
                                             "half-width / mean is at most this")
    criterion: Literal["mean", "speedup"] = "mean"
    budget_s: float | None = Field(None, gt=0, le=MAX_SECONDS,
                                   description="stop adding repetitions after this")

    @model_validator(mode="after")
    def _min_le_max(self) -> Adaptive:
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) must not exceed max ({self.max})")
        return self


class Experiment(_Strict):
    name: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9._-]+$")
    description: str = ""
    seed: int = Field(1, ge=SEED_MIN, le=SEED_MAX, strict=True)
    target: TargetSpec = Field(default_factory=TargetSpec)
    lab: LabSpec = Field(default_factory=LabSpec)
    baseline: str | None = None
    compare_by: str | None = Field(
        None, description="compare each variant with the one differing only in this knob, "
                          "set to the baseline's value (e.g. switch)")
    variants: list[VariantSpec] = Field(default_factory=list)
    matrix: dict[str, list[Any]] | None = None
    factorial: Factorial | None = None
    workloads: list[WorkloadSpec] = Field(min_length=1)
    repetitions: Annotated[int, Strict()] | Adaptive = 10
    warmup: int = Field(1, ge=0, le=100, strict=True)
    order: Literal["auto", "interleaved", "blocked"] = "auto"

    @field_validator("repetitions")
    @classmethod
    def _positive(cls, value: int | Adaptive) -> int | Adaptive:
        if isinstance(value, int) and not 1 <= value <= MAX_REPETITIONS:
            raise ValueError(f"repetitions must be from 1 to {MAX_REPETITIONS:,}")
        return value

    @field_validator("matrix")
    @classmethod
    def _grid(cls, value: dict[str, list[Any]] | None) -> dict[str, list[Any]] | None:
        if value is None:
            return value
        if not value:
            raise ValueError("an empty matrix makes no variants: give each knob a list of "
                             "values, e.g. {switch: [linux-bridge, ovs]}, or leave it out")
        empty = [knob for knob, values in value.items() if not values]
        if empty:
            raise ValueError(f"knob {', '.join(map(repr, empty))} has no values: a matrix "
                             "makes a variant of every combination, so each knob needs at "
                             "least one value")
        return value

    @model_validator(mode="after")
    def _check(self) -> Experiment:
        if not (self.variants or self.matrix or self.factorial):
            self.variants = [VariantSpec(name="default")]
        count = (len(self.variants)
                 + (math.prod(len(v) for v in self.matrix.values()) if self.matrix else 0)
                 + (2 ** len(self.factorial.factors) if self.factorial else 0))
        if count > MAX_VARIANTS:  # counted before anything is expanded
            raise ValueError(f"{count:,} variants (variants, matrix and factorial together); "
                             f"at most {MAX_VARIANTS:,}")
        names = [v.name for v in self.all_variants()]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"variant names must be unique; repeated: {', '.join(duplicates)}")
        if self.baseline is not None and self.baseline not in names:
            raise ValueError(f"baseline '{self.baseline}' is not a variant; variants: "
                             + ", ".join(names))
        if self.compare_by is not None:
            base = next(v for v in self.all_variants() if v.name == self.baseline_name)
            if self.compare_by not in base.knobs:
                raise ValueError(f"compare_by '{self.compare_by}' is not a knob of the baseline "
                                 f"variant '{base.name}'")
        ids = [w.workload_id for w in self.workloads]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ValueError(f"workload ids must be unique (give `id:`); repeated: "
                             f"{', '.join(repeated)}")
        return self

    def all_variants(self) -> list[VariantSpec]:
        """Explicit variants, then the matrix grid, then the factorial subsets, in that order."""
        result = list(self.variants)
        if self.matrix:
            keys = list(self.matrix)
            for values in itertools.product(*(self.matrix[k] for k in keys)):
                knobs = dict(zip(keys, values, strict=True))
                name = ",".join(f"{k}={v}" for k, v in knobs.items())
                result.append(VariantSpec(name=name, knobs=knobs))
        if self.factorial:
            f = self.factorial
            for size in range(len(f.factors) + 1):
                for subset in itertools.combinations(f.factors, size):
                    name = "+".join(subset) if subset else f.empty_name
                    knobs = dict(f.other_knobs) | {f.knob: [*f.base, *subset]}
                    result.append(VariantSpec(name=name, knobs=knobs))
        return result

    @property
    def baseline_name(self) -> str:
        return self.baseline or self.all_variants()[0].name

    def profiled_everywhere(self) -> Experiment:
        """A copy whose every workload is profiled (``run --profile``): at the defaults where
        the file asked for no profile, as the file says where it did."""
        workloads = [w if w.profile is not None else w.model_copy(update={"profile": ProfileSpec()})
                     for w in self.workloads]
        return self.model_copy(update={"workloads": workloads})
