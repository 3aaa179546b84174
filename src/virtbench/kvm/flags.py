"""CPU flag names: libvirt's spelling vs Linux's, and what software uses each flag.

libvirt and QEMU spell flags ``sse4.2``, ``pclmuldq``, ``tsc-deadline``; Linux's /proc/cpuinfo
spells them ``sse4_2``, ``pclmulqdq``, ``tsc_deadline_timer``. virtbench compares flags in
libvirt's spelling (the canonical name), because that is what a user writes into the domain XML.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "FLAG_USES",
    "FlagUse",
    "canonical",
    "linux_name",
    "parse_flag_list",
    "uses_of",
]

# libvirt name -> Linux /proc/cpuinfo name, where the generic rule ('.' and '-' -> '_') is wrong.
_LIBVIRT_TO_LINUX = {
    "pclmuldq": "pclmulqdq",
    "tsc-deadline": "tsc_deadline_timer",
    "tsx-ldtrk": "tsxldtrk",
    "ds": "dts",
    "sse3": "pni",
}
_LINUX_TO_LIBVIRT = {v: k for k, v in _LIBVIRT_TO_LINUX.items() if k != "sse3"}

# Spellings users and other tools write, mapped to libvirt's name.
_ALIASES = {
    "pclmulqdq": "pclmuldq",
    "sse3": "pni",
    "sse4_1": "sse4.1",
    "sse4-1": "sse4.1",
    "sse4_2": "sse4.2",
    "sse4-2": "sse4.2",
    "sha_ni": "sha-ni",
    "sha": "sha-ni",
    "tsc_deadline_timer": "tsc-deadline",
    "xd": "nx",
    "aes-ni": "aes",
    "aesni": "aes",
}


def canonical(name: str, known: Iterable[str] = ()) -> str:
    """libvirt's spelling of a flag given in any common spelling (``sse4_2`` -> ``sse4.2``).

    ``known`` is the set of libvirt feature names (from the cpu_map); when given, a Linux-style
    name like ``avx512_vnni`` is matched against it (``avx512vnni``).
    """
    flag = name.strip().lower()
    if flag in _ALIASES:
        return _ALIASES[flag]
    if flag in _LINUX_TO_LIBVIRT:
        return _LINUX_TO_LIBVIRT[flag]
    known_set = set(known)
    if not known_set or flag in known_set:
        return flag
    squashed = {k.replace("-", "").replace("_", "").replace(".", ""): k for k in known_set}
    return squashed.get(flag.replace("-", "").replace("_", "").replace(".", ""), flag)


def linux_name(flag: str) -> str:
    """The name Linux shows in /proc/cpuinfo for a libvirt flag name."""
    if flag in _LIBVIRT_TO_LINUX:
        return _LIBVIRT_TO_LINUX[flag]
    return flag.replace(".", "_").replace("-", "_")


def parse_flag_list(value: str | Iterable[str] | None) -> list[str]:
    """Flags from ``"aes,sse4.2"``, ``"aes sse4.2"`` or a list; order kept, duplicates dropped."""
    if value is None:
        return []
    items: Iterable[str] = value.replace(",", " ").split() if isinstance(value, str) else value
    seen: list[str] = []
    for item in items:
        flag = canonical(str(item))
        if flag and flag not in seen:
            seen.append(flag)
    return seen


@dataclass(frozen=True)
class FlagUse:
    """What a CPU flag speeds up, in words a benchmark reader knows."""

    what: str
    used_by: str


FLAG_USES: dict[str, FlagUse] = {
    "aes": FlagUse("AES-NI instructions", "AES encryption/decryption (OpenSSL, cryptography, "
                   "dm-crypt, TLS, SSH)"),
    "pclmuldq": FlagUse("carry-less multiply", "AES-GCM (GHASH), CRC folding (zlib, crc32c), "
                        "TLS"),
    "sse4.2": FlagUse("SSE4.2 (CRC32, string compare)", "CRC32C (crc32c, iSCSI, ext4/btrfs "
                      "checksums), glibc string functions"),
    "sse4.1": FlagUse("SSE4.1", "video codecs (x265/x264 SIMD), blending, dot products"),
    "ssse3": FlagUse("SSSE3 (byte shuffles)", "video codecs, SHA/AES software paths, glibc memcpy"),
    "sse4a": FlagUse("AMD SSE4a", "rarely used directly; a few codecs"),
    "popcnt": FlagUse("population count", "bitmaps, databases, compression"),
    "avx": FlagUse("AVX (256-bit float)", "BLAS, video codecs, OpenSSL"),
    "avx2": FlagUse("AVX2 (256-bit integer)", "video codecs (x265 asm=avx2), glibc string "
                    "functions, compression, OpenSSL, hashing"),
    "fma": FlagUse("fused multiply-add", "numerics (BLAS, numpy), ML inference"),
    "bmi1": FlagUse("bit manipulation 1", "compression, glibc, compilers' -march=x86-64-v3"),
    "bmi2": FlagUse("bit manipulation 2", "compression (zstd), OpenSSL bignum, x86-64-v3"),
    "movbe": FlagUse("byte-swapping move", "networking and hashing code built for x86-64-v3"),
    "f16c": FlagUse("half-float conversion", "ML inference, image processing"),
    "sha-ni": FlagUse("SHA extensions", "SHA-1/SHA-256 (OpenSSL, git, TLS, package checks)"),
    "rdrand": FlagUse("hardware random numbers", "kernel entropy, OpenSSL RNG"),
    "rdseed": FlagUse("hardware entropy seed", "kernel entropy, OpenSSL RNG seeding"),
    "adx": FlagUse("multi-precision add-carry", "RSA/ECC bignum (OpenSSL)"),
    "vaes": FlagUse("vector AES", "AES on 256/512-bit vectors (OpenSSL)"),
    "vpclmulqdq": FlagUse("vector carry-less multiply", "AES-GCM, CRC on wide vectors"),
    "avx512f": FlagUse("AVX-512 foundation", "numerics, some codecs, OpenSSL"),
    "xsave": FlagUse("extended state save", "required by the OS to enable AVX"),
    "x2apic": FlagUse("x2APIC interrupt controller", "faster interrupts in guests"),
    "tsc-deadline": FlagUse("TSC deadline timer", "lower-overhead timers in guests"),
    "invtsc": FlagUse("invariant TSC", "reliable clock source (blocks migration)"),
    "pdpe1gb": FlagUse("1 GiB pages", "huge pages for databases and DPDK"),
    "lahf_lm": FlagUse("LAHF/SAHF in 64-bit mode", "x86-64-v2 baseline"),
    "cx16": FlagUse("CMPXCHG16B", "lock-free data structures; x86-64-v2 baseline"),
    "abm": FlagUse("LZCNT", "bit scanning; compilers' x86-64-v3"),
}


def uses_of(flag: str) -> str:
    """One line saying what uses ``flag`` (empty when virtbench knows of no common user)."""
    use = FLAG_USES.get(flag)
    return f"{use.what}: {use.used_by}" if use else ""
