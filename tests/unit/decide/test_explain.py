"""The explanation of a difference: shares, their intervals, and the ranking on real profiles."""

from __future__ import annotations

import math

import numpy as np
import pytest
from profiled import HARDWARE, HARDWARE_TRIALS, SOFTWARE, SOFTWARE_TRIALS, add_profiled_run

from virtbench.decide.explain import (
    Estimate,
    TrialProfile,
    _difference,
    explain,
    load_profiles,
    mean_stacks,
)
from virtbench.decide.stack_shares import FrameKind, parse_folded
from virtbench.model import Artifact
from virtbench.store import Store


def _trials(variant: str, contents: list[bytes]) -> list[TrialProfile]:
    return [TrialProfile(variant, "w", i, parse_folded(c)) for i, c in enumerate(contents)]


def test_shares_of_a_small_profile_by_hand() -> None:
    # trial 1: 4 samples, f on 3 stacks (once as leaf), g the leaf of 2; trial 2: f alone
    one = b"p;f;g 2\np;f 1\np;h 1\n"
    two = b"p;f 4\n"
    base = _trials("b", [one, two])
    new = _trials("n", [two, two])
    result = explain(base, new, workload_id="w", base_label="b", new_label="n")
    by_name = {c.frame.name: c for c in result.functions}
    f, g = by_name["f"], by_name["g"]
    assert f.total_base.value == pytest.approx((75.0 + 100.0) / 2)
    assert f.self_base.value == pytest.approx((25.0 + 100.0) / 2)
    assert g.self_base.value == pytest.approx(25.0) and g.total_new.value == 0.0
    assert f.total_diff.value == pytest.approx(100.0 - 87.5)
    assert "p" not in by_name  # the process is not a function
    # two trials per side: a difference interval, but no interval of a side's share (< 3)
    assert f.total_diff.has_interval and not f.total_base.has_interval
    assert [c.frame.name for c in result.functions][:2] == ["f", "g"]  # |Δ| 62.5 > 50, then g


def test_recursion_counts_once_in_total_share() -> None:
    result = explain(_trials("b", [b"p;r;r;r 4\n"] * 3), _trials("n", [b"p;q 4\n"] * 3),
                     workload_id="w", base_label="b", new_label="n")
    r = next(c for c in result.functions if c.frame.name == "r")
    assert r.total_base.value == 100.0 and r.self_base.value == 100.0
    assert r.total_diff == Estimate(-100.0, -100.0, -100.0)  # no variance on either side


def test_welch_interval_of_a_difference() -> None:
    base, new = np.array([10.0, 12.0, 11.0]), np.array([20.0, 23.0, 21.0, 22.0])
    d = _difference(base, new)
    from scipy import stats

    welch = stats.ttest_ind(new, base, equal_var=False).confidence_interval(0.95)
    assert d.value == pytest.approx(10.5)
    assert (d.low, d.high) == pytest.approx((welch.low, welch.high))
    assert math.isnan(_difference(np.array([1.0]), new).low)


def test_mean_stacks_weigh_every_trial_the_same() -> None:
    stacks = mean_stacks([parse_folded(b"p;a 1\n"), parse_folded(b"p;b 1000\n")])
    assert sorted(stacks.values()) == [50.0, 50.0]


def test_crc32c_names_the_software_and_the_hardware_routine(sqlite_store: Store) -> None:
    """The issue's validation: SSE4.2 masked vs granted names the software CRC routine on one
    side and the hardware one on the other, with more than 80 % of the samples in them."""
    run = add_profiled_run(sqlite_store, {"masked": SOFTWARE_TRIALS,
                                          "granted": HARDWARE_TRIALS})
    profiles = load_profiles(sqlite_store, run)
    assert len(profiles.trials) == 6 and profiles.workloads == ["crc32c"]
    result = explain(profiles.of("masked", "crc32c"), profiles.of("granted", "crc32c"),
                     workload_id="crc32c", base_label="masked", new_label="granted")
    top = {c.frame.name: c for c in result.functions[:2]}
    assert set(top) == {SOFTWARE, HARDWARE}
    sw, hw = top[SOFTWARE], top[HARDWARE]
    assert sw.frame.kind is hw.frame.kind is FrameKind.USER
    assert sw.self_base.value > 80 and sw.self_new.value == 0.0
    assert hw.self_new.value > 80 and hw.self_base.value == 0.0
    assert sw.self_diff.high < 0 < hw.self_diff.low  # both changes significant
    assert sw.significant and hw.significant
    assert sw.total_base.low < sw.total_base.value < sw.total_base.high <= 100.0
    assert result.base_trials == result.new_trials == 3
    assert result.unresolved_frames[0] == "[unknown]"
    assert result.unresolved_new_pct == 0.0  # every sample ran in a named function
    # saved before profiles said which samples are the workload's: every sample, with a note
    assert result.scope == "system" and result.workload_comms == []
    assert len(result.notes) == 1 and "6 of 6 profiles do not say" in result.notes[0]
    assert math.isclose(sum(result.base_stacks.values()), 100.0)


def test_warmups_failures_and_missing_profiles(sqlite_store: Store) -> None:
    run = add_profiled_run(sqlite_store, {"masked": [SOFTWARE_TRIALS[0], None],
                                          "granted": [None, None]})
    profiles = load_profiles(sqlite_store, run)
    assert [(t.variant, t.repetition) for t in profiles.trials] == [("masked", 0)]
    assert profiles.trials[0].meta["frequency_hz"] == 499
    result = explain(profiles.of("masked", "crc32c"), profiles.of("granted", "crc32c"),
                     workload_id="crc32c", base_label="masked", new_label="granted")
    assert result.functions == []
    assert any("no profile with samples on NEW" in n for n in result.notes)


class _TrialsNotRead:
    """The store's artifacts, and a failure if the trials are asked for."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def artifacts(self, run_id: str) -> list[dict[str, object]]:
        return self._store.artifacts(run_id)

    def trials(self, run_id: str) -> list[dict[str, object]]:
        raise AssertionError(f"the trials of {run_id} were read")


def test_a_run_without_profiles_has_its_trials_left_unread(sqlite_store: Store) -> None:
    # artifacts of other names (a tool's output) are no profile
    run = add_profiled_run(sqlite_store, {"masked": [None, None]}, counters=False,
                           extra={("masked", 0): [Artifact("raw.txt", b"output")]})
    assert [a["name"] for a in sqlite_store.artifacts(run)] == ["raw.txt"]
    assert load_profiles(_TrialsNotRead(sqlite_store), run).trials == []
    profiled = add_profiled_run(sqlite_store, {"masked": [SOFTWARE_TRIALS[0]]})
    with pytest.raises(AssertionError, match="trials of"):  # a profile: its trials are read
        load_profiles(_TrialsNotRead(sqlite_store), profiled)


def test_no_symbols_is_said() -> None:
    unresolved = b"p;[unknown];[unknown] 90\np;main 10\n"
    result = explain(_trials("b", [unresolved] * 3), _trials("n", [unresolved] * 3),
                     workload_id="w", base_label="b", new_label="n")
    assert result.unresolved_base_pct == pytest.approx(90.0)
    assert any("unresolved frame" in n and "no symbols" in n for n in result.notes), result.notes


def _scoped(variant: str, whole: bytes, workload: bytes | None,
            comms: object = ("probe",)) -> TrialProfile:
    meta = {"workload_comms": list(comms) if isinstance(comms, tuple) else comms}
    return TrialProfile(variant, "w", 0, parse_folded(whole), meta,
                        parse_folded(workload) if workload is not None else None)


# the whole recording: the workload's process `probe`, idle, and another process `probe` too
WHOLE_B = b"probe;sw 6\nswapper;idle 90\nprobe;other 4\n"
WHOLE_N = b"probe;hw 2\nswapper;idle 96\nprobe;other 2\n"
WORKLOAD_B, WORKLOAD_N = b"probe;sw 6\n", b"probe;hw 2\n"


def test_workload_scope_counts_only_the_workload_stacks() -> None:
    base = [_scoped("b", WHOLE_B, WORKLOAD_B)] * 3
    new = [_scoped("n", WHOLE_N, WORKLOAD_N)] * 3
    result = explain(base, new, workload_id="w", base_label="b", new_label="n")
    by_name = {c.frame.name: c for c in result.functions}
    assert result.scope == "workload" and result.workload_comms == ["probe"]
    assert by_name["sw"].self_base.value == 100.0 and by_name["hw"].self_new.value == 100.0
    assert "idle" not in by_name and "other" not in by_name  # not the workload's processes
    assert "workload's samples" in result.scope_text and "probe" in result.scope_text
    assert result.as_dict()["scope"] == "workload" and result.notes == []
    whole = explain(base, new, workload_id="w", base_label="b", new_label="n", scope="system")
    assert whole.scope == "system" and whole.workload_comms == []
    assert {c.frame.name: c for c in whole.functions}["idle"].self_base.value == 90.0
    assert "every process, idle included" in whole.scope_text
    with pytest.raises(ValueError, match="scope"):
        explain(base, new, workload_id="w", base_label="b", new_label="n", scope="guest")


def test_one_profile_without_the_workload_means_every_sample_with_a_note() -> None:
    base = [_scoped("b", WHOLE_B, WORKLOAD_B), _scoped("b", WHOLE_B, None)]
    new = [_scoped("n", WHOLE_N, WORKLOAD_N)] * 2
    result = explain(base, new, workload_id="w", base_label="b", new_label="n")
    assert result.scope == "system"
    assert "1 of 4 profiles do not say" in result.notes[0]
    assert {c.frame.name for c in result.functions} >= {"idle", "sw", "hw"}


@pytest.mark.parametrize("comms", [
    "probe", ["x" * 65], [1, 2], ["ok"] * 65, [""], {"a": 1}, None])
def test_stored_workload_comms_are_checked(comms: object) -> None:
    trial = _scoped("b", WHOLE_B, WORKLOAD_B, comms)
    assert trial.comms() == []
    result = explain([trial] * 2, [trial] * 2, workload_id="w", base_label="b", new_label="n")
    assert result.scope == "workload" and result.workload_comms == []
    assert result.scope_text.endswith("the processes virtbench started for it)")


def test_load_profiles_reads_the_workload_stacks_and_the_guest_scope(
        sqlite_store: Store) -> None:
    json_type = "application/json"
    run = add_profiled_run(sqlite_store, {"a": [WHOLE_B, WHOLE_B, WHOLE_N]}, extra={
        ("a", 0): [Artifact("profile.workload.folded", WORKLOAD_B, "text/x-folded-stacks"),
                   Artifact("profile.json", b'{"scope": "system", "workload_comms": ["probe"]}',
                            json_type)],
        ("a", 1): [Artifact("profile.json",
                            b'{"scope": "guest", "workload_comms": ["qemu-system-x86"]}',
                            json_type)]})
    got = {t.repetition: t for t in load_profiles(sqlite_store, run).trials}
    assert got[0].workload is not None and got[0].workload.samples == 6
    assert got[0].comms() == ["probe"]
    assert got[1].workload == got[1].profile  # scope guest: the recording is the workload's
    assert got[2].workload is None  # an older profile: which samples are the workload's unknown
