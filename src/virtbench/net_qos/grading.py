"""QoS grading: the studies' TIPHON table, ITU-T G.114 delay bands, and the E-model (G.107).

The studies attribute the table to ITU-T G.1010; it is ETSI TIPHON (TR 101 329). Index 4 = very
good, 3 = good, 2 = medium, 1 = poor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = [
    "TIPHON_CATEGORIES",
    "EModel",
    "emodel",
    "g114_band",
    "mos_from_r",
    "tiphon_delay",
    "tiphon_index",
    "tiphon_jitter",
    "tiphon_loss",
]

TIPHON_CATEGORIES = {4: "very good", 3: "good", 2: "medium", 1: "poor"}


def tiphon_delay(delay_ms: float) -> int:
    """< 150 ms very good (4), 150–300 good (3), 300–450 medium (2), > 450 poor (1)."""
    if delay_ms < 150:
        return 4
    if delay_ms <= 300:
        return 3
    if delay_ms <= 450:
        return 2
    return 1


def tiphon_jitter(jitter_ms: float) -> int:
    """0 ms very good (4), 0–75 good (3), 75–125 medium (2), > 125 poor (1; the table's 125–225)."""
    if jitter_ms <= 0:
        return 4
    if jitter_ms <= 75:
        return 3
    if jitter_ms <= 125:
        return 2
    return 1


def tiphon_loss(loss_pct: float) -> int:
    """0 % very good (4), ≤ 3 % good (3), ≤ 15 % medium (2), > 15 % poor (1; the table's 25 %)."""
    if loss_pct <= 0:
        return 4
    if loss_pct <= 3:
        return 3
    if loss_pct <= 15:
        return 2
    return 1


def tiphon_index(delay_ms: float, jitter_ms: float, loss_pct: float) -> float:
    """Mean of the three category indices (1–4), the usual TIPHON overall index."""
    return (tiphon_delay(delay_ms) + tiphon_jitter(jitter_ms) + tiphon_loss(loss_pct)) / 3.0


def g114_band(one_way_delay_ms: float) -> str:
    """ITU-T G.114 planning bands for one-way (mouth-to-ear) delay."""
    if one_way_delay_ms <= 150:
        return "0–150 ms: acceptable for most user applications"
    if one_way_delay_ms <= 400:
        return "150–400 ms: acceptable, with impact on some applications"
    return "> 400 ms: unacceptable for general network planning"


def mos_from_r(r: float) -> float:
    """G.107 Annex B: MOS = 1 + 0.035·R + 7·10⁻⁶·R·(R − 60)·(100 − R), clamped to [1, 4.5]."""
    if r <= 0:
        return 1.0
    if r >= 100:
        return 4.5
    return 1.0 + 0.035 * r + 7e-6 * r * (r - 60.0) * (100.0 - r)


@dataclass(frozen=True)
class EModel:
    """R = 93.2 − Id − Ie_eff; MOS from R. d_ms is the effective one-way delay used for Id."""

    r_factor: float
    mos: float
    d_ms: float
    id_delay: float
    ie_eff: float


def emodel(
    one_way_delay_ms: float,
    jitter_ms: float,
    loss_pct: float,
    *,
    ie: float = 0.0,
    bpl: float = 25.1,
    burst_r: float = 1.0,
    codec_delay_ms: float = 0.0,
    jitter_buffer_factor: float = 2.0,
) -> EModel:
    """Simplified E-model for G.711 with packet-loss concealment (defaults Ie = 0, Bpl = 25.1).

    d = one-way delay + jitter_buffer_factor·jitter + codec delay (ms);
    Id = 0.024·d + 0.11·(d − 177.3)·H(d − 177.3)   (Cole & Rosenbluth's fit of G.107's Id);
    Ie_eff = Ie + (95 − Ie)·Ppl / (Ppl / BurstR + Bpl)   (G.107 eq. 7-29, Ppl in %);
    R = 93.2 − Id − Ie_eff.
    """
    for name, value in (("one_way_delay_ms", one_way_delay_ms), ("jitter_ms", jitter_ms),
                        ("loss_pct", loss_pct)):
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{name}: must be a finite value ≥ 0, got {value}")
    d = one_way_delay_ms + jitter_buffer_factor * jitter_ms + codec_delay_ms
    id_delay = 0.024 * d + (0.11 * (d - 177.3) if d > 177.3 else 0.0)
    ie_eff = ie + (95.0 - ie) * loss_pct / (loss_pct / burst_r + bpl)
    r = 93.2 - id_delay - ie_eff
    return EModel(r_factor=r, mos=mos_from_r(r), d_ms=d, id_delay=id_delay, ie_eff=ie_eff)
