"""trafgen configurations per RFC 2544 frame size, and trafgen's and GNU time's reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from virtbench.model import VirtbenchError
from virtbench.packetgen import (
    FRAME_SIZES,
    frame_mix,
    parse_gnu_time,
    parse_trafgen,
    trafgen_config,
)

DATA = Path(__file__).parents[2] / "data" / "trafgen"


@pytest.mark.parametrize("size", FRAME_SIZES)
def test_each_frame_carries_its_size_without_fcs(size: int) -> None:
    config = trafgen_config(frame_mix(size), "02:00:00:00:00:01", "02:00:00:00:00:02",
                            "198.18.0.1", "198.19.0.2")
    payload = int(config.split("fill(0x00, ")[1].split(")")[0])
    assert 14 + 20 + 8 + payload + 4 == size


def test_imix_is_seven_four_one() -> None:
    mix = frame_mix("imix")
    config = trafgen_config(mix, "02:00:00:00:00:01", "02:00:00:00:00:02", "198.18.0.1",
                            "198.19.0.2")
    assert len(config.splitlines()) == 12 == mix.frames_per_round
    assert mix.mean_size == pytest.approx((7 * 64 + 4 * 594 + 1518) / 12)
    # RFC 2544 bit rates: 1 Mpps of 64 B frames is 512 Mbit/s of frames, 672 on the wire.
    assert frame_mix(64).bits_per_second(1e6) == 512e6
    assert frame_mix(64).wire_bits_per_second(1e6) == 672e6


@pytest.mark.parametrize("size", [63, 1519, "jumbo", True])
def test_impossible_frame_sizes_are_refused(size: object) -> None:
    with pytest.raises(VirtbenchError, match="frame size"):
        frame_mix(size)  # type: ignore[arg-type]


def test_trafgen_summary_one_cpu() -> None:
    report = parse_trafgen((DATA / "trafgen-1cpu.txt").read_text())
    assert (report.packets, report.cpus) == (500, 1)
    assert report.sending_s == pytest.approx(0.523298)
    assert parse_gnu_time((DATA / "time-1cpu.txt").read_text()) == (0.54, 0.0, 0.01)


def test_trafgen_summary_two_cpus_takes_the_longest() -> None:
    report = parse_trafgen((DATA / "trafgen-2cpu.txt").read_text())
    assert (report.packets, report.cpus) == (20000, 2)
    text = (DATA / "trafgen-2cpu.txt").read_text()
    assert f"{int(report.sending_s)} sec" in text


def test_a_crashed_trafgen_is_named() -> None:
    with pytest.raises(VirtbenchError, match="trafgen printed no summary"):
        parse_trafgen("Cannot open device g9\n")
    with pytest.raises(VirtbenchError, match="GNU time"):
        parse_gnu_time("Command terminated by signal 9\n")
