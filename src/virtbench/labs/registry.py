"""Labs by name, from the one plugin registry (``virtbench.registry``)."""

from __future__ import annotations

from virtbench import registry
from virtbench.labs.base import Lab
from virtbench.model import VirtbenchError

__all__ = ["RENAMED_LABS", "all_labs", "get_lab"]

# Former lab kinds still accepted (with a deprecation notice) in experiment files and manifests.
RENAMED_LABS = {"fs": "storage"}


def all_labs() -> dict[str, type[Lab]]:
    return registry.classes(Lab, "LABS", lambda cls: cls.name)  # type: ignore[type-abstract]


def get_lab(name: str) -> type[Lab]:
    labs = all_labs()
    if name not in labs:
        raise VirtbenchError(f"unknown lab '{name}'; known labs: {', '.join(labs)}")
    return labs[name]
