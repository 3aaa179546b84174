"""Names and labels from a tool output reach the terminal as text: rich markup in a fio job
name crashed `virtbench parse` (exit 3) and escape sequences went to the terminal raw."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

from .corpus import DATA

_HOSTILE = "[/][bold]\x1b]0;pwned\x07\x1b[2J"


def _parse(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "virtbench", "parse", *args],
                          capture_output=True, text=True, check=False)


def test_fio_job_name_with_markup_and_escapes(tmp_path: Path) -> None:
    text = (DATA / "fio" / "fio3.33-numjobs2-randread-json-normal.txt").read_text()
    escaped = _HOSTILE.replace("\x1b", "\\u001b").replace("\x07", "\\u0007")
    hostile = tmp_path / "fio.txt"
    hostile.write_text(text.replace('"jobname" : "', f'"jobname" : "{escaped}', 1)
                       + "warning: \x1b[31mred\x1b[0m\n")
    done = _parse("fio", str(hostile))
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout + done.stderr and "\x07" not in done.stdout
    assert "[/][bold]\\x1b" in done.stdout  # shown literally, made visible


def test_damaged_capture_named_like_markup(tmp_path: Path) -> None:
    header = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    record = struct.pack("<IIII", 1, 0, 60, 60) + b"\0" * 60
    (tmp_path / "[").mkdir()
    capture = tmp_path / "[" / "]cut.pcap"  # the path reads '.../[/]cut.pcap'
    capture.write_bytes(header + record * 2 + record[:30])
    done = _parse("pcap", str(capture))
    assert done.returncode == 0, done.stderr
    assert "[/]cut.pcap" in done.stderr and "cut short" in done.stderr
