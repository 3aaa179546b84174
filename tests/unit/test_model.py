"""model.Metric's direction: declared, validated where it enters, written as 'none'."""

from __future__ import annotations

import pytest

from virtbench.model import Better, Metric, VirtbenchError, better_text, parse_better


@pytest.mark.parametrize(("value", "expected"), [
    ("lower", Better.LOWER), ("higher", Better.HIGHER), (Better.LOWER, Better.LOWER),
    ("none", None), (None, None)])
def test_a_direction_is_read_from_its_text(value: object, expected: Better | None) -> None:
    assert parse_better(value, "metric 'x'") is expected
    assert better_text(expected) == (expected.value if expected else "none")


@pytest.mark.parametrize("value", ["Lower", "up", "", 1, True, ["lower"]])
def test_a_bad_direction_names_the_field_and_the_metric(value: object) -> None:
    with pytest.raises(VirtbenchError, match=r"^stored metric 'rtt': field 'better' must be "
                                             r"'lower', 'higher' or 'none'"):
        parse_better(value, "stored metric 'rtt'")


def test_metric_checks_its_direction() -> None:
    assert Metric("n", "packets", "higher", "count").better is Better.HIGHER  # type: ignore[arg-type]
    sent = Metric("sent", "packets", None, "probes sent")
    assert not sent.directed and sent.direction_text == "no direction"
    assert Metric("t", "s", Better.LOWER, "time").direction_text == "lower is better"
    with pytest.raises(VirtbenchError, match=r"metric 'n': field 'better' must be"):
        Metric("n", "packets", "sideways", "count")  # type: ignore[arg-type]
    with pytest.raises(VirtbenchError, match=r"metric 'sent': a primary metric needs a "
                                             r"direction"):
        Metric("sent", "packets", None, "probes sent", primary=True)
