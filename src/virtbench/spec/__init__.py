"""Experiment specs: pydantic models and YAML loading with line-numbered errors."""

from virtbench.spec.loader import (
    SpecError,
    load_experiment,
    load_resolved,
    parse_experiment,
    parse_resolved,
)
from virtbench.spec.models import Adaptive, Experiment, VariantSpec, WorkloadSpec
from virtbench.spec.resolve import ResolvedExperiment, resolve

__all__ = ["Adaptive", "Experiment", "ResolvedExperiment", "SpecError", "VariantSpec",
           "WorkloadSpec", "load_experiment", "load_resolved", "parse_experiment",
           "parse_resolved", "resolve"]
