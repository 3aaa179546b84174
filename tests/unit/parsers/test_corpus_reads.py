"""Every corpus file parses, with its format recognised, through the same path as the CLI."""

from __future__ import annotations

import gzip
import lzma
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from virtbench.parsers.parser_contract import ParseError
from virtbench.plugins import get_parser

from .corpus import DATA, all_corpus


@pytest.mark.parametrize(("tool", "path"), all_corpus(), ids=lambda v: getattr(v, "name", v))
def test_every_corpus_file_parses(tool: str, path: Path) -> None:
    parsed = get_parser(tool).read(path.read_bytes())
    assert parsed.measurements
    declared = {m.name for m in get_parser(tool).metrics}
    assert {m.metric for m in parsed.measurements} <= declared
    for m in parsed.measurements:
        assert (m.value is None) == (m.status != "ok"), m


@pytest.mark.parametrize("compress", [gzip.compress, lzma.compress,
                                      lambda b: zstandard.ZstdCompressor().compress(b)])
def test_compressed_input_is_found_by_magic_bytes(compress: object) -> None:
    raw = (DATA / "fio" / "fio3.33-json-normal-write-randrw.txt").read_bytes()
    parser = get_parser("fio")
    plain = parser.read(raw)
    packed = parser.read(compress(raw))  # type: ignore[operator]
    assert [(m.metric, m.value) for m in packed.measurements] == \
        [(m.metric, m.value) for m in plain.measurements]
    assert packed.format.startswith(plain.format) and packed.format.endswith(")")


def test_zstd_stream_without_content_size() -> None:
    raw = (DATA / "irtt" / "irtt0.9-plain-loopback.json").read_bytes()
    out = zstandard.ZstdCompressor().compressobj()
    packed = out.compress(raw) + out.flush()
    assert get_parser("irtt").read(packed).format == "irtt 0.9.0 JSON (zstd)"


def test_damaged_compressed_input_is_a_parse_error() -> None:
    packed = (DATA / "irtt" / "irtt0.9-default-loopback.json.gz").read_bytes()
    with pytest.raises(ParseError, match="gzip-compressed input is damaged or cut off"):
        get_parser("irtt").read(packed[: len(packed) // 2])


def _cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "virtbench", "parse", *args],
                          input=stdin, capture_output=True, timeout=60)


def test_cli_warnings_on_stderr_and_in_json() -> None:
    path = DATA / "irtt" / "irtt0.9-tstamp-none-loopback.json.gz"
    out = _cli("irtt", str(path), "--json")
    assert out.returncode == 0, out.stderr
    assert b"warning: irtt did not measure one_way_delay_up_ms" in out.stderr
    import json
    doc = json.loads(out.stdout)
    assert doc["format"] == "irtt 0.9.0 JSON (gzip)" and doc["partial"] is False
    assert any("tstamp=none" in w for w in doc["warnings"])
    up = next(m for m in doc["measurements"] if m["metric"] == "one_way_delay_up_ms")
    assert up["value"] is None and up["status"] == "not_measured"


def test_cli_unreadable_input_exits_2_with_one_line() -> None:
    path = DATA / "irtt" / "irtt0.9-plain-loopback.json"
    out = _cli("fio", "-", stdin=path.read_bytes()[:4000])
    assert out.returncode == 2
    assert b"Traceback" not in out.stderr
    assert b"fio" in out.stderr and b"expected" in out.stderr
