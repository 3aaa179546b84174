"""report.gate's building blocks on their own (the formats through the CLI are in
tests/unit/decide/test_gate_formats.py): a metric's definition and the GitHub escapes that keep a
stored name inside the one workflow command it belongs to."""

from __future__ import annotations

import re

import pytest

from virtbench.model import Better, Metric
from virtbench.report.gate.comparison_rows import definition
from virtbench.report.gate.github import escape_data, escape_property

_COMMAND = re.compile(r"::[a-z]+ title=[^:\n]*::[^\n]*")


def test_definition_names_unit_direction_and_description() -> None:
    metric = Metric("latency_s", "s", Better.LOWER, "time of one request")
    assert definition(metric) == "s, lower is better: time of one request"
    assert definition(Metric("ops", "", Better.HIGHER, "")) == "unitless, higher is better"


def test_definition_quotes_only_the_stored_parts() -> None:
    metric = Metric("m", "|u|", Better.HIGHER, "a|b")
    assert definition(metric, lambda s: s.replace("|", r"\|")) == (
        r"\|u\|, higher is better: a\|b")


@pytest.mark.parametrize("name", ["w::error title=x::boom", "a\nb", "a\r\n::notice::x",
                                  "t=1,file=/etc/passwd", "100%0A"])
def test_a_stored_name_stays_in_its_own_command(name: str) -> None:
    line = f"::error title={escape_property(name)}::{escape_data(name)}"
    assert "\n" not in line and "\r" not in line
    assert _COMMAND.fullmatch(line)  # one command, its title one property
    assert escape_property(name).count(",") == 0

