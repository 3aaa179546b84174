"""The one rule for numbers a user types (virtbench.inputs.ascii_numbers): digits 0-9, whatever
other digits Python reads, and every place that reads a number from text keeps to it."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from virtbench.assess.cli import parse_budget
from virtbench.errors import VirtbenchError
from virtbench.fleet.inventory import InventoryError, expand_pattern, parse_inventory
from virtbench.inputs.ascii_numbers import is_digits, parse_integer, parse_number
from virtbench.kvm.access import parse_ssh_spec
from virtbench.labs.storage_lab import parse_filesystem, parse_vm_size
from virtbench.labs.web.varnish import parse_size
from virtbench.net_qos.flows import FlowSpecError, parse_flow_spec

# Digits Python reads (int(), float(), str.isdigit or \d) that a person does not type as a
# number here: a superscript (isdigit, refused by int()), Arabic-Indic, full-width and
# Devanagari digits (int() reads them), a digit-grouping underscore, a non-breaking space.
NOT_ASCII = ["²", "١٢", "１２", "१२", "1_000", "\u00a012"]


@pytest.mark.parametrize("text", NOT_ASCII)
def test_digits_python_reads_are_not_numbers_here(text: str) -> None:
    assert not is_digits(text)
    with pytest.raises(ValueError, match="is not a whole number"):
        parse_integer(text)
    with pytest.raises(ValueError, match="is not a number"):
        parse_number(text)


@pytest.mark.parametrize(("text", "value"), [
    ("0", 0), ("42", 42), ("+7", 7), ("-3", -3), (" 12\t", 12), ("007", 7)])
def test_integers(text: str, value: int) -> None:
    assert parse_integer(text) == value


@pytest.mark.parametrize(("text", "value"), [
    ("1", 1.0), ("-2.5", -2.5), (".5", 0.5), ("5.", 5.0), ("1e-3", 1e-3), (" +3E2 ", 300.0)])
def test_numbers(text: str, value: float) -> None:
    assert parse_number(text) == value


@pytest.mark.parametrize("text", ["nan", "-inf", "Infinity", "+INF"])
def test_non_finite_words_are_read_for_the_caller_to_refuse(text: str) -> None:
    number = parse_number(text)
    assert number != number or abs(number) == float("inf")


@given(st.text(max_size=8))
@example("²")
@example("١")
def test_an_integer_is_ascii_and_int_agrees(text: str) -> None:
    try:
        value = parse_integer(text)
    except ValueError:
        return
    assert text.strip(" \t").lstrip("+-").isascii()
    assert value == int(text)


@pytest.mark.parametrize("digits", ["²", "١٢", "１２"])
def test_every_reader_of_a_typed_number_refuses_other_digits(digits: str) -> None:
    """Each used str.isdigit, int() or \\d: "²" ended in a ValueError traceback, "١٢" was read
    as 12."""
    with pytest.raises(FlowSpecError, match="is not 0–65535"):
        parse_flow_spec(f"tcp:{digits}")
    with pytest.raises(FlowSpecError, match="is not 0–65535"):
        parse_flow_spec(f"udp:1.2.3.4:{digits}:5.6.7.8:*")
    with pytest.raises(VirtbenchError, match="size after ':' must be MiB"):
        parse_filesystem(f"ext4:{digits}", 64)
    with pytest.raises(VirtbenchError, match="knob vm_size"):
        parse_vm_size(f"{digits}x1024")
    with pytest.raises(VirtbenchError, match="is not a number"):
        parse_ssh_spec(f"user@host:{digits}")
    with pytest.raises(VirtbenchError, match="--budget"):
        parse_budget(f"{digits}m")
    with pytest.raises(ValueError, match="is not a number"):
        parse_size(f"{digits}M")
    with pytest.raises(InventoryError, match="ansible_port"):
        parse_inventory(f"[web]\nh1 ansible_port={digits}\n", "inv.ini")
    assert expand_pattern(f"web[{digits}:3]") == [f"web[{digits}:3]"]  # not a range
