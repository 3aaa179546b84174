"""When a noise check warns or fails, and when a trial counts as measured under noise (pure)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_THRESHOLDS", "NOTE_FOREIGN", "NOTE_STEAL", "NOTE_WINDOW", "Thresholds",
           "noisy"]

# Trial note names the runner stores per trial (values are percentages as text) ...
NOTE_STEAL = "noise.steal_pct"
NOTE_FOREIGN = "noise.foreign_cpu_pct"
# ... over a window of this many seconds that ends with the trial (at least a second or so).
NOTE_WINDOW = "noise.window_s"


@dataclass(frozen=True)
class Thresholds:
    """Percentages: steal of all CPU time; foreign load of all CPUs' capacity (2 CPUs fully
    busy on a 4-CPU host is 50 %); swap in pages per second."""

    steal_warn: float = 2.0
    steal_fail: float = 10.0
    foreign_warn: float = 10.0
    foreign_fail: float = 25.0
    swap_fail_pages_per_s: float = 100.0


DEFAULT_THRESHOLDS = Thresholds()


def noisy(notes: dict[str, str], limits: Thresholds = DEFAULT_THRESHOLDS) -> list[str]:
    """Why a trial with these notes was measured under noise (empty: it was not, or was not
    sampled). A trial is marked at the warn level: a few per cent of stolen or foreign CPU
    already moves a CPU-bound result by about as much."""
    reasons = []
    for note, limit, what in ((NOTE_STEAL, limits.steal_warn, "steal"),
                              (NOTE_FOREIGN, limits.foreign_warn, "foreign load")):
        try:
            value = float(notes[note])
        except (KeyError, ValueError):
            continue
        if value > limit:
            reasons.append(f"{what} {value:.1f} % > {limit:g} %")
    return reasons
