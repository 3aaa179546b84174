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
lab: {kind: vswitch}
matrix: {switch: [linux-bridge, ovs], background_mbps: [0, 100]}
workloads: [{name: net.qos-transfer}]
""")
    names = [v.name for v in exp.all_variants()]
    assert names == ["switch=linux-bridge,background_mbps=0",
                     "switch=linux-bridge,background_mbps=100",
                     "switch=ovs,background_mbps=0", "switch=ovs,background_mbps=100"]


def test_examples_are_valid() -> None:
    for path in sorted(Path(__file__).resolve().parents[3].glob("examples/*.yaml")):
        exp, _text = load_experiment(path)
        assert exp.workloads, path


def test_cache_sweep_pairs_every_cache_mode_with_cache_none() -> None:
    """The cache sweep's compare_by: cache needs, for each variant with another cache mode, the
    variant with the same knobs and cache none (writeback-threads vs none-threads: the floor of
    docs/guests.md, "Cache modes on this machine")."""
    path = Path(__file__).resolve().parents[3] / "examples" / "storage-guests-cache.yaml"
    exp, _text = load_experiment(path)
    assert exp.compare_by == "cache"
    knobs = [dict(v.knobs) for v in exp.all_variants()]
    others = [k for k in knobs if k["cache"] != "none"]
    assert {"cache": "writeback", "io": "threads"} in others
    for k in others:
        assert {**k, "cache": "none"} in knobs, k
    assert any(w.params.get("seq_block_size") == "4M" for w in exp.workloads)


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


# ---- knobs: every variant knob must be declared by the lab or a workload of the experiment ----

def _refusal(text: str, source: str = "k.yaml") -> str:
    with pytest.raises(SpecError) as info:
        parse_experiment(text, source)
    return str(info.value)


def test_misspelt_workload_knob_names_line_variant_and_closest_knob() -> None:
    message = _refusal("""\
name: typo
variants:
  - {name: a, knobs: {cpu_featurs: []}}
  - {name: b, knobs: {cpu_features: [aes]}}
workloads: [{name: cpu.crc32c}]
""")
    assert ("k.yaml:3: variants[0].knobs.cpu_featurs (variant 'a'): unknown knob 'cpu_featurs'; "
            "did you mean 'cpu_features'? (knobs of lab host and workload cpu.crc32c: "
            "cpu_features)") in message
    assert "variant 'b'" not in message


def test_misspelt_lab_knob_is_refused() -> None:
    message = _refusal("""\
name: router
lab: {kind: vnf-router}
variants:
  - {name: none, knobs: {neighbours: 0}}
  - name: two
    knobs:
      neighbors: 2
workloads: [{name: net.router-throughput}]
""")
    assert ("k.yaml:7: variants[1].knobs.neighbors (variant 'two'): unknown knob 'neighbors'; "
            "did you mean 'neighbours'?") in message


def test_misspelt_matrix_key_is_refused() -> None:
    message = _refusal("""\
name: m
lab: {kind: vswitch}
matrix:
  switch: [linux-bridge, ovs]
  backgroud_mbps: [0, 100]
workloads: [{name: net.qos-transfer}]
""")
    assert ("k.yaml:5: matrix.backgroud_mbps (variants 'switch=linux-bridge,backgroud_mbps=0', "
            "'switch=linux-bridge,backgroud_mbps=100', … 4 in all): unknown knob "
            "'backgroud_mbps'; did you mean 'background_mbps'?") in message


def test_misspelt_factorial_knob_and_other_knob_are_refused() -> None:
    message = _refusal("""\
name: f
factorial:
  knob: cpu_feature
  factors: [aes, sse4.2]
  other_knobs: {filesystm: ext4}
workloads: [{name: cpu.aes}]
""")
    assert ("k.yaml:3: factorial.knob (variants 'default', 'aes', … 4 in all): unknown knob "
            "'cpu_feature'; did you mean 'cpu_features'?") in message
    assert ("k.yaml:5: factorial.other_knobs.filesystm (variants 'default', 'aes', … 4 in all): "
            "unknown knob 'filesystm'") in message


def test_a_knob_with_no_declarer_says_nobody_declares_any() -> None:
    message = _refusal("name: x\nvariants: [{name: a, knobs: {speed: 3}}]\n"
                       "workloads: [{name: exec.noop}]\n")
    assert ("k.yaml:2: variants[0].knobs.speed (variant 'a'): unknown knob 'speed'; lab host and "
            "workload exec.noop declare no knobs") in message


def test_knob_values_are_checked_against_the_declaration() -> None:
    message = _refusal("""\
name: v
lab: {kind: vswitch}
matrix:
  switch: [linux-bridge, vpp]
  background_mbps: [0, -5]
workloads: [{name: net.qos-transfer}]
""")
    assert ("k.yaml:4: matrix.switch[1] (variants 'switch=linux-bridge,background_mbps=0', "
            "'switch=linux-bridge,background_mbps=-5', … 4 in all): knob 'switch' = 'vpp' is "
            "refused by lab vswitch (linux-bridge | ovs | ovs-dpdk): must be one of "
            "linux-bridge | ovs | ovs-dpdk") in message
    assert "k.yaml:5: matrix.background_mbps[1]" in message
    assert "greater than or equal to 0" in message
    features = _refusal(GOOD.replace("[aes]", "[aes, avx9]").replace(
        "  - name: cpu.crc32c", "  - name: cpu.crc32c\n  - name: cpu.aes"))
    assert ("k.yaml:7: variants[1].knobs.cpu_features (variant 'tuned'): knob 'cpu_features' = "
            "['aes', 'avx9'] is refused by workload cpu.crc32c and workload cpu.aes (host | "
            "list of ssse3,") in features
    assert features.count("unknown CPU feature 'avx9'") == 1  # one declaration, judged once
    storage = _refusal("""\
name: s
lab: {kind: storage}
variants: [{name: a, knobs: {vm_size: "two", filesystem: btrfs}}]
workloads: [{name: storage.fio}]
""")
    assert "variants[0].knobs.vm_size (variant 'a'): knob 'vm_size' = 'two'" in storage
    assert "unknown kind 'btrfs'" in storage


def test_a_knob_declared_by_the_lab_reaches_only_the_lab() -> None:
    from virtbench.labs.storage_lab import StorageLab

    knobs = {"vm_size": "1x128", "filesystem": "tmpfs", "cpu_features": []}
    assert StorageLab.own_knobs(knobs) == {"vm_size": "1x128", "filesystem": "tmpfs"}


def test_run_check_refuses_a_misspelt_knob_before_anything_starts(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    spec = tmp_path / "router.yaml"
    spec.write_text("name: r\nlab: {kind: vnf-router}\nvariants:\n"
                    "  - {name: a, knobs: {neighbors: 2}}\n"
                    "workloads: [{name: net.router-throughput}]\n")
    for args in (["--check"], ["--store", str(tmp_path / "s.db")]):
        result = subprocess.run([sys.executable, "-m", "virtbench.cli", "run", str(spec), *args],
                                capture_output=True, text=True, timeout=120,
                                env={**os.environ, "COLUMNS": "300"})
        assert result.returncode == 2, result.stderr
        assert f"{spec}:4: variants[0].knobs.neighbors (variant 'a'): unknown knob " in (
            result.stderr)
        assert "did you mean 'neighbours'?" in result.stderr
        assert "Traceback" not in result.stderr
    assert not (tmp_path / "s.db").exists()  # nothing ran, not even the store was opened
