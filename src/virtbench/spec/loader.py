"""YAML loading with errors that name the file, the line and the field."""

from __future__ import annotations

import difflib
import types
import warnings
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from virtbench.inputs.yamlfile import YamlInputError, load_yaml, read_text_file
from virtbench.model import VirtbenchError
from virtbench.spec.knobs import Declarer, knob_problems
from virtbench.spec.models import Experiment

__all__ = ["SpecError", "load_experiment", "parse_experiment"]


class SpecError(VirtbenchError):
    """An experiment file is invalid; the message lists every problem with its line."""


def _line_of(node: Any, loc: tuple[int | str, ...]) -> int | None:
    """1-based line of the deepest node of ``loc`` that exists in the YAML tree."""
    line: int | None = None
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


_UNION_TAGS = {"int", "str", "float", "bool", "Adaptive", "list", "dict"}


def _field_path(loc: tuple[int | str, ...]) -> str:
    parts: list[str] = []
    for key in loc:
        if isinstance(key, int):
            parts.append(f"[{key}]")
        elif key in _UNION_TAGS or "[" in str(key):
            continue  # pydantic's names for union branches and validators, not user fields
        else:
            parts.append(("." if parts else "") + str(key))
    return "".join(parts) or "(top level)"


def parse_experiment(text: str, source: str = "<string>") -> Experiment:
    try:
        tree = load_yaml(text, source, "YAML experiment file")
    except YamlInputError as exc:
        raise SpecError(str(exc)) from exc
    if not isinstance(tree, CommentedMap):
        raise SpecError(f"{source}:1: an experiment file must be a mapping "
                        "(name:, workloads:, ...)")
    try:
        experiment = Experiment.model_validate(tree)
    except ValidationError as exc:
        raise SpecError("invalid experiment:\n  " + "\n  ".join(
            _describe(exc, tree, source, (), Experiment))) from exc
    _follow_lab_rename(experiment, tree, source)
    problems = _plugin_problems(experiment, tree, source)
    if problems:
        raise SpecError("invalid experiment:\n  " + "\n  ".join(problems))
    return experiment


def _describe(exc: ValidationError, tree: Any, source: str,
              prefix: tuple[int | str, ...], model: Any = None) -> list[str]:
    """One line per error: file:line: field: message (an unknown field: the closest known)."""
    lines = []
    for err in exc.errors():
        loc = prefix + tuple(err["loc"])
        if "int" in loc and isinstance(err.get("input"), dict):
            continue  # the mapping form of a scalar-or-mapping field was meant
        line = _line_of(tree, loc)
        where = f"{source}:{line}" if line else source
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
        lines.append(f"{where}: {_field_path(loc)}: {message}{hint}")
    return lines


def _branches(annotation: Any) -> list[Any]:
    """The types an annotation may hold: Annotated unwrapped, unions split."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _branches(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        return [b for arg in get_args(annotation) for b in _branches(arg)]
    return [annotation]


def _fields_at(model: Any, loc: tuple[int | str, ...]) -> list[str]:
    """The field names of the model(s) found at ``loc`` inside ``model`` (for a hint)."""
    current = [model]
    for key in loc:
        following: list[Any] = []
        for branch in (b for tp in current for b in _branches(tp)):
            if isinstance(key, int) and get_origin(branch) is list:
                following.append(get_args(branch)[0])
            elif isinstance(branch, type) and issubclass(branch, BaseModel):
                if key in branch.model_fields:
                    following.append(branch.model_fields[str(key)].annotation)
                elif key == branch.__name__ or str(key).endswith(f" {branch.__name__}]"):
                    # pydantic names the union member it tried (with its validators)
                    following.append(branch)
        current = following
    return sorted({name for tp in current for b in _branches(tp)
                   if isinstance(b, type) and issubclass(b, BaseModel)
                   for name in b.model_fields})


def _follow_lab_rename(experiment: Experiment, tree: Any, source: str) -> None:
    """A former lab kind still runs (as its new name), with a notice naming the file line."""
    from virtbench.labs.base import RENAMED_LABS

    old = experiment.lab.kind
    if old in RENAMED_LABS:
        new = RENAMED_LABS[old]
        line = _line_of(tree, ("lab", "kind"))
        warnings.warn(f"{source}:{line}: lab.kind '{old}' is deprecated and will be refused "
                      f"in a later release: write `kind: {new}`", FutureWarning, stacklevel=2)
        experiment.lab.kind = new


def _plugin_problems(experiment: Experiment, tree: Any, source: str) -> list[str]:
    """Workload names and parameters, lab kind and parameters, and every variant knob, checked
    against the plugins."""
    from virtbench.plugins import all_labs, all_workloads

    problems: list[str] = []
    workloads = all_workloads()
    declarers: list[Declarer] = []
    for index, spec in enumerate(experiment.workloads):
        cls = workloads.get(spec.name)
        if cls is None:
            line = _line_of(tree, ("workloads", index, "name"))
            problems.append(f"{source}:{line}: workloads[{index}].name: unknown workload "
                            f"'{spec.name}'; known: {', '.join(workloads)}")
            continue
        declarers.append(Declarer(f"workload {spec.name}", cls.knobs))
        try:
            cls.Params.model_validate(spec.params)
        except ValidationError as exc:
            problems += _describe(exc, tree, source, ("workloads", index, "params"),
                                  cls.Params)
    problems += _target_problems(experiment, tree, source)
    labs = all_labs()
    lab_cls = labs.get(experiment.lab.kind)
    if lab_cls is None:
        line = _line_of(tree, ("lab", "kind"))
        problems.append(f"{source}:{line}: lab.kind: unknown lab '{experiment.lab.kind}'; "
                        f"known: {', '.join(labs)}")
    else:
        declarers.insert(0, Declarer(f"lab {lab_cls.name}", lab_cls.knobs))
        try:
            lab_cls.Params.model_validate(experiment.lab.params)
        except ValidationError as exc:
            problems += _describe(exc, tree, source, ("lab", "params"), lab_cls.Params)
    if len(declarers) == len(experiment.workloads) + 1:  # judge knobs only if all plugins exist
        problems += knob_problems(experiment, declarers,
                                  lambda loc: _where(tree, source, loc) + ": ")
    return problems


def _target_problems(experiment: Experiment, tree: Any, source: str) -> list[str]:
    """The target kind is known and its parameters are its own (``hots:`` is refused)."""
    from virtbench.targets.factory import TARGET_PARAMS

    kind = experiment.target.kind
    model = TARGET_PARAMS.get(kind)
    if model is None:
        return [f"{_where(tree, source, ('target', 'kind'))}: target.kind: unknown target "
                f"'{kind}'; known: {', '.join(TARGET_PARAMS)}"]
    try:
        model.model_validate(experiment.target.params)
    except ValidationError as exc:
        return _describe(exc, tree, source, ("target", "params"), model)
    return []


def _where(tree: Any, source: str, loc: tuple[int | str, ...]) -> str:
    line = _line_of(tree, loc)
    return f"{source}:{line}" if line else source


def load_experiment(path: Path) -> tuple[Experiment, str]:
    """Return the validated experiment and its original text (stored with the run)."""
    try:
        text = read_text_file(path, "experiment file", "YAML experiment file")
    except YamlInputError as exc:
        raise SpecError(str(exc)) from exc
    return parse_experiment(text, str(path)), text
