"""Every YAML input is read within bounds: size, nesting, alias expansion (virtbench.inputs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from virtbench.inputs.yamlfile import (
    MAX_BYTES,
    MAX_DEPTH,
    YamlInputError,
    load_yaml,
    read_text_file,
)
from virtbench.spec import SpecError, load_experiment, parse_experiment

GOOD = "name: x\nworkloads: [{name: exec.noop}]\n"


def laughs(levels: int, width: int = 9) -> str:
    """The classic 'billion laughs': each level an anchored list of ``width`` aliases of the
    level before; ``width ** levels`` values once expanded."""
    lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    for level in range(1, levels):
        lines.append(f"l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def test_billion_laughs_experiment_fails_naming_file_and_line(tmp_path: Path) -> None:
    # 549 bytes of nested anchors once ran 84 s and ended in MemoryError: 9**9 = 387 million
    # values. Were expansion unbounded, this test would not end.
    text = ("name: lol\nvariants:\n  - name: a\n    knobs:\n      cpu_features: *l8\n"
            "workloads: [{name: cpu.crc32c}]\n")
    path = tmp_path / "lol.yaml"
    path.write_text(laughs(9) + text)
    assert len(path.read_bytes()) < 800
    with pytest.raises(SpecError) as info:
        load_experiment(path)
    message = str(info.value)
    assert message.startswith(f"{path}:")
    assert "more than 200,000 values once its aliases are expanded" in message
    assert "\n" not in message


def test_billion_laughs_in_a_mapping_of_mappings() -> None:
    lines = ["a0: &a0 {x: 1, y: 2, z: 3, w: 4}"]
    lines += [f"a{i}: &a{i} {{p: *a{i - 1}, q: *a{i - 1}, r: *a{i - 1}, s: *a{i - 1}}}"
              for i in range(1, 40)]
    with pytest.raises(YamlInputError, match=r"^m.yaml:\d+: more than 200,000 values"):
        load_yaml("\n".join(lines), "m.yaml")


def test_deep_flow_nesting_is_refused_not_a_recursion_error() -> None:
    text = GOOD + "description: " + "[" * 100_000 + "]" * 100_000 + "\n"
    with pytest.raises(SpecError, match=rf"^deep.yaml:3: nested deeper than {MAX_DEPTH} levels"):
        parse_experiment(text, "deep.yaml")


def test_deep_block_nesting_is_refused() -> None:
    text = "".join(" " * i + f"k{i}:\n" for i in range(200)) + " " * 200 + "v\n"
    with pytest.raises(YamlInputError, match=rf"nested deeper than {MAX_DEPTH} levels"):
        load_yaml(text, "block.yaml")


def test_depth_through_aliases_counts() -> None:
    # a 40-deep subtree, anchored, then aliased at the bottom of another 40-deep chain: each
    # is written within the limit, the expanded document is 80 deep
    text = "a: &deep\n" + "".join(" " * (i + 1) + f"k{i}:\n" for i in range(40))
    text += " " * 41 + "[1]\nb:\n" + "".join(" " * (i + 1) + f"j{i}:\n" for i in range(40))
    text += " " * 41 + "*deep\n"
    with pytest.raises(YamlInputError, match=r"nested deeper than 64 levels .aliases expanded"):
        load_yaml(text, "alias-depth.yaml")


@pytest.mark.parametrize("text", ["a: &a [*a]", "a: &a {b: [1, *a]}"])
def test_recursive_alias_is_refused(text: str) -> None:
    with pytest.raises(YamlInputError, match="refers to a collection it is inside"):
        load_yaml(text, "r.yaml")


def test_aliases_may_not_multiply_a_file_tenfold() -> None:
    # 101 written values expand to 10,101 + ...: past 10,000 and more than 10-fold
    text = "base: &b [" + ", ".join(["1"] * 100) + "]\ncopies: [" + ", ".join(["*b"] * 120) + "]"
    with pytest.raises(YamlInputError, match=r"aliases expand .* \(more than 10-fold\)"):
        load_yaml(text, "ratio.yaml")


def test_ordinary_anchors_stay_allowed() -> None:
    text = ("defaults: &d {duration_s: 5, streams: 2}\nworkloads:\n"
            + "".join(f"  - {{name: w{i}, params: *d}}\n" for i in range(50)))
    tree = load_yaml(text, "ok.yaml")
    assert tree["workloads"][49]["params"]["streams"] == 2


def test_oversized_file_and_device_are_refused_unread(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("# padding\n" * (MAX_BYTES // 10 + 1))
    with pytest.raises(YamlInputError, match=r"big.yaml: not a YAML file .larger than 1024"):
        read_text_file(big, "experiment file", "YAML file")
    with pytest.raises(SpecError, match=r"/dev/zero: not a YAML experiment file .a character dev"):
        load_experiment(Path("/dev/zero"))  # refused by its type, unread
    with pytest.raises(YamlInputError, match="larger than"):
        load_yaml("x" * (MAX_BYTES + 1), "text")


def test_non_utf8_names_byte_and_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"name: x\ndescription: caf\xe9\n")
    with pytest.raises(SpecError, match=r"latin1.yaml: not a YAML experiment file \(byte 24, "
                                        r"line 2, is not UTF-8\)"):
        load_experiment(path)


@pytest.mark.parametrize(("text", "message"), [
    ("name: x\0\n", "invalid YAML: unacceptable character #x0000"),
    ("seed: " + "1" * 5000 + "\n", "invalid value in YAML experiment file: Exceeds the limit"),
    ("when: 2001-13-45\n", "invalid value in YAML experiment file: month must be in 1..12"),
    ("a: !!binary zz\n", "e.yaml:1: invalid YAML: failed to decode base64"),
    ("a: *nowhere\n", "e.yaml:1: invalid YAML: found undefined alias"),
    ("{a: 1, a: 2}\n", "e.yaml:1: invalid YAML: found duplicate key"),
    # found by the property tests: a TypeError (unhashable) inside ruamel
    ("? {a: [1]}\n: x\n", "e.yaml:1: a mapping key must be a plain value"),
    ("x:\n  ? [[1]]\n  : y\n", "e.yaml:2: a mapping key must be a plain value"),
])
def test_values_yaml_or_python_refuse_are_clear_errors(text: str, message: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_experiment(text, "e.yaml")
    assert str(info.value).startswith("e.yaml") and message in str(info.value)
