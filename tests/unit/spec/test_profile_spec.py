"""The ``profile:`` of a workload and ``run --profile``: values, defaults, errors with lines."""

from __future__ import annotations

import pytest

from virtbench.spec import SpecError, parse_experiment


def _exp(profile: str) -> str:
    return f"""\
name: profiled
workloads:
  - name: cpu.crc32c
    params: {{size_mib: 1}}
    profile:{profile}
  - name: cpu.aes
"""


def test_true_profiles_at_the_defaults_and_a_mapping_sets_each_field() -> None:
    default = parse_experiment(_exp(" true")).workloads[0].profile
    assert default is not None
    assert (default.trials, default.frequency_hz, default.scope) == (None, 99, "auto")
    custom = parse_experiment(_exp("\n      trials: 2\n      frequency_hz: 49\n"
                                   "      scope: cgroup")).workloads[0].profile
    assert custom is not None
    assert (custom.trials, custom.frequency_hz, custom.scope) == (2, 49, "cgroup")
    assert parse_experiment(_exp(" false")).workloads[0].profile is None


@pytest.mark.parametrize(("profile", "message"), [
    ("\n      frequency_hz: 0", "f.yaml:6: workloads[0].profile.frequency_hz: Input should be "
                                "greater than or equal to 1"),
    ("\n      trials: 0", "f.yaml:6: workloads[0].profile.trials: Input should be greater than "
                          "or equal to 1"),
    ("\n      scope: pids", "f.yaml:6: workloads[0].profile.scope: Input should be 'auto', "
                            "'system' or 'cgroup'"),
    ("\n      trails: 2", "f.yaml:6: workloads[0].profile.trails: Extra inputs are not "
                          "permitted; did you mean 'trials'?"),
    (" often", "f.yaml:5: workloads[0].profile: Input should be a valid dictionary"),
])
def test_a_bad_value_names_the_field_and_the_line(profile: str, message: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_experiment(_exp(profile), "f.yaml")
    assert message in str(caught.value)


def test_profile_everywhere_keeps_a_workloads_own_profile() -> None:
    exp = parse_experiment(_exp("\n      frequency_hz: 49")).profiled_everywhere()
    first, second = (w.profile for w in exp.workloads)
    assert first is not None and first.frequency_hz == 49
    assert second is not None and second.frequency_hz == 99
    assert parse_experiment(_exp(" false")).workloads[1].profile is None  # the file unchanged
