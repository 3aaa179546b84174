"""Remove what a (crashed) network lab left behind, from its manifest."""

from __future__ import annotations

import shutil
from pathlib import Path

from virtbench.labs.daemons import clean_recorded
from virtbench.labs.lab_contract import Manifest
from virtbench.labs.net.hugepages import release_recorded, unmount
from virtbench.labs.net.netops import delete_namespace
from virtbench.targets.target_contract import Target

__all__ = ["OUR_PREFIX", "clean_manifest"]

OUR_PREFIX = "vbnet-"


def clean_manifest(target: Target, manifest: Manifest) -> list[str]:
    """Processes, namespaces (and so every interface and bridge in them), cgroups, mounts,
    hugepages the lab added to the kernel pool, directories."""
    removed = clean_recorded(manifest)
    for name in manifest.items("netns"):
        if str(name).startswith(OUR_PREFIX):  # never a namespace that is not ours
            removed += delete_namespace(target, str(name))
        manifest.remove("netns", name)
    for directory in manifest.items("cgroup"):
        from virtbench.labs.cgroups import remove_cgroup_dir

        if remove_cgroup_dir(Path(directory)):
            removed.append(f"cgroup {directory}")
            manifest.remove("cgroup", directory)
    for mount in manifest.items("mount"):
        if unmount(target, str(mount)):
            removed.append(f"mount {mount}")
            manifest.remove("mount", mount)
    if not manifest.items("mount"):  # a busy hugetlbfs still holds its pages: keep the record
        removed += release_recorded(manifest)  # after the unmounts, which free DPDK's pages
    for directory in manifest.items("dir"):
        if Path(directory).exists():
            shutil.rmtree(directory, ignore_errors=True)
            removed.append(f"directory {directory}")
        manifest.remove("dir", directory)
    return removed

