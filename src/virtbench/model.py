"""Core value types shared by workloads, parsers, the runner, the store and the report."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum

from virtbench.errors import EXIT_BAD_INPUT, EXIT_FAILED, RunFailed, VirtbenchError

__all__ = ["EXIT_BAD_INPUT", "EXIT_FAILED", "FOLDED_MEDIA_TYPE", "NOT_JUDGED", "NO_DIRECTION",
           "PORT_MAX", "PORT_MIN", "PROFILE_ARTIFACT", "PROFILE_PREFIX",
           "PROFILE_SUMMARY_ARTIFACT", "PROFILE_WORKLOAD_ARTIFACT", "Artifact", "Better", "Domain",
           "Measurement", "Metric", "RunFailed", "VirtbenchError", "better_text", "default_domain",
           "direction_text", "parse_better"]

PORT_MIN, PORT_MAX = 1, 65535
"""A TCP or UDP port's range, wherever one is given (files: contract.Port; options:
inputs.values.port_number); here, below both, so that an option parser imports no pydantic."""


class Better(StrEnum):
    LOWER = "lower"
    HIGHER = "higher"


NO_DIRECTION = "none"
"""How a metric without a direction is written (store, result files, JSON): a count that
describes the trial (packets a probe sent, requests scheduled), neither better nor worse."""
NOT_JUDGED = ("no direction (a count that describes the trial): no verdict, no best "
              "configuration, no gate decision")
"""What every verdict-giving output says of a metric without a direction it leaves out."""


def parse_better(value: object, where: str) -> Better | None:
    """A metric's declared direction from a plugin, the store or a file: 'lower', 'higher', or
    'none' / None for no direction. Anything else is refused, naming ``where`` (the metric)."""
    if value is None or value == NO_DIRECTION:
        return None
    if isinstance(value, str) and value in {b.value for b in Better}:
        return Better(value)
    shown = repr(value)[:60]
    raise VirtbenchError(f"{where}: field 'better' must be 'lower', 'higher' or "
                         f"'{NO_DIRECTION}' (no direction: a count that describes the trial), "
                         f"got {shown}")


def direction_text(better: Better | None) -> str:
    """'higher is better', 'lower is better' or 'no direction': what reports print."""
    return f"{better.value} is better" if better is not None else "no direction"


def better_text(better: Better | None) -> str:
    """'lower', 'higher' or 'none': the direction as stored and written to JSON."""
    return NO_DIRECTION if better is None else better.value


class Domain(StrEnum):
    """Where a metric's values (and so every interval printed for it) can lie."""

    PROPORTION = "proportion"  # a percentage in [0, 100]: hit ratio, success rate, loss
    POSITIVE = "positive"  # >= 0: times, rates, counts, sizes
    REAL = "real"  # any sign

    def refusal(self, value: float) -> str | None:
        """Why ``value`` cannot be a measurement of a metric of this domain, or None: the one
        rule of parsers (parsers/parser_contract.py) and of `import` (store/rows.py)."""
        if not math.isfinite(value):
            return "not a finite number"
        if self is not Domain.REAL and value < 0:
            return "negative (it counts or times something)"
        if self is Domain.PROPORTION and value > 100:
            return "over 100 % (a proportion)"
        return None


# Units whose quantities cannot be negative; a unit ending in "/s" (a rate) is one too.
_POSITIVE_UNITS = {"s", "ms", "µs", "us", "ns", "B", "bytes", "bit", "packets", "requests",
                   "objects", "segments", "frames", "ops", "IOPS", "Hz", "MOS", "files"}


def default_domain(unit: str) -> Domain:
    """'%' is a proportion; times, rates and counts are positive; anything else is real."""
    if unit == "%":
        return Domain.PROPORTION
    if unit in _POSITIVE_UNITS or unit.endswith("/s"):
        return Domain.POSITIVE
    return Domain.REAL


@dataclass(frozen=True)
class Metric:
    """A declared metric: what a number means, in which unit, and which direction is better.

    ``better`` None (or 'none'): no direction. The metric describes the trial (a count of
    probes sent, of packets captured): it is reported, but gets no speedup, no verdict, no best
    configuration and no gate decision. A primary metric needs a direction.

    ``domain`` (default: from the unit, see ``default_domain``) keeps intervals inside what the
    quantity can be; a percentage that can exceed 100 (CPU use over several cores) declares
    ``Domain.POSITIVE``.
    """

    name: str
    unit: str
    better: Better | None
    description: str
    primary: bool = False
    domain: Domain | None = None

    def __post_init__(self) -> None:
        where = f"metric {self.name!r}"
        object.__setattr__(self, "better", parse_better(self.better, where))
        if self.primary and self.better is None:
            raise VirtbenchError(f"{where}: a primary metric needs a direction (field 'better': "
                                 "'lower' or 'higher'); it is the headline speedup")
        if self.domain is None:
            object.__setattr__(self, "domain", default_domain(self.unit))
        else:  # a plain string from a plugin or the store
            object.__setattr__(self, "domain", Domain(self.domain))

    @property
    def directed(self) -> bool:
        """The metric has a direction: verdicts, speedups and a best configuration apply."""
        return self.better is not None

    @property
    def direction_text(self) -> str:
        """'higher is better', 'lower is better' or 'no direction' (what reports print)."""
        return direction_text(self.better)

    @property
    def value_domain(self) -> Domain:
        """The domain, never None (``__post_init__`` fills it in)."""
        return self.domain or default_domain(self.unit)


@dataclass
class Measurement:
    """One measured value of a declared metric.

    ``value`` is None when the tool measured nothing usable (``status`` says why, e.g. bonnie++'s
    ``+++++`` is status ``too_fast``). ``t`` is seconds since the trial started, for time series
    (a hit ratio every 30 s) and per-request samples; ``labels`` distinguish series inside a trial
    (request URL, interval, flow).
    """

    metric: str
    value: float | None
    t: float | None = None
    labels: dict[str, str] = field(default_factory=dict)
    status: str = "ok"


# A profiled trial's data, as its capture (virtbench.profiling) stores it and its analysis
# (decide.explain) reads it; defined once, here below both (docs/explain.md).
PROFILE_PREFIX = "profile."
"""Metrics named so are perf counters of a profiled trial: diagnostics that `compare --explain`
shows, never a compare row or a gate input."""
PROFILE_ARTIFACT = "profile.folded"
"""Every sample's stacks, folded (``frame;frame;... COUNT`` lines)."""
PROFILE_WORKLOAD_ARTIFACT = "profile.workload.folded"
"""The workload's own processes' stacks, folded."""
PROFILE_SUMMARY_ARTIFACT = "profile.json"
FOLDED_MEDIA_TYPE = "text/x-folded-stacks"


@dataclass(frozen=True)
class Artifact:
    """A raw tool output kept beside the samples it produced."""

    name: str
    content: bytes
    media_type: str = "text/plain"
