"""Where a field of an experiment is: the file and line of a location in its YAML tree, and
pydantic's errors reworded as ``FILE:LINE: field: message`` lines.

An experiment built in code has no file: its messages name the field and the source given
(``<experiment>``) without a line."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, get_args, get_origin

from pydantic import BaseModel, ValidationError
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from virtbench.contract import types_of

__all__ = ["Loc", "SourceMap"]

Loc = tuple[int | str, ...]

_UNION_TAGS = {"int", "str", "float", "bool", "Adaptive", "list", "dict"}


@dataclass(frozen=True)
class SourceMap:
    """An experiment's origin: its file name and, when it was read from YAML, the tree."""

    source: str = "<experiment>"
    tree: Any = None

    def line(self, loc: Loc) -> int | None:
        """1-based line of the deepest node of ``loc`` that exists in the YAML tree."""
        node, line = self.tree, None
        for key in loc:
            if isinstance(node, CommentedMap) and key in node:
                line = node.lc.key(key)[0] + 1
                node = node[key]
            elif isinstance(node, CommentedSeq) and isinstance(key, int) and key < len(node):
                line = node.lc.item(key)[0] + 1
                node = node[key]
            else:
                break
        return line

    def where(self, loc: Loc) -> str:
        """``FILE:LINE`` of ``loc`` (``FILE`` alone when the line is unknown)."""
        line = self.line(loc)
        return f"{self.source}:{line}" if line else self.source

    def describe(self, exc: ValidationError, prefix: Loc = (), model: Any = None) -> list[str]:
        """One line per error: file:line: field: message (an unknown field: the closest known)."""
        lines = []
        for err in exc.errors():
            loc = prefix + tuple(err["loc"])
            if "int" in loc and isinstance(err.get("input"), dict):
                continue  # the mapping form of a scalar-or-mapping field was meant
            hint = ""
            if err["type"] == "extra_forbidden" and model is not None:
                known = _fields_at(model, tuple(err["loc"])[:-1])
                close = difflib.get_close_matches(str(loc[-1]), known, n=1)
                if close:
                    hint = f"; did you mean '{close[0]}'?"
                elif known:
                    hint = f" (fields: {', '.join(known)})"
                elif len(err["loc"]) == 1 and not model.model_fields:
                    hint = " (takes no parameters)"
            message = str(err["msg"]).removeprefix("Value error, ")
            lines.append(f"{self.where(loc)}: {field_path(loc)}: {message}{hint}")
        return lines


def field_path(loc: Loc) -> str:
    parts: list[str] = []
    for key in loc:
        if isinstance(key, int):
            parts.append(f"[{key}]")
        elif key in _UNION_TAGS or "[" in str(key):
            continue  # pydantic's names for union branches and validators, not user fields
        else:
            parts.append(("." if parts else "") + str(key))
    return "".join(parts) or "(top level)"


def _fields_at(model: Any, loc: Loc) -> list[str]:
    """The field names of the model(s) found at ``loc`` inside ``model`` (for a hint)."""
    current = [model]
    for key in loc:
        following: list[Any] = []
        for branch in (b for tp in current for b in types_of(tp)):
            if isinstance(key, int) and get_origin(branch) is list:
                following.append(get_args(branch)[0])
            elif isinstance(branch, type) and issubclass(branch, BaseModel):
                if key in branch.model_fields:
                    following.append(branch.model_fields[str(key)].annotation)
                elif key == branch.__name__ or str(key).endswith(f" {branch.__name__}]"):
                    # pydantic names the union member it tried (with its validators)
                    following.append(branch)
        current = following
    return sorted({name for tp in current for b in types_of(tp)
                   if isinstance(b, type) and issubclass(b, BaseModel)
                   for name in b.model_fields})
