"""libvirt's CPU model definitions: known feature names and the features of a named model.

Feature names come from libvirt's cpu_map (``/usr/share/libvirt/cpu_map/x86_features.xml``);
a model's features come from the daemon itself (``virConnectBaselineCPU`` with
``EXPAND_FEATURES``), so a remote host's own definitions are used.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path
from typing import Any

from virtbench.model import VirtbenchError
from virtbench.targets.libvirt_connection import libvirt_module

__all__ = ["CPU_MAP_DIR", "ModelCatalog", "known_features"]

CPU_MAP_DIR = Path("/usr/share/libvirt/cpu_map")


@cache
def known_features(cpu_map: Path = CPU_MAP_DIR) -> dict[str, str]:
    """Every x86 feature name and alias libvirt knows, mapped to its canonical name.

    Empty when the cpu_map is not installed (then names are not checked).
    """
    path = cpu_map / "x86_features.xml"
    if not path.exists():
        return {}
    names: dict[str, str] = {}
    for feature in ET.parse(path).getroot().iter("feature"):
        name = feature.get("name")
        if not name:
            continue
        names[name] = name
        for alias in feature.findall("alias"):
            if alias.get("name"):
                names[alias.get("name", "")] = name
    return names


class ModelCatalog:
    """Named CPU models of one libvirt connection and the features each one has."""

    def __init__(self, conn: Any, arch: str = "x86_64") -> None:
        self.conn = conn
        self.arch = arch
        self._features: dict[str, frozenset[str]] = {}

    def names(self) -> list[str]:
        libvirt = libvirt_module()
        try:
            return list(self.conn.getCPUModelNames(self.arch))
        except libvirt.libvirtError:
            return []

    def features(self, model: str) -> frozenset[str]:
        """Features libvirt's definition of ``model`` contains (canonical libvirt names)."""
        if model not in self._features:
            libvirt = libvirt_module()
            xml = f"<cpu><arch>{self.arch}</arch><model>{model}</model></cpu>"
            try:
                expanded = self.conn.baselineCPU(
                    [xml], libvirt.VIR_CONNECT_BASELINE_CPU_EXPAND_FEATURES
                )
            except libvirt.libvirtError as exc:
                raise VirtbenchError(f"libvirt cannot expand CPU model '{model}': {exc}") from exc
            root = ET.fromstring(expanded)
            self._features[model] = frozenset(
                f.get("name", "")
                for f in root.findall("feature")
                if f.get("policy", "require") in ("require", "force")
            )
        return self._features[model]
