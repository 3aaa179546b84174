"""Terminal tables that fit the console: identifying columns are never dropped or squeezed to
nothing (they wrap), less important numeric columns move to a second table instead."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.table import Table
from rich.text import Text

from virtbench import safetext
from virtbench.analysis import VariantInfo

__all__ = ["Identity", "fit_tables", "identity_of"]

_BORDER = 3  # a rich column costs its content plus two spaces of padding and one rule
_NARROWEST_FOLD = 12  # an identifying column folds, but never below this width
_LONG_CELL = 24  # a column whose cells are longer wraps them at spaces


@dataclass(frozen=True)
class Identity:
    """How rows are told apart: one column per varying knob (a matrix experiment), or the
    variant name."""

    columns: list[str]
    cells: dict[str, list[str]]
    """variant name -> one cell per identity column"""

    def short_name(self, variant: str) -> str:
        """The variant as its identity cells (for the compared-with column): 'ovs'."""
        cells = self.cells.get(variant)
        return ", ".join(cells) if cells else variant


def identity_of(variants: Sequence[VariantInfo]) -> Identity:
    """Factor columns when every variant has the same knobs, the varying ones are scalars and
    their values tell every variant apart; else the variant name."""
    names = [v.name for v in variants]
    by_name = {"variant": {n: [n] for n in names}}
    if len(variants) < 2 or len({tuple(sorted(v.knobs)) for v in variants}) != 1:
        return Identity(["variant"], by_name["variant"])
    varying = [k for k in _knob_order(variants[0])
               if len({repr(v.knobs[k]) for v in variants}) > 1]
    scalar = all(not isinstance(v.knobs[k], list | dict) for v in variants for k in varying)
    keys = {tuple(str(v.knobs[k]) for k in varying) for v in variants}
    if not varying or not scalar or len(varying) < 2 or len(keys) != len(variants):
        return Identity(["variant"], by_name["variant"])
    return Identity(varying, {v.name: [str(v.knobs[k]) for k in varying] for v in variants})


def _knob_order(variant: VariantInfo) -> list[str]:
    """The knobs in the order a matrix name spells them ('switch=ovs,background_mbps=0'): the
    store keeps knobs sorted, the experiment's order reads better."""
    named = [part.split("=", 1)[0] for part in variant.name.split(",") if "=" in part]
    return [k for k in named if k in variant.knobs] + [k for k in variant.knobs if k not in named]


def _width(header: str, cells: list[str]) -> int:
    return max([len(header), *(len(c) for c in cells)])


def fit_tables(width: int, identity_headers: list[str], identity_cells: list[list[Text]],
               columns: list[str], cells: list[dict[str, Any]], keep: int,
               **table_args: Any) -> list[Table]:
    """Lay out rows as one table, or two when the numeric columns do not fit ``width``.

    ``columns`` are in order of importance; the first ``keep`` always stay in the first table,
    the rest stay while they fit beside the identity columns at their natural width and
    otherwise go to a second table that repeats the identity columns.

    Headers, cells, title and caption are data (knob names, variant names, a metric's
    description from the store), never markup: shown as written by :mod:`virtbench.safetext`.
    """
    cells = [{c: safetext.text(v) if isinstance(v, str) else v for c, v in row.items()}
             for row in cells]
    for key in ("title", "caption"):
        if isinstance(table_args.get(key), str):
            table_args[key] = safetext.markup(table_args[key])
    # A long knob name in the header breaks after each '_' ('background_' / 'mbps').
    headers = [safetext.visible(h).replace("_", "_\n") for h in identity_headers]
    ident_natural = [_width(max(h.split("\n"), key=len), [row[i].plain for row in identity_cells])
                     for i, h in enumerate(headers)]
    ident_min = [min(w, _NARROWEST_FOLD) for w in ident_natural]
    natural = {c: _width(c, [str(row[c]) for row in cells]) for c in columns}
    # Long cells (an interval, values with a reason) may break at their spaces.
    wrappable = {c for c in columns if natural[c] > _LONG_CELL or "[" in c}
    numeric = {c: min(natural[c], _LONG_CELL) + _BORDER if c in wrappable else natural[c] + _BORDER
               for c in columns}
    ident_total = 1 + sum(w + _BORDER for w in ident_natural)
    groups = [list(columns[:keep])]
    room = width - ident_total - sum(numeric[c] for c in groups[0])
    for column in columns[keep:]:
        if numeric[column] > room and groups[-1]:
            groups.append([])  # a further table, repeating the identifying columns
            room = width - ident_total
        groups[-1].append(column)
        room -= numeric[column]
    tables = []
    for index, group in enumerate(groups):
        args = dict(table_args)
        if index:
            args["title"] = f"{table_args.get('title', '')} (continued)".strip()
            args.pop("caption", None)
        # rule the rows when a name or a long cell takes more than one line
        wraps = (ident_total + sum(numeric[c] for c in group) > width
                 or any(natural[c] > _LONG_CELL for c in group))
        tables.append(_table(headers, identity_cells, ident_min, group, cells, wraps, wrappable,
                             **args))
    return tables


def _table(identity_headers: list[str], identity_cells: list[list[Text]], ident_min: list[int],
           columns: list[str], cells: list[dict[str, Any]], wraps: bool,
           wrappable: set[str], **table_args: Any) -> Table:
    table = Table(show_lines=wraps, **table_args)  # ruled rows when a name wraps
    for header, least in zip(identity_headers, ident_min, strict=True):
        table.add_column(safetext.text(header), justify="left", overflow="fold",
                         min_width=least)
    for column in columns:
        table.add_column(safetext.text(column), justify="right",
                         no_wrap=column not in wrappable, overflow="fold")
    for ident, row in zip(identity_cells, cells, strict=True):
        table.add_row(*ident, *(row[c] for c in columns))
    return table
