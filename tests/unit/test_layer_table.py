"""docs/architecture.md's layer tables say what the import-linter contracts in pyproject.toml
([tool.importlinter]) say: every package (and every module of virtbench.cli) in its layer, the
same layers in the same order, `|` between independent ones as in the contract."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
CONTRACTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
    "contracts"]

# The first header cell of each table, and the contract it shows (by its container).
TABLES = {"layer (high → low)": None, "cli layer (high → low)": "virtbench.cli"}


def _cells(row: str) -> list[str]:
    """A Markdown table row's cells (a `\\|` inside a cell is text, not a border)."""
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", row.strip().strip("|"))]


def _table(first_header: str, text: str) -> list[list[str]]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines)
                 if line.startswith("|") and _cells(line)[0] == first_header)
    rows = []
    for line in lines[start + 2:]:  # past the header and its |---| line
        if not line.startswith("|"):
            break
        rows.append(_cells(line))
    return rows


def _doc_layer(cell: str) -> str:
    """`a` \\| `b` -> "a | b"."""
    return re.sub(r"\s+", " ", cell.replace("\\|", "|").replace("`", "")).strip()


def _contract_layers(container: str | None) -> list[str]:
    contract = next(c for c in CONTRACTS if (c.get("containers") or [None])[0] == container)
    prefix = "" if container else "virtbench."
    return [re.sub(r"\s+", " ", layer.replace(prefix, "")).strip()
            for layer in contract["layers"]]


@pytest.mark.parametrize(("header", "container"), TABLES.items())
def test_the_layer_table_is_the_contract(header: str, container: str | None) -> None:
    rows = _table(header, ARCHITECTURE.read_text())
    assert [_doc_layer(row[1]) for row in rows] == _contract_layers(container)
    assert [row[0] for row in rows] == [str(n) for n in range(1, len(rows) + 1)]


def test_a_cell_is_read_as_the_contract_writes_a_layer() -> None:
    text = ("intro\n| layer (high → low) | packages | what |\n|---|---|---|\n"
            "| 1 | `a` \\| `b` | x \\| y |\n| 2 | `c` | z |\n\nafter\n")
    assert [_doc_layer(r[1]) for r in _table("layer (high → low)", text)] == ["a | b", "c"]
