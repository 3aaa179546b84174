"""Numbers read from text a user typed: one rule, for option values, knob values, specs such as
``--flow`` and ``filesystem=ext4:64``, inventories and host names.

A number is written with the ASCII digits 0-9, as a person types it and as every tool
virtbench drives reads it. Python reads more: ``int()`` and ``float()`` take any Unicode
decimal digit (Arabic-Indic ``١٢``, full-width ``１２``), digit-grouping underscores
(``1_000``) and surrounding whitespace of any kind, ``str.isdigit`` also says yes to digits
``int()`` refuses (superscripts ``²``), and ``\\d`` in a regular expression matches every
decimal digit. Here:

- an integer is ``[+-]?[0-9]+`` (:func:`parse_integer`); :data:`DIGITS` is ``[0-9]+`` for a
  pattern that finds one inside a longer text (:func:`is_digits` for a bare count);
- a number is a decimal ``[+-]?(digits[.digits]|.digits)([eE][+-]?digits)`` or one of the
  words ``nan``, ``inf``, ``infinity`` (any case, with a sign), which callers refuse as not
  finite in their own words (:func:`parse_number`);
- surrounding spaces and tabs are allowed, nothing else.

Light on purpose (``re`` only): ``parse pcap`` reads ``--flow`` on its fast path.
"""

from __future__ import annotations

import re

__all__ = ["DIGITS", "is_digits", "parse_integer", "parse_number"]

DIGITS = "[0-9]+"
"""A run of ASCII digits, for patterns that read a number out of a longer text."""
_INTEGER = re.compile(f"[ \t]*[+-]?{DIGITS}[ \t]*")
_DECIMAL = re.compile(r"[ \t]*[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[ \t]*")
_NOT_FINITE = re.compile(r"[ \t]*[+-]?(?:nan|inf|infinity)[ \t]*", re.IGNORECASE)
_BARE = re.compile(DIGITS)


def is_digits(text: str) -> bool:
    """True when ``text`` is one or more ASCII digits and nothing else (no sign, no space)."""
    return _BARE.fullmatch(text) is not None


def parse_integer(text: str) -> int:
    """``text`` as an integer (``[+-]?[0-9]+``, spaces around allowed); a ValueError saying
    ``'x' is not a whole number`` otherwise."""
    if _INTEGER.fullmatch(text) is None:
        raise ValueError(f"{text!r} is not a whole number (digits 0-9)")
    return int(text)


def parse_number(text: str) -> float:
    """``text`` as a float: a decimal number, or ``nan``/``inf``/``infinity`` (returned as such,
    for the caller to refuse); a ValueError saying ``'x' is not a number`` otherwise."""
    if _DECIMAL.fullmatch(text) is None and _NOT_FINITE.fullmatch(text) is None:
        raise ValueError(f"{text!r} is not a number (digits 0-9, '.', an exponent)")
    return float(text)
