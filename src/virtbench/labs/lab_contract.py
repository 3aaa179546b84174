"""The lab contract: a real testbed (namespaces, switches, servers, guests, filesystems).

A lab is brought up once per experiment, ``enter``-ed for each variant (apply the variant's
knobs — only those the lab declares), ``leave``-d, and brought ``down`` at the end — also after
failures, SIGINT and SIGTERM.
Every object a lab creates is written to its manifest first, so ``virtbench lab clean`` can
remove what a crashed run left behind.
"""

from __future__ import annotations

import abc
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel

from virtbench.contract import Knob, NoParams, Tool, missing_tools
from virtbench.model import VirtbenchError
from virtbench.service_base import Service, Services, kind_names
from virtbench.targets.target_contract import Target

__all__ = ["RENAMED_LABS", "Lab", "LabState", "Manifest", "lab_root"]

# Former lab kinds still accepted (with a deprecation notice) in experiment files and manifests.
RENAMED_LABS = {"fs": "storage"}


def lab_root() -> Path:
    """Where labs keep private run directories and manifests (``VIRTBENCH_LAB_ROOT``)."""
    root = Path(os.environ.get("VIRTBENCH_LAB_ROOT", "/run/virtbench/labs"))
    root.mkdir(parents=True, exist_ok=True)
    return root


class Manifest:
    """A JSON file listing what a lab created: ``{kind: [item, ...]}`` plus the lab's name.

    Written before each object is created, so a crash can never hide an object from cleanup.
    """

    def __init__(self, path: Path, lab: str) -> None:
        self.path = path
        self.data: dict[str, Any] = {"lab": lab, "pid": os.getpid(), "objects": {}}
        if path.exists():
            self.data = _read_manifest(path)
        self._save()

    def _save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=1))
        tmp.replace(self.path)

    def add(self, kind: str, item: Any) -> None:
        self.data["objects"].setdefault(kind, []).append(item)
        self._save()

    def remove(self, kind: str, item: Any) -> None:
        items = self.data["objects"].get(kind, [])
        if item in items:
            items.remove(item)
            self._save()

    def items(self, kind: str) -> list[Any]:
        return list(self.data["objects"].get(kind, []))

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)


def _read_manifest(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        reason = str(exc)
    else:
        if isinstance(data, dict) and isinstance(data.get("objects"), dict):
            return data
        reason = "no 'objects' mapping"
    raise VirtbenchError(f"{path}: damaged lab manifest ({reason}); remove the objects it "
                         "lists by hand, then delete it")


@dataclass
class LabState:
    """What a lab gives the workloads for one variant."""

    target: Target | None = None
    """Where workloads run for this variant (None: the experiment's target)."""
    env: dict[str, str | None] = field(default_factory=dict)
    services: Services = field(default_factory=Services)
    """The typed services the workloads read (``Lab.publish``)."""
    notes: dict[str, str] = field(default_factory=dict)
    """How the variant was realised, shown in the report."""
    caveats: tuple[str, ...] = ()
    """What this variant's figures cannot be trusted for (an emulated guest's CPU-bound ones):
    stored with the realisation's limitations, so the report lists them."""

    def __post_init__(self) -> None:
        if not isinstance(self.services, Services):  # a plugin written for the string keys
            raise VirtbenchError(
                "LabState.services must be typed services (Lab.publish(...), "
                f"docs/plugins.md \"Services\"), not {type(self.services).__name__}")


class Lab(abc.ABC):
    name: ClassVar[str]
    description: ClassVar[str]
    Params: ClassVar[type[BaseModel]] = NoParams
    tools: ClassVar[tuple[Tool, ...]] = ()
    knobs: ClassVar[tuple[Knob, ...]] = ()
    """Variant knobs this lab realises; ``enter`` receives these and no others."""
    switch_cost: ClassVar[str] = "cheap"
    """'expensive' when entering a variant restarts something (a VM, a switch): blocked order."""
    provides: ClassVar[tuple[type[Service], ...]] = ()
    """The kinds of service ``enter`` publishes (``virtbench.services``); a workload that needs
    another is refused before the run."""

    def __init__(self, params: BaseModel | None, workdir: Path, target: Target) -> None:
        self.params: Any = params if params is not None else self.Params()
        self.workdir = workdir
        self.target = target

    def check(self) -> list[str]:
        return missing_tools(f"lab {self.name}", self.target.which, self.tools)

    def up(self) -> None:  # noqa: B027 - optional hook
        """Build what every variant shares."""

    @classmethod
    def own_knobs(cls, knobs: Mapping[str, Any]) -> dict[str, Any]:
        """The knobs of a variant that this lab declares (workloads realise the others)."""
        declared = {knob.name for knob in cls.knobs}
        return {name: value for name, value in knobs.items() if name in declared}

    def provided_services(self) -> tuple[type[Service], ...]:
        """What this lab, with its params, publishes for every variant (default ``provides``;
        a lab whose params turn a part off narrows it)."""
        return self.provides

    def publish(self, *services: Service) -> Services:
        """``services`` for a ``LabState``; refuses a kind this lab does not declare."""
        declared = self.provided_services()
        stray = [type(s) for s in services if type(s) not in declared]
        if stray:
            raise VirtbenchError(f"lab {self.name} publishes {kind_names(stray)} but declares "
                                 f"it provides {kind_names(declared)}")
        return Services(self.name, tuple(services))

    @abc.abstractmethod
    def enter(self, variant: str, knobs: Mapping[str, Any]) -> LabState:
        """Apply one variant's knobs (the runner passes only ``own_knobs``)."""

    def leave(self, variant: str) -> None:  # noqa: B027 - optional hook
        """Undo ``enter``."""

    @classmethod
    def plan_notes(cls, params: BaseModel, variants: Mapping[str, Mapping[str, Any]]
                   ) -> list[str]:
        """What the run's figures will and will not mean with these params and variants
        (each variant's own knobs), said by `run --check` before anything starts; not
        problems. Default: nothing."""
        return []

    def check_variant(self, variant: str, knobs: Mapping[str, Any]) -> list[str]:
        """Problems of one variant's own knobs with this lab's params, found before anything
        runs (each knob alone is judged when the file is read). Default: none."""
        return []

    def workloads_in_own_guests(self) -> bool:
        """True when every variant's workloads run in guests this lab boots (``LabState.target``)
        from an image holding their tools: those are then checked in the guest when the trial
        is set up, not on the experiment's target before the run. Default: False."""
        return False

    def serving_daemons(self) -> dict[str, int]:
        """Name → PID of each daemon running now that does the workload's work (a cache, a
        web server, a switch); a profiled trial counts their samples, and their children's,
        as the workload's (docs/explain.md). Default: none. Never the neighbours or
        background traffic a lab adds as interference."""
        return {}

    def down(self) -> None:  # noqa: B027 - optional hook
        """Remove everything; idempotent and safe after a partial ``up``."""

    @classmethod
    def clean(cls, manifest: Manifest) -> list[str]:
        """Remove leftovers listed in a crashed run's manifest; return what was removed."""
        return []
