"""What every network-namespace lab on this machine shares: a random lab id in the names of
its namespaces, a run directory, and a manifest that lists each object before it exists, so
``down`` and ``virtbench lab clean`` (after a crash) remove exactly what the lab made."""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel

from virtbench.labs.lab_contract import Lab, Manifest, lab_root
from virtbench.labs.net.net_leftovers import OUR_PREFIX, clean_manifest
from virtbench.labs.net.netops import add_namespace
from virtbench.model import VirtbenchError
from virtbench.targets.local import LocalTarget, NetnsTarget
from virtbench.targets.target_contract import Target

__all__ = ["NetnsLab"]


class NetnsLab(Lab):
    """A lab of network namespaces on the local machine (it refuses any other target)."""

    def __init__(self, params: BaseModel | None, workdir: Path, target: Target) -> None:
        super().__init__(params, workdir, target)
        if not isinstance(target, LocalTarget) or isinstance(target, NetnsTarget):
            raise VirtbenchError(f"lab {self.name}: runs on the local machine only (target "
                                 "kind local)")
        self.host: LocalTarget = target
        self.lab_id = secrets.token_hex(2)
        self.prefix = f"{OUR_PREFIX}{self.lab_id}-"
        """Of every name the lab gives (namespaces, cgroups), so clean-up knows its own."""
        self.rundir = lab_root() / f"{OUR_PREFIX}{self.lab_id}"
        self.manifest: Manifest | None = None

    def _create_namespaces(self, namespaces: Iterable[str]) -> Manifest:
        """The run directory, the manifest, then the namespaces, each recorded first."""
        self.rundir.mkdir(parents=True, exist_ok=True)
        self.manifest = Manifest(self.rundir.with_suffix(".json"), self.name)
        self.manifest.add("dir", str(self.rundir))
        for name in namespaces:
            add_namespace(self.target, self.manifest, name)
        return self.manifest

    def _remove_recorded(self) -> None:
        """Remove everything the manifest still lists, then the manifest."""
        if self.manifest is not None:
            clean_manifest(self.target, self.manifest)
            self.manifest.delete()
            self.manifest = None

    @classmethod
    def clean(cls, manifest: Manifest) -> list[str]:
        return clean_manifest(LocalTarget(), manifest)
