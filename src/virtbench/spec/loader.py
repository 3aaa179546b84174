"""YAML loading with errors that name the file, the line and the field."""

from __future__ import annotations

import warnings
from pathlib import Path

from pydantic import ValidationError
from ruamel.yaml.comments import CommentedMap

from virtbench.inputs.yamlfile import YamlInputError, load_yaml, read_text_file
from virtbench.spec.models import Experiment
from virtbench.spec.resolve import ResolvedExperiment, SpecError, resolve
from virtbench.spec.source import SourceMap

__all__ = ["SpecError", "load_experiment", "load_resolved", "parse_experiment",
           "parse_resolved"]


def parse_resolved(text: str, source: str = "<string>") -> ResolvedExperiment:
    """The experiment in ``text``, its plugins resolved and its knobs judged (once)."""
    try:
        tree = load_yaml(text, source, "YAML experiment file")
    except YamlInputError as exc:
        raise SpecError(str(exc)) from exc
    if not isinstance(tree, CommentedMap):
        raise SpecError(f"{source}:1: an experiment file must be a mapping "
                        "(name:, workloads:, ...)")
    where = SourceMap(source, tree)
    try:
        experiment = Experiment.model_validate(tree)
    except ValidationError as exc:
        raise SpecError("invalid experiment:\n  " + "\n  ".join(
            where.describe(exc, (), Experiment))) from exc
    _follow_lab_rename(experiment, where)
    return resolve(experiment, where)


def parse_experiment(text: str, source: str = "<string>") -> Experiment:
    """The validated experiment in ``text`` (``parse_resolved`` keeps its plugins too)."""
    return parse_resolved(text, source).experiment


def _follow_lab_rename(experiment: Experiment, where: SourceMap) -> None:
    """A former lab kind still runs (as its new name), with a notice naming the file line."""
    from virtbench.labs.lab_contract import RENAMED_LABS

    old = experiment.lab.kind
    if old in RENAMED_LABS:
        new = RENAMED_LABS[old]
        warnings.warn(f"{where.where(('lab', 'kind'))}: lab.kind '{old}' is deprecated and "
                      f"will be refused in a later release: write `kind: {new}`", FutureWarning,
                      stacklevel=3)
        experiment.lab.kind = new


def load_resolved(path: Path) -> tuple[ResolvedExperiment, str]:
    """The resolved experiment and the file's original text (stored with the run)."""
    try:
        text = read_text_file(path, "experiment file", "YAML experiment file")
    except YamlInputError as exc:
        raise SpecError(str(exc)) from exc
    return parse_resolved(text, str(path)), text


def load_experiment(path: Path) -> tuple[Experiment, str]:
    """Return the validated experiment and its original text (stored with the run)."""
    resolved, text = load_resolved(path)
    return resolved.experiment, text

