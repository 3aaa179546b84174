"""Inventories are read within bounds, with one clear error naming the file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from virtbench.fleet.inventory import (
    MAX_HOSTS,
    InventoryError,
    expand_pattern,
    host_from_url,
    load_inventory,
    parse_inventory,
)


@pytest.mark.parametrize("text", ["[web]\nh[1:5000000]\n",
                                  "all:\n  hosts:\n    h[1:5000000]:\n"])
def test_huge_host_range_is_refused_before_expanding(text: str) -> None:
    # h[1:5000000] once expanded without limit
    with pytest.raises(InventoryError, match=r"^inv:\d: host pattern 'h\[1:5000000\]' names "
                                             r"more than 10,000 hosts"):
        parse_inventory(text, "inv")


def test_the_cap_counts_every_host_of_the_inventory() -> None:
    lines = "[web]\n" + "\n".join(f"g{i}-[1:4000]" for i in range(3))
    with pytest.raises(InventoryError, match=r"^inv:4: host pattern 'g2-\[1:4000\]' names more"):
        parse_inventory(lines + "\n", "inv")
    assert len(parse_inventory("[web]\nh[1:10000]\n", "inv")) == MAX_HOSTS


@pytest.mark.parametrize(("pattern", "message"), [
    ("h[5:1]", r"host range \[5:1\] in 'h\[5:1\]' runs backwards"),
    ("h[1:200][1:200]", "names more than 10,000 hosts"),
])
def test_bad_ranges(pattern: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        expand_pattern(pattern)


def test_many_ranges_in_one_name_need_no_recursion() -> None:
    assert expand_pattern("h" + "[1:1]" * 5000) == ["h" + "1" * 5000]


def test_non_utf8_and_binary_inventories_are_clear_errors(tmp_path: Path) -> None:
    latin = tmp_path / "latin1.ini"
    latin.write_bytes(b"[web]\nh\xe9te1\n")
    with pytest.raises(InventoryError, match=r"latin1.ini: not a YAML or INI inventory "
                                             r"\(byte 7, line 2, is not UTF-8\)"):
        load_inventory(latin)
    binary = tmp_path / "inv.bin"
    binary.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(InventoryError, match=r"inv.bin: not a YAML or INI inventory"):
        load_inventory(binary)
    with pytest.raises(InventoryError, match=r"cannot read inventory .*missing.ini"):
        load_inventory(tmp_path / "missing.ini")
    with pytest.raises(InventoryError, match=r"/dev/zero: not a YAML or INI inventory .a char"):
        load_inventory(Path("/dev/zero"))


def test_billion_laughs_inventory_fails_at_once() -> None:
    lines = ["x0: &x0 {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8, i: 9}"]
    lines += [f"x{i}: &x{i} [{', '.join([f'*x{i - 1}'] * 9)}]" for i in range(1, 10)]
    with pytest.raises(InventoryError, match=r"^inv.yaml:\d+: more than 200,000 values"):
        parse_inventory("\n".join(lines) + "\n", "inv.yaml")


def test_deep_group_chains_are_refused_not_a_recursion_error() -> None:
    text = "[g0]\nh1\n" + "".join(f"[g{i + 1}:children]\ng{i}\n" for i in range(2000))
    with pytest.raises(InventoryError, match="groups nested deeper than 64 levels"):
        parse_inventory(text, "deep.ini")


def test_many_paths_through_groups_are_walked_once() -> None:
    # 40 layers of two groups, each a child of both above: 2**40 paths, walked naively
    text = "[a0]\nh1\n[b0]\nh2\n"
    for i in range(1, 41):
        text += f"[a{i}:children]\na{i - 1}\nb{i - 1}\n[b{i}:children]\na{i - 1}\nb{i - 1}\n"
    hosts = parse_inventory(text, "diamond.ini")
    assert [h.name for h in hosts] == ["h1", "h2"]
    assert "a40" in hosts[0].groups and "b40" in hosts[0].groups


@pytest.mark.parametrize(("url", "message"), [
    ("ssh://h:0", "port 0 is not 1-65535"),  # once silently port 22
    ("ssh://h:70000", "a port is 1-65535"),
    ("ssh://h:abc", "a port is 1-65535"),
])
def test_host_urls_need_a_real_port(url: str, message: str) -> None:
    with pytest.raises(InventoryError, match=message):
        host_from_url(url)


def test_inventory_port_zero_is_refused() -> None:
    with pytest.raises(InventoryError, match="ansible_port '0' is not a port number"):
        parse_inventory("h1 ansible_port=0\n", "inv")
