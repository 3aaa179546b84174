"""Noise preflight: what on this host spoils benchmarks (steal, foreign load, frequency scaling,
transparent hugepages, swapping, the clock source, another run), checked before and during a run.

The checks read this host's /proc and /sys (the controller's, also for a remote target).
"""

from virtbench.preflight.checks import Check, Status, failed, run_checks
from virtbench.preflight.procfs import HostReader
from virtbench.preflight.run_pidfiles import RunRegistry
from virtbench.preflight.thresholds import NOTE_FOREIGN, NOTE_STEAL, Thresholds, noisy
from virtbench.preflight.watch import NoiseWatch, TrialSample, checks_facts, summary_line

__all__ = ["NOTE_FOREIGN", "NOTE_STEAL", "Check", "HostReader", "NoiseWatch", "RunRegistry",
           "Status", "Thresholds", "TrialSample", "checks_facts", "failed", "noisy", "run_checks",
           "summary_line"]
