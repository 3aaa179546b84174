"""What a probe reports besides its values: the timed section a profile keeps."""

from __future__ import annotations

import pytest

from virtbench.workloads.probe import probe_window


@pytest.mark.parametrize(("reported", "window"), [
    ({"window": [1.5, 2.0]}, (1.5, 2.0)),
    ({"window": [3, 3]}, (3.0, 3.0)),
    ({}, None),
    ({"window": [2.0, 1.0]}, None),
    ({"window": [1.0]}, None),
    ({"window": [1.0, "2"]}, None),
    ({"window": [True, 2.0]}, None),
    ({"window": [-1.0, 2.0]}, None),
    ({"window": [1.0, float("inf")]}, None),
    ({"window": "1,2"}, None),
])
def test_a_probes_window_is_two_ordered_finite_times_or_none(
        reported: dict[str, object], window: tuple[float, float] | None) -> None:
    assert probe_window(reported) == window
