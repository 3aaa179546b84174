"""Test frames in RFC 2544's sizes: UDP/IPv4 in Ethernet, written as trafgen configurations.

A frame size counts the Ethernet header and the 4-byte FCS, as RFC 2544 does; the kernel (and
trafgen) handle the frame without its FCS, so the bytes written are ``size - 4``.
"""

from __future__ import annotations

from dataclasses import dataclass

from virtbench.model import VirtbenchError

__all__ = ["FCS_BYTES", "FRAME_SIZES", "IMIX", "FrameMix", "frame_mix", "trafgen_config"]

FRAME_SIZES = (64, 128, 256, 512, 1024, 1280, 1518)
"""RFC 2544 section 9.1's Ethernet frame sizes, bytes with FCS."""

IMIX = ((64, 7), (594, 4), (1518, 1))
"""The simple IMIX: 7 × 64 B, 4 × 594 B, 1 × 1518 B per 12 frames."""

FCS_BYTES = 4
"""Bytes of an Ethernet frame's FCS: counted in its size, not handed to the kernel."""
_HEADERS = 14 + 20 + 8  # Ethernet, IPv4, UDP
_PREAMBLE_AND_GAP = 20  # 8 B preamble + SFD, 12 B inter-frame gap: what a wire carries too


@dataclass(frozen=True)
class FrameMix:
    """The frames one generator round sends, in order: (size with FCS, count)."""

    name: str
    sizes: tuple[tuple[int, int], ...]

    @property
    def frames_per_round(self) -> int:
        return sum(count for _size, count in self.sizes)

    @property
    def mean_size(self) -> float:
        """Mean frame size with FCS, bytes."""
        return sum(size * count for size, count in self.sizes) / self.frames_per_round

    def bits_per_second(self, pps: float) -> float:
        """Ethernet frame bits (with FCS) per second at ``pps`` frames per second."""
        return pps * self.mean_size * 8

    def wire_bits_per_second(self, pps: float) -> float:
        """Bits per second on a wire, with preamble and inter-frame gap (RFC 2544's layer 1)."""
        return pps * (self.mean_size + _PREAMBLE_AND_GAP) * 8


def frame_mix(size: int | str, mtu: int = 1500) -> FrameMix:
    """The mix for a frame size (64..mtu+18) or ``imix``."""
    sizes: tuple[tuple[int, int], ...]
    if size == "imix":
        sizes = IMIX
    elif isinstance(size, int) and not isinstance(size, bool):
        sizes = ((size, 1),)
    else:
        raise VirtbenchError(f"frame size must be a whole number of bytes or 'imix', got "
                             f"{size!r}")
    largest = mtu + 14 + FCS_BYTES
    for one, _count in sizes:
        if not 64 <= one <= largest:
            raise VirtbenchError(f"frame size {one} B is outside 64..{largest} B (an MTU of "
                                 f"{mtu} carries at most {largest} B frames)")
    return FrameMix(str(size), sizes)


def trafgen_config(mix: FrameMix, src_mac: str, dst_mac: str, src_ip: str, dst_ip: str,
                   port: int = 9) -> str:
    """A trafgen configuration sending ``mix`` as UDP (discard port) from src to dst."""
    blocks = []
    for size, count in mix.sizes:
        payload = size - FCS_BYTES - _HEADERS
        block = (f"{{ eth(da={dst_mac}, sa={src_mac}, type=0x0800), "
                 f"ipv4(saddr={src_ip}, daddr={dst_ip}, ttl=64), "
                 f"udp(sp={port}, dp={port}), fill(0x00, {payload}) }}")
        blocks += [block] * count
    return "\n".join(blocks) + "\n"
