"""Experiment specs: pydantic models and YAML loading with line-numbered errors."""

from virtbench.spec.loader import SpecError, load_experiment, parse_experiment
from virtbench.spec.models import Adaptive, Experiment, VariantSpec, WorkloadSpec

__all__ = ["Adaptive", "Experiment", "SpecError", "VariantSpec", "WorkloadSpec",
           "load_experiment", "parse_experiment"]
