"""What an assessment reports: findings, each from one rule, with evidence, change and cost."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

__all__ = ["SEVERITY_ORDER", "Change", "Evidence", "Finding", "Gain", "Severity"]

Severity = Literal["high", "medium", "low", "info"]
SEVERITY_ORDER: dict[str, int] = {"high": 0, "medium": 1, "low": 2, "info": 3}


@dataclass(frozen=True)
class Evidence:
    """One observed fact: where it was read and what it says."""

    source: str
    """e.g. "domain XML <disk>", "/sys/block/vda/queue/scheduler"."""
    value: str


@dataclass(frozen=True)
class Change:
    """One way to make the fix: ``kind`` says where it goes (libvirt-xml, virtbench, cloudstack,
    openstack, sysfs, sysctl, kernel-cmdline, guest)."""

    kind: str
    text: str


@dataclass
class Gain:
    """What the fix is expected to buy. ``basis`` "measured": a speedup with its CI, measured in
    this assessment's run; "cited": a documented effect, with its source, no number of ours."""

    basis: Literal["measured", "cited"]
    summary: str
    speedup: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    source: str = ""


@dataclass
class Finding:
    rule: str
    title: str
    severity: Severity
    evidence: list[Evidence]
    source: str
    """The document the rule rests on."""
    changes: list[Change] = field(default_factory=list)
    cost: str = ""
    """What the change costs (migration, memory, power...)."""
    gain: Gain | None = None
    measure: str | None = None
    """Which measurement can quantify this finding (e.g. "cpu-flags"), if any."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Rule-specific data another step needs (e.g. the flags to require)."""

    def rank_key(self) -> tuple[int, float, int]:
        """Measured gains first (largest first), then cited ones, then by severity."""
        measured = self.gain is not None and self.gain.basis == "measured"
        speedup = self.gain.speedup if measured and self.gain and self.gain.speedup else 0.0
        return (0 if measured else 1, -speedup, SEVERITY_ORDER[self.severity])

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("extra")
        return data
