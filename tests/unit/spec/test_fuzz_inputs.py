"""Property tests: mutated experiment files and inventories either load or raise the project's
user-facing error (exit code 2) — never another exception, never unbounded work.

Mutations start from the real examples/*.yaml and a valid inventory: fields dropped, renamed
and retyped, values replaced by huge or non-finite numbers, anchors and aliases injected,
nesting deepened, bytes flipped, cut or made non-UTF-8. The number of cases is fixed
(``max_examples``) so the suite stays fast; docs/cli.md records it.
"""

from __future__ import annotations

import copy
import io
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from virtbench.errors import EXIT_BAD_INPUT, VirtbenchError
from virtbench.fleet.inventory import load_inventory, parse_inventory
from virtbench.spec import load_experiment, parse_experiment

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
EXAMPLE_TEXTS = [p.read_text() for p in EXAMPLES]
INVENTORY_YAML = """\
all:
  vars: {ansible_user: bench}
  hosts:
    lone: {ansible_host: 192.0.2.9}
  children:
    kvm:
      vars: {ansible_port: 2222, ansible_ssh_private_key_file: ~/.ssh/kvm}
      hosts:
        kvm[1:2]:
        kvm3: {ansible_host: 192.0.2.3, ansible_user: root}
"""
INVENTORY_INI = """\
lone ansible_host=192.0.2.9
[kvm]
kvm[01:02] ansible_port=2200
kvm3 ansible_host=192.0.2.3 ansible_user=root
[kvm:vars]
ansible_ssh_private_key_file=/keys/kvm
[hypervisors:children]
kvm
"""

CASES = {"tree": 40, "text": 40, "bytes": 30, "inventory_tree": 30, "inventory_text": 40}
"""Examples per property (docs/cli.md quotes the total)."""

ODD_VALUES: st.SearchStrategy[object] = st.sampled_from([
    None, "", "x", "hots", -1, 0, 1e-12, 1e308, -1e308, 2**64, -(2**70), 10**30, True,
    float("nan"), float("inf"), float("-inf"), [], {}, [None], {"a": {"b": {"c": []}}},
    "nan", "inf", "\x1b]0;title\x07", "[/]", "=cmd|' /C calc'!A0", "h[1:5000000]",
    "a" * 500, "1" * 400,
])


def _dump(tree: Any) -> str:
    stream = io.StringIO()
    yaml = YAML(typ="safe", pure=True)
    yaml.dump(tree, stream)
    return stream.getvalue()


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a key or item of a nested dict/list tree."""
    found = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, (*prefix, index))
    return found


def _mutate(tree: Any, data: st.DataObject) -> Any:
    """One to three mutations of a parsed YAML tree: drop, rename, retype, nest."""
    for _ in range(data.draw(st.integers(1, 3))):
        paths = _paths(tree)
        if not paths:
            return copy.deepcopy(data.draw(ODD_VALUES))
        path = data.draw(st.sampled_from(paths))
        parent = tree
        for key in path[:-1]:
            parent = parent[key]
        last = path[-1]
        action = data.draw(st.sampled_from(["drop", "rename", "retype", "nest", "dup"]))
        if action == "drop":
            del parent[last]
        elif action == "rename" and isinstance(parent, dict):
            parent[f"{last}{data.draw(st.sampled_from(['s', '_', 'x', '']))}x"] = parent.pop(last)
        elif action == "nest":
            value: Any = parent[last]
            for _level in range(data.draw(st.integers(1, 200))):
                value = [value]
            parent[last] = value
        elif action == "dup" and isinstance(parent, list):
            parent.extend([parent[last]] * data.draw(st.integers(1, 50)))
        else:
            parent[last] = copy.deepcopy(data.draw(ODD_VALUES))  # drawn values are shared
    return tree


def _text_mutation(text: str, data: st.DataObject) -> str:
    kind = data.draw(st.sampled_from(["laughs", "deep", "anchor", "cut", "insert", "huge"]))
    if kind == "laughs":
        width = data.draw(st.integers(2, 12))
        levels = data.draw(st.integers(2, 12))
        lines = [f"l0: &l0 [{', '.join(['x'] * width)}]"]
        lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, levels)]
        key = data.draw(st.sampled_from(["description", "seed", "lab", "matrix", "variants"]))
        return "\n".join(lines) + f"\n{text}\n{key}: *l{levels - 1}\n"
    if kind == "deep":
        depth = data.draw(st.integers(30, 3000))
        return f"{text}\ndescription: {'[' * depth}{']' * depth}\n"
    if kind == "anchor":
        return text.replace("workloads:", "workloads: &w", 1) + "\nextra: [*w, *w, *w]\n"
    if kind == "cut":
        return text[:data.draw(st.integers(0, len(text)))]
    if kind == "insert":
        at = data.draw(st.integers(0, len(text)))
        junk = data.draw(st.sampled_from(["&", "*x", "!!binary", "!!python/object:os.system",
                                          ": :", "\t", "\x00", "{", "]", "? ", "<<: 1", "%"]))
        return text[:at] + junk + text[at:]
    number = data.draw(st.sampled_from(["9" * 30, "1e999", "-.inf", ".nan", "0x" + "f" * 40]))
    return text.replace(": 1\n", f": {number}\n", 1).replace("seed: ", f"seed: {number}#", 1)


def _loads_or_refuses(load: Any, *args: Any) -> None:
    try:
        load(*args)
    except VirtbenchError as exc:
        assert exc.exit_code == EXIT_BAD_INPUT, exc
        assert str(exc).strip(), "an error must say what is wrong"


def fuzz(kind: str) -> settings:
    return settings(max_examples=CASES[kind], deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow])


@fuzz("tree")
@given(st.sampled_from(EXAMPLE_TEXTS), st.data())
def test_mutated_experiment_trees(text: str, data: st.DataObject) -> None:
    tree = YAML(typ="safe", pure=True).load(text)
    _loads_or_refuses(parse_experiment, _dump(_mutate(tree, data)), "fuzz.yaml")


@fuzz("text")
@given(st.sampled_from(EXAMPLE_TEXTS), st.data())
def test_mutated_experiment_texts(text: str, data: st.DataObject) -> None:
    _loads_or_refuses(parse_experiment, _text_mutation(text, data), "fuzz.yaml")


@fuzz("bytes")
@given(st.sampled_from(EXAMPLE_TEXTS), st.data())
def test_mutated_experiment_bytes(text: str, data: st.DataObject) -> None:
    raw = bytearray(text.encode())
    for _ in range(data.draw(st.integers(1, 8))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "fuzz.yaml"
        path.write_bytes(bytes(raw))
        _loads_or_refuses(load_experiment, path)


@fuzz("inventory_tree")
@given(st.data())
def test_mutated_inventory_trees(data: st.DataObject) -> None:
    tree = YAML(typ="safe", pure=True).load(INVENTORY_YAML)
    _loads_or_refuses(parse_inventory, _dump(_mutate(tree, data)), "fuzz-inventory.yaml")


@fuzz("inventory_text")
@given(st.sampled_from([INVENTORY_YAML, INVENTORY_INI]), st.data())
def test_mutated_inventory_texts_and_bytes(text: str, data: st.DataObject) -> None:
    mutated = _text_mutation(text, data)
    if data.draw(st.booleans()):
        mutated = mutated.replace("[1:2]", data.draw(st.sampled_from(
            ["[1:5000000]", "[9:1]", "[1:100][1:100][1:100]", "[a:z]", "[01:0009]"])))
        _loads_or_refuses(parse_inventory, mutated, "fuzz-inventory")
        return
    raw = bytearray(mutated.encode())
    if raw:
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0x80, 0xFF))
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "inventory"
        path.write_bytes(bytes(raw))
        _loads_or_refuses(load_inventory, path)
