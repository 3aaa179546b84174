"""Text files and YAML a user hands over, read within bounds (experiment files, inventories, an
experiment's text stored with a run).

A YAML file is small by nature, but its aliases can make it huge once expanded (a 549-byte
"billion laughs" file of nested anchors names ~10⁹ values), and its nesting can be deep enough
to exhaust Python's stack. Every YAML input is therefore refused, with one line naming the file
and line, when:

- it is larger than :data:`MAX_BYTES`, or not UTF-8;
- it nests deeper than :data:`MAX_DEPTH` levels (counted through aliases too);
- it holds more than :data:`MAX_VALUES` values with every alias expanded, or its aliases
  expand it more than :data:`MAX_ALIAS_RATIO`-fold once it is past :data:`ALIAS_FREE_VALUES`
  values (ordinary anchors, e.g. shared defaults, stay well inside);
- an alias refers to a collection it is inside (a recursive structure);
- a mapping key is a list or a mapping (``? [a, b]``: no input of virtbench has one);
- a string is not text by :mod:`virtbench.inputs.unicode_text` (a ``\\ud800`` or ``\\u0000``
  escape).

The bounds are checked while the document is composed, before any Python object is built,
so a hostile file fails at once (the 549-byte file: in milliseconds).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Literal

import ruamel.yaml.scanner
from ruamel.yaml import YAML
from ruamel.yaml.composer import Composer
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import AliasEvent
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from virtbench.errors import VirtbenchError
from virtbench.inputs.files import InputFileError, open_input
from virtbench.inputs.unicode_text import is_text, join_surrogate_pairs, text_problem

__all__ = ["ALIAS_FREE_VALUES", "MAX_ALIAS_RATIO", "MAX_BYTES", "MAX_DEPTH", "MAX_VALUES",
           "YamlInputError", "load_yaml", "read_text_file"]

MAX_BYTES = 1 << 20
"""Largest text file read (1 MiB): an experiment file is a few KiB, a 10,000-host inventory
about 500 KiB."""
MAX_DEPTH = 64
"""Deepest nesting of mappings and sequences (an experiment file needs about 6)."""
MAX_VALUES = 200_000
"""Most values (scalars, mappings and sequences) in one document, every alias expanded."""
ALIAS_FREE_VALUES = 10_000
"""Up to this many values, aliases may expand a document freely."""
MAX_ALIAS_RATIO = 10
"""Beyond ALIAS_FREE_VALUES, the expanded document may hold at most this many times the values
written in the file."""


class YamlInputError(VirtbenchError):
    """A text or YAML input is unreadable, invalid or too large; the message names the file."""


def read_text_file(path: Path, what: str, kind: str | None = None, *,
                   max_bytes: int = MAX_BYTES) -> str:
    """The text of ``path`` (UTF-8), read at most ``max_bytes`` far (a huge file is refused,
    not read whole; a directory, device, socket or FIFO without a writer at once, by
    :func:`virtbench.inputs.files.open_input`). Messages say ``cannot read {what} PATH`` and
    ``PATH: not a {kind}`` (``kind`` defaults to ``what``)."""
    try:
        with open_input(path, kind or what, what) as stream:  # a device, a FIFO without a writer
            data = stream.read(max_bytes + 1)                   # ...: one line, at once
    except InputFileError as exc:
        raise YamlInputError(str(exc)) from None
    except OSError as exc:
        raise YamlInputError(f"cannot read {what} {path}: {exc.strerror or exc}") from exc
    if len(data) > max_bytes:
        raise YamlInputError(f"{path}: not a {kind or what} (larger than "
                             f"{max_bytes // 1024} KiB)")
    return decode_text(data, str(path), kind or what)


def decode_text(data: bytes, source: str, kind: str) -> str:
    """``data`` as UTF-8; otherwise an error naming the first bad byte and its line."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise YamlInputError(f"{source}: not a {kind} (byte {exc.start}, line {line}, is not "
                             "UTF-8)") from exc


class _Bounds:
    """Values and depth of every composed node, aliases expanded (memoised per node)."""

    def __init__(self) -> None:
        self.size: dict[int, int] = {}
        self.depth: dict[int, int] = {}
        self.written = 0

    def finish(self, node: Node) -> None:
        children: list[Node] = []
        if isinstance(node, SequenceNode):
            children = list(node.value)
        elif isinstance(node, MappingNode):
            children = [item for pair in node.value for item in pair]
            for key, _value in node.value:
                if not isinstance(key, ScalarNode):  # `? [a, b]`: Python cannot hash it
                    raise _limit(key, "a mapping key must be a plain value, not a list or "
                                      "mapping")
        size, depth = 1, 1
        for child in children:
            key = id(child)
            if key not in self.size:  # an alias to a collection still being composed
                raise _limit(child, f"the alias *{child.anchor} refers to a collection it is "
                                    "inside (a recursive structure)")
            size += self.size[key]
            depth = max(depth, self.depth[key] + 1)
        self.written += 1
        self.size[id(node)], self.depth[id(node)] = size, depth
        if depth > MAX_DEPTH:
            raise _limit(node, f"nested deeper than {MAX_DEPTH} levels (aliases expanded)")
        if size > MAX_VALUES:
            raise _limit(node, f"more than {MAX_VALUES:,} values once its aliases are "
                               "expanded (nested aliases: a 'billion laughs' file?)")


class _LimitError(MarkedYAMLError):
    """A bound of this module exceeded; its mark is where."""


def _limit(node: Node, problem: str) -> _LimitError:
    return _LimitError(problem=problem, problem_mark=node.start_mark)


class _BoundedComposer(Composer):
    """ruamel's composer, keeping count of expanded values and depth as each node completes."""

    def compose_document(self) -> Any:
        self.bounds = _Bounds()
        node = super().compose_document()
        if node is not None:
            expanded = self.bounds.size[id(node)]
            if expanded > ALIAS_FREE_VALUES and expanded > MAX_ALIAS_RATIO * self.bounds.written:
                raise _limit(node, f"its aliases expand {self.bounds.written:,} written values "
                                   f"to {expanded:,} (more than {MAX_ALIAS_RATIO}-fold)")
        return node

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.parser.check_event(AliasEvent):
            return super().compose_node(parent, index)  # the anchored node, already counted
        if self.depth >= MAX_DEPTH:  # before the next level, so Python's stack never runs out
            mark = self.parser.peek_event().start_mark
            raise _LimitError(problem=f"nested deeper than {MAX_DEPTH} levels",
                              problem_mark=mark)
        node = super().compose_node(parent, index)
        if isinstance(node, ScalarNode) and not is_text(node.value):
            # a "\ud800" or "\u0000" escape: no database, libvirt or argv takes it
            node.value = join_surrogate_pairs(node.value)
            problem = text_problem(node.value)
            if problem is not None:
                raise _limit(node, f"not text: {problem}")
        self.bounds.finish(node)
        return node


class _FlowDepthGuard:
    """Refuses ``[[[[...`` beyond MAX_DEPTH while scanning: the scanner's work per token grows
    with the flow nesting (5,000 levels took seconds before the composer saw the first)."""

    flow_context: list[str]
    reader: Any

    def fetch_flow_collection_start(self, token_class: Any, to_push: str) -> None:
        if len(self.flow_context) >= MAX_DEPTH:
            raise _LimitError(problem=f"nested deeper than {MAX_DEPTH} levels",
                              problem_mark=self.reader.get_mark())
        super().fetch_flow_collection_start(token_class, to_push=to_push)  # type: ignore[misc]


_GUARDED: dict[type, type] = {}


def _guarded(scanner: type) -> type:
    if scanner not in _GUARDED:
        _GUARDED[scanner] = type(f"Bounded{scanner.__name__}", (_FlowDepthGuard, scanner), {})
    return _GUARDED[scanner]


def load_yaml(text: str, source: str, what: str = "YAML file",
              typ: Literal["rt", "safe"] = "rt") -> Any:
    """Parse one YAML document within the bounds above (``rt``: ruamel's round-trip types, with
    line numbers; ``safe``: plain Python types). Any problem is a :class:`YamlInputError`
    naming ``source`` and the line: invalid YAML, a bound exceeded, a value YAML cannot hold."""
    if len(text) > MAX_BYTES:
        raise YamlInputError(f"{source}: larger than {MAX_BYTES // 1024} KiB; not a {what}")
    yaml = YAML(typ=typ, pure=True)
    yaml.Composer = _BoundedComposer
    yaml.Scanner = _guarded(yaml.Scanner or ruamel.yaml.scanner.Scanner)
    try:
        with warnings.catch_warnings():
            # a reused anchor name is legal YAML (the later one wins); say nothing
            warnings.simplefilter("ignore")
            return yaml.load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        problem = exc.problem or exc.context or "invalid"
        prefix = "" if isinstance(exc, _LimitError) else "invalid YAML: "
        raise YamlInputError(f"{where}: {prefix}{problem}") from exc
    except YAMLError as exc:  # the reader's (a control character) has no mark
        raise YamlInputError(f"{source}: invalid YAML: {_one_line(str(exc))}") from exc
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        # a scalar YAML resolves to a value Python refuses (an integer of 5,000 digits, a date
        # out of range): still the file's fault
        raise YamlInputError(f"{source}: invalid value in {what}: {_one_line(str(exc))}"
                             ) from exc


def _one_line(text: str) -> str:
    return " ".join(text.split())
