"""What counts as text (virtbench.inputs.unicode_text), and experiment files and inventories
refusing what is not, with the line."""

from __future__ import annotations

import pytest

from virtbench.inputs.unicode_text import is_text, text_problem
from virtbench.inputs.yamlfile import YamlInputError, load_yaml


@pytest.mark.parametrize(("value", "problem"), [
    ("a\x00b", "character 2 is NUL, which text cannot hold"),
    ("ab\udcff", "character 3 is a lone surrogate \\udcff"),
    ("\ud800", "character 1 is a lone surrogate \\ud800 (half of a UTF-16 pair), not a "
               "character"),
    ("x\udfff", "character 2 is a lone surrogate \\udfff"),
])
def test_what_is_not_text(value: str, problem: str) -> None:
    assert not is_text(value)
    found = text_problem(value)
    assert found is not None and found.startswith(problem)


def test_an_undecodable_byte_of_the_command_line_is_named_as_a_byte() -> None:
    assert text_problem("ab\udcff", "utf-8") == (
        "character 3 is the byte 0xff, which is not UTF-8")
    assert text_problem("\udcc2\udcb5", "ascii") == (  # µ in a C locale without coercion
        "character 1 is the byte 0xc2, which is not ASCII")


@pytest.mark.parametrize("value", ["", "plain", "µ ± é 名前 \U0001f600", "\x1b[31m\r\n\t",
                                   "\u202e"])
def test_text_with_any_character(value: str) -> None:
    """Control and format characters are text (safetext shows them as escapes); only NUL and
    lone surrogates are not."""
    assert is_text(value) and text_problem(value) is None


@pytest.mark.parametrize(("document", "line"), [
    ('name: x\nvariants:\n  - {name: "a\\ud800"}\n', 3),
    ('name: x\ndescription: "a\\u0000b"\n', 2),
    ('name: x\nparams: {"k\\udcff": 1}\n', 2),  # a key too
    ('{"name": "x",\n "description": "\\ud83d"}\n', 2),  # JSON is YAML: half an emoji
])
def test_an_escape_that_is_not_text_is_refused_with_its_line(document: str, line: int) -> None:
    with pytest.raises(YamlInputError, match=rf"^exp\.yaml:{line}: not text: character \d+ is "):
        load_yaml(document, "exp.yaml")


def test_a_whole_surrogate_pair_is_one_character() -> None:
    assert load_yaml('name: "\\ud83d\\ude00"\n', "exp.yaml")["name"] == "\U0001f600"
