"""The stored experiment's compare_by is read without the YAML parser when the text cannot
hold the key (no 'compare_by' and no escape): the same answer as the parser's, in every way
YAML can write the key."""

from __future__ import annotations

import pytest

from virtbench.analysis.build import _spec_compare_by


@pytest.mark.parametrize(("spec", "expected"), [
    ("name: x\n", None),
    ("name: x\ncompare_by: switch\n", "switch"),
    ("name: x\n'compare_by': switch\n", "switch"),
    ('name: x\n"compare\\x5fby": switch\n', "switch"),  # an escape: only the parser sees it
    ('{name: x, "compare\\u005Fby": rate}', "rate"),
    ("base: &b {compare_by: switch}\nname: x\n<<: *b\n", "switch"),
    ('name: "a\\tb"\n', None),  # an escape, no key: parsed, still none
    ("name: [unclosed\n", None),  # invalid YAML without the key: none, as the parser says
    ("compare_by: [unclosed\n", None),
    ("- compare_by\n", None),
])
def test_compare_by_is_what_the_parser_reads(spec: str, expected: str | None) -> None:
    assert _spec_compare_by(spec) == expected
