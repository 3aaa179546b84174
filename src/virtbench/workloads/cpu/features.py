"""CPU-feature variants realised on a host by real masking mechanisms.

A variant names the CPU features (beyond the x86-64 baseline: SSE, SSE2, SSE3 — what QEMU's
default ``qemu64`` model offers) that a workload may use, e.g. ``[ssse3, sse4.2]``; the value
``host`` means no masking. Each workload family honours a different mechanism:

* OpenSSL (AES via ``cryptography``): ``OPENSSL_ia32cap`` clears capability bits. Word 1 is
  CPUID.1 EDX (bits 0-31) : ECX (bits 32-63); word 2 is CPUID.7 EBX (0-31) : ECX (32-63).
  Both words are always given: OpenSSL 3 zeroes an omitted second word.
* crc32c: ``CRC32C_SW_MODE=force`` selects the software path (read at import: fresh process).
* x265: ``-x265-params asm=LEVEL``; levels are cumulative (sse2 < ssse3 < sse4.1 < sse4.2 < avx
  < avx2), so a set with a gap is realised by the highest complete level below the gap.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from virtbench.contract import Knob, Realisation, parsed_by
from virtbench.model import VirtbenchError

__all__ = [
    "CPU_FEATURES_KNOB",
    "KNOWN_FEATURES",
    "FeatureSet",
    "crc32c_realisation",
    "feature_set",
    "openssl_realisation",
    "x265_realisation",
]

# Features a variant may grant; anything else in a spec is a typo and is refused by name.
KNOWN_FEATURES = (
    "ssse3", "sse4.1", "sse4.2", "sse4a", "aes", "pclmulqdq", "avx", "avx2", "vaes",
    "vpclmulqdq", "sha_ni", "avx512f",
)
_ALIASES = {"sse4_1": "sse4.1", "sse4_2": "sse4.2", "sha": "sha_ni", "sha-ni": "sha_ni",
            "pclmul": "pclmulqdq"}

# (word, bit) in OPENSSL_ia32cap for each feature OpenSSL dispatches on.
_OPENSSL_BITS: dict[str, tuple[int, int]] = {
    "ssse3": (1, 32 + 9),
    "sse4.1": (1, 32 + 19),
    "sse4.2": (1, 32 + 20),
    "pclmulqdq": (1, 32 + 1),
    "aes": (1, 32 + 25),
    "avx": (1, 32 + 28),
    "avx2": (2, 5),
    "avx512f": (2, 16),
    "sha_ni": (2, 29),
    "vaes": (2, 32 + 9),
    "vpclmulqdq": (2, 32 + 10),
}

_X265_LEVELS = ("sse2", "ssse3", "sse4.1", "sse4.2", "avx", "avx2")


@dataclass(frozen=True)
class FeatureSet:
    """Allowed features, or ``None`` for the unmasked host."""

    allowed: frozenset[str] | None

    @property
    def is_host(self) -> bool:
        return self.allowed is None

    def allows(self, feature: str) -> bool:
        return self.allowed is None or feature in self.allowed


def feature_set(knobs: Mapping[str, Any]) -> FeatureSet:
    """Read the ``cpu_features`` knob; absent means the unmasked host."""
    raw = knobs.get("cpu_features", "host")
    if raw == "host" or raw is None:
        return FeatureSet(None)
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, Iterable):
        raise VirtbenchError("knob cpu_features must be a list of feature names or 'host'")
    allowed = set()
    for item in raw:
        name = _ALIASES.get(str(item).lower(), str(item).lower())
        if name not in KNOWN_FEATURES:
            raise VirtbenchError(
                f"unknown CPU feature '{item}' in cpu_features; known: {', '.join(KNOWN_FEATURES)}"
            )
        allowed.add(name)
    return FeatureSet(frozenset(allowed))


CPU_FEATURES_KNOB = Knob(
    "cpu_features", "CPU features beyond the x86-64 baseline (SSE, SSE2, SSE3) the workload may "
    "use, each masked by the workload's own mechanism; host = no masking",
    parsed_by(lambda value: feature_set({"cpu_features": value})),
    values=f"host | list of {', '.join(KNOWN_FEATURES)}")


def _unused_note(features: FeatureSet, used: Iterable[str], workload: str) -> list[str]:
    if features.allowed is None:
        return []
    unused = sorted(features.allowed - set(used))
    if not unused:
        return []
    return [f"{', '.join(unused)}: not used by {workload}, so granting it changes nothing here"]


def openssl_realisation(features: FeatureSet, workload: str) -> Realisation:
    if features.is_host:
        return Realisation(mechanism="OpenSSL: no mask (host CPU features)",
                           env={"OPENSSL_ia32cap": None})
    masks = {1: 0, 2: 0}
    hidden = []
    for feature, (word, bit) in _OPENSSL_BITS.items():
        if not features.allows(feature):
            masks[word] |= 1 << bit
            hidden.append(feature)
    value = f"~0x{masks[1]:x}:~0x{masks[2]:x}"
    return Realisation(
        mechanism="OpenSSL capability mask (OPENSSL_ia32cap)",
        env={"OPENSSL_ia32cap": value},
        settings={"OPENSSL_ia32cap": value, "hidden": ",".join(hidden) or "none"},
        limitations=[*_unused_note(features, _OPENSSL_BITS, workload),
                     "masks what OpenSSL dispatches on; the CPU itself still has every "
                     "instruction"],
    )


def crc32c_realisation(features: FeatureSet, workload: str) -> Realisation:
    hardware = features.allows("sse4.2")
    return Realisation(
        mechanism="crc32c package path selection (CRC32C_SW_MODE)",
        env={"CRC32C_SW_MODE": None if hardware else "force"},
        settings={"path": "hardware (SSE4.2 crc32 instruction)" if hardware else "software"},
        limitations=_unused_note(features, ["sse4.2"], workload),
    )


def x265_realisation(features: FeatureSet, workload: str) -> Realisation:
    if features.is_host:
        return Realisation(mechanism="x265 asm: auto-detected (host)", settings={"asm": "auto"})
    level = "sse2"
    for candidate in _X265_LEVELS[1:]:
        if features.allows(candidate):
            level = candidate
        else:
            break
    requested = {f for f in features.allowed or () if f in _X265_LEVELS}
    limitations = _unused_note(features, _X265_LEVELS, workload)
    reachable = set(_X265_LEVELS[1 : _X265_LEVELS.index(level) + 1])
    lost = sorted(requested - reachable)
    if lost:
        limitations.append(
            f"x265 SIMD levels are cumulative: {', '.join(lost)} cannot be used without every "
            f"lower level, so asm={level} was used instead"
        )
    return Realisation(mechanism="x265 SIMD level (-x265-params asm=LEVEL)",
                       settings={"asm": level}, limitations=limitations)
