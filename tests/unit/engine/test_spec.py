from pathlib import Path

import pytest

from virtbench.spec import SpecError, load_experiment, parse_experiment

GOOD = """\
name: demo
baseline: default
variants:
  - name: default
    knobs: {cpu_features: []}
  - name: tuned
    knobs: {cpu_features: [aes]}
workloads:
  - name: cpu.crc32c
repetitions: 3
"""


def test_valid_experiment_loads() -> None:
    exp = parse_experiment(GOOD)
    assert [v.name for v in exp.all_variants()] == ["default", "tuned"]
    assert exp.baseline_name == "default"
    assert exp.repetitions == 3


def test_error_names_file_line_and_field() -> None:
    text = GOOD.replace("repetitions: 3", "repetitions: 3\nwarmup: -2\nordr: blocked")
    with pytest.raises(SpecError) as info:
        parse_experiment(text, "exp.yaml")
    message = str(info.value)
    assert "exp.yaml:11: warmup" in message
    assert "exp.yaml:12: ordr: Extra inputs are not permitted" in message


def test_nested_error_points_at_the_item_line() -> None:
    text = GOOD.replace("  - name: cpu.crc32c", "  - name: cpu.crc32c\n    parms: {}")
    with pytest.raises(SpecError, match=r"x.yaml:10: workloads\[0\].parms"):
        parse_experiment(text, "x.yaml")


def test_adaptive_min_above_max_is_refused_with_line() -> None:
    text = GOOD.replace("repetitions: 3", "repetitions: {min: 9, max: 4}")
    with pytest.raises(SpecError, match=r"s.yaml:10: repetitions: .*min \(9\) must not exceed"):
        parse_experiment(text, "s.yaml")


def test_unknown_baseline_and_duplicate_variants() -> None:
    with pytest.raises(SpecError, match="baseline 'nope' is not a variant"):
        parse_experiment(GOOD.replace("baseline: default", "baseline: nope"))
    with pytest.raises(SpecError, match="repeated: default"):
        parse_experiment(GOOD.replace("name: tuned", "name: default"))


def test_invalid_yaml_names_line() -> None:
    with pytest.raises(SpecError, match=r"bad.yaml:2: invalid YAML: mapping values"):
        parse_experiment("name: x\nkey: value: other\n", "bad.yaml")


def test_factorial_expands_every_subset() -> None:
    exp = parse_experiment("""\
name: f
factorial: {knob: cpu_features, factors: [ssse3, sse4.1, sse4.2, sse4a, aes]}
workloads: [{name: cpu.crc32c}]
""")
    variants = exp.all_variants()
    assert len(variants) == 32
    assert variants[0].name == "default" and variants[0].knobs == {"cpu_features": []}
    assert variants[-1].knobs["cpu_features"] == ["ssse3", "sse4.1", "sse4.2", "sse4a", "aes"]
    assert exp.baseline_name == "default"


def test_matrix_expands_grid() -> None:
    exp = parse_experiment("""\
name: m
matrix: {switch: [linux-bridge, ovs], background_mbps: [0, 100]}
workloads: [{name: cpu.crc32c}]
""")
    names = [v.name for v in exp.all_variants()]
    assert names == ["switch=linux-bridge,background_mbps=0",
                     "switch=linux-bridge,background_mbps=100",
                     "switch=ovs,background_mbps=0", "switch=ovs,background_mbps=100"]


def test_examples_are_valid() -> None:
    for path in sorted(Path(__file__).resolve().parents[3].glob("examples/*.yaml")):
        exp, _text = load_experiment(path)
        assert exp.workloads, path


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="cannot read experiment file"):
        load_experiment(tmp_path / "missing.yaml")


def test_workload_params_are_checked_with_lines() -> None:
    text = GOOD.replace("  - name: cpu.crc32c", "  - name: cpu.crc32c\n    params:\n"
                                                "      size_mib: -1")
    with pytest.raises(SpecError, match=r"p.yaml:11: workloads\[0\].params.size_mib: .*greater"):
        parse_experiment(text, "p.yaml")


def test_unknown_workload_and_lab_are_named() -> None:
    text = GOOD.replace("name: cpu.crc32c", "name: cpu.crc33") + "lab: {kind: moon}\n"
    with pytest.raises(SpecError) as info:
        parse_experiment(text, "u.yaml")
    assert "u.yaml:9: workloads[0].name: unknown workload 'cpu.crc33'" in str(info.value)
    assert "u.yaml:11: lab.kind: unknown lab 'moon'" in str(info.value)
