"""Profiles and counters captured around trials (issue #25 "explain", capture side).

``capture`` records with perf around one trial, ``folded`` turns ``perf script`` output into
folded stacks, ``counters`` reads perf stat and /proc deltas, ``metrics`` declares the
``profile.*`` counters. docs/explain.md, "Capturing profiles", describes what is stored.
"""

from virtbench.profiling.perf_record import Captured, Profiler, ProfileSettings
from virtbench.profiling.profile_metrics import PROFILE_METRICS, PROFILE_PREFIX, PROFILE_UNITS

__all__ = ["PROFILE_METRICS", "PROFILE_PREFIX", "PROFILE_UNITS", "Captured", "ProfileSettings",
           "Profiler"]
