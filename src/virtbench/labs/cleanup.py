"""``virtbench lab clean``: remove what crashed runs left behind, manifest by manifest.

Each manifest under :func:`lab_root` names its lab; that lab's ``clean`` removes the objects it
lists. A manifest whose run is still alive is left alone, as is one whose lab is unknown.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from virtbench.labs.lab_contract import RENAMED_LABS, Lab, Manifest, lab_root

__all__ = ["CleanEvent", "CleanSummary", "clean_leftovers"]


@dataclass(frozen=True)
class CleanEvent:
    kind: Literal["skipped", "removed", "kept"]
    text: str


@dataclass
class CleanSummary:
    events: list[CleanEvent] = field(default_factory=list)

    def count(self, kind: str) -> int:
        return sum(1 for e in self.events if e.kind == kind)

    @property
    def complete(self) -> bool:
        """False when a manifest still lists objects that could not be removed."""
        return self.count("kept") == 0

    def summary(self) -> str:
        kept = self.count("kept")
        return (f"lab clean: {self.count('removed')} objects removed"
                + (f"; {kept} manifests still list objects (see above)" if kept else ""))


def clean_leftovers(labs_by_name: Mapping[str, type[Lab]], root: Path | None = None
                    ) -> CleanSummary:
    """Clean every manifest in ``root`` (default :func:`lab_root`) whose run is gone, each with
    its lab among ``labs_by_name`` (``virtbench.plugins.all_labs()``)."""
    outcome = CleanSummary()
    for path in sorted((root or lab_root()).glob("*.json")):
        manifest = Manifest(path, "?")
        lab = str(manifest.data.get("lab", "?"))
        owner = manifest.data.get("pid")
        if isinstance(owner, int) and owner != os.getpid() and Path(f"/proc/{owner}").exists():
            outcome.events.append(CleanEvent(
                "skipped", f"skipping {path.name}: its run (pid {owner}) is still alive"))
            continue
        cls = labs_by_name.get(RENAMED_LABS.get(lab, lab))
        if cls is None:
            outcome.events.append(CleanEvent("skipped", f"skipping {path.name}: unknown lab "
                                                        f"{lab!r}"))
            continue
        outcome.events += [CleanEvent("removed", f"removed {item}") for item in cls.clean(manifest)]
        # Labs drop each object from the manifest once it is gone; keep what could not go.
        remaining = {kind: items for kind, items in manifest.data["objects"].items() if items}
        if remaining:
            outcome.events.append(CleanEvent("kept", f"kept {path}: could not remove "
                                                     f"{remaining}"))
        else:
            manifest.delete()
    return outcome
