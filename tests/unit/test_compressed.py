"""The one decompression helper (virtbench.compressed): each format, several members or frames,
plain input untouched, damage named by its compression. Real `zstd` output: test_pcap.py."""

from __future__ import annotations

import gzip
import lzma
import mmap
from collections.abc import Callable
from pathlib import Path

import pytest
import zstandard

from virtbench.compressed import (
    DecompressedTooLarge,
    DecompressionError,
    compression_of,
    decompress,
)

TEXT = b'{"start": {"version": "iperf 3.12"}}\n' * 50
LIMIT = 1 << 20


def _zstd_frame(data: bytes) -> bytes:
    stream = zstandard.ZstdCompressor().compressobj()  # as from a pipe: no content size
    return stream.compress(data) + stream.flush()


PACKED: dict[str, Callable[[bytes], bytes]] = {"gzip": gzip.compress, "xz": lzma.compress,
                                               "zstd": _zstd_frame}


@pytest.mark.parametrize("kind", sorted(PACKED))
def test_each_format_by_its_magic_bytes(kind: str) -> None:
    packed = PACKED[kind](TEXT)
    assert compression_of(packed) == kind
    assert decompress(packed, limit=LIMIT) == (TEXT, kind)


@pytest.mark.parametrize("kind", ["gzip", "zstd"])
def test_members_or_frames_one_after_another_are_one_stream(kind: str) -> None:
    half = len(TEXT) // 2
    joined = PACKED[kind](TEXT[:half]) + PACKED[kind](TEXT[half:])
    assert decompress(joined, limit=LIMIT) == (TEXT, kind)


def test_plain_input_is_returned_as_it_is(tmp_path: Path) -> None:
    assert decompress(TEXT, limit=LIMIT) == (TEXT, "")
    path = tmp_path / "plain.bin"
    path.write_bytes(TEXT)
    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        out, kind = decompress(mapped, limit=LIMIT)
        assert out is mapped and kind == ""


def test_a_mapped_compressed_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "packed.zst"
    path.write_bytes(_zstd_frame(TEXT))
    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        assert decompress(mapped, limit=LIMIT) == (TEXT, "zstd")


@pytest.mark.parametrize("kind", sorted(PACKED))
def test_cut_off_input_names_its_compression(kind: str) -> None:
    packed = PACKED[kind](TEXT)
    with pytest.raises(DecompressionError, match=rf"^{kind}-compressed input is damaged or cut "
                                                 r"off \(.+\)$") as info:
        decompress(packed[: len(packed) - 8], limit=LIMIT)
    assert info.value.kind == kind and info.value.reason


@pytest.mark.parametrize("kind", sorted(PACKED))
def test_a_compression_bomb_stops_at_the_limit(kind: str) -> None:
    # 64 MiB of zeros packs into a few KiB; unpacking stops within one input step of 1 MiB
    # (virtbench.compressed._STEP: at most tens of MiB past it), whatever the format, and
    # says so.
    bomb = PACKED[kind](bytes(64 << 20))
    assert len(bomb) < 64 << 20 >> 6
    with pytest.raises(DecompressedTooLarge, match=rf"^{kind}-compressed input unpacks to more "
                                                    r"than 1 MiB$"):
        decompress(bomb, limit=1 << 20)
    assert decompress(PACKED[kind](bytes(1 << 20)), limit=1 << 20) == (bytes(1 << 20), kind)


def test_gzip_zero_padding_after_the_last_member_is_accepted() -> None:
    assert decompress(gzip.compress(TEXT) + bytes(512), limit=LIMIT) == (TEXT, "gzip")
