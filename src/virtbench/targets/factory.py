"""Build a Target from an experiment's ``target:`` section."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from virtbench.model import VirtbenchError
from virtbench.targets.base import Target
from virtbench.targets.local import LocalTarget, NetnsTarget

__all__ = ["TARGET_KINDS", "make_target"]

# kind -> "module:factory"; each factory takes the spec's params as keyword arguments.
TARGET_KINDS = {
    "ssh": "virtbench.targets.ssh:from_params",
    "libvirt-guest": "virtbench.targets.libvirt_guest:from_params",
}


def make_target(spec: Any) -> Target:
    kind, params = spec.kind, dict(spec.params)
    if kind == "local":
        return LocalTarget()
    if kind == "netns":
        if "namespace" not in params:
            raise VirtbenchError("target (netns) params: 'namespace' is required")
        return NetnsTarget(str(params["namespace"]))
    if kind not in TARGET_KINDS:
        known = ", ".join(["local", "netns", *TARGET_KINDS])
        raise VirtbenchError(f"target.kind '{kind}' is unknown; known kinds: {known}")
    module_name, factory = TARGET_KINDS[kind].split(":")
    try:
        module = import_module(module_name)
    except ImportError as exc:
        raise VirtbenchError(f"target kind '{kind}' is not available: {exc}") from exc
    try:
        target: Target = getattr(module, factory)(**params)
    except TypeError as exc:  # a parameter the factory does not take, or a missing one
        raise VirtbenchError(f"target ({kind}) params: {exc}") from exc
    return target
