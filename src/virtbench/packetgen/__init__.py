"""Packet-generator helpers (pure): trafgen configurations per frame size, its report, GNU time."""

from virtbench.packetgen.frames import (
    FRAME_SIZES,
    IMIX,
    FrameMix,
    frame_mix,
    trafgen_config,
)
from virtbench.packetgen.reports import GeneratorReport, parse_gnu_time, parse_trafgen
from virtbench.packetgen.shaper import shaper_qdisc

__all__ = ["FRAME_SIZES", "IMIX", "FrameMix", "GeneratorReport", "frame_mix", "parse_gnu_time",
           "parse_trafgen", "shaper_qdisc", "trafgen_config"]
