"""The scratch testbed of ``virtbench assess``'s disk and network probes.

- disk: a fresh image file, written through, on a loop device with direct I/O (so the backing
  file's page cache does not answer for the disk), the device's scheduler as the kernel chose it;
- network: two namespaces joined by a veth pair, an iperf3 server in one of them.

Everything is ours and new: the probes change settings only on these objects (the loop device's
scheduler, the veth's offloads), never on the machine's own disks or NICs, and ``down`` (also on
Ctrl-C, through the runner) or ``virtbench lab clean`` (after a crash) removes all of it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import time
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from virtbench.contract import Params, Tool
from virtbench.labs.daemons import start_recorded
from virtbench.labs.lab_contract import Lab, LabState, Manifest, lab_root
from virtbench.labs.net.net_leftovers import OUR_PREFIX, clean_manifest
from virtbench.labs.net.netops import add_namespace, add_veth, set_address
from virtbench.model import VirtbenchError
from virtbench.services import ScratchDisk, Service, VethPair
from virtbench.targets.daemon import Daemon
from virtbench.targets.local import LocalTarget, NetnsTarget
from virtbench.targets.target_contract import Target

__all__ = ["IPERF3_PORT", "LABS", "ProbeLab", "ProbeParams"]

IPERF3_PORT = 5301
SUBNET = "10.79.0"


class ProbeParams(Params):
    disk: bool = Field(False, description="make the scratch loop device (disk probes)")
    network: bool = Field(False, description="make the namespace pair (network probes)")
    image_size_mib: int = Field(64, ge=16, description="size of the scratch image, MiB")
    image_dir: str | None = Field(None, description="where the image file goes (default: the "
                                                    "run's work directory)")


def _free_mib(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize // (1024 * 1024)


def _detach(target: Target, device: str, image: str) -> list[str]:
    """Detach ``device`` if it still serves ``image`` (deleted or not): a loop device number
    is reused, so one that serves anything else is not ours any more."""
    try:
        backing = Path(f"/sys/block/{Path(device).name}/loop/backing_file").read_text().strip()
    except OSError:
        return []  # detached already
    if backing.removesuffix(" (deleted)") != image:
        return []
    target.run(["losetup", "-d", device], check=False)
    # A device still open (a probe's fio outliving a killed run) detaches when closed.
    for _ in range(50):
        if not Path(f"/sys/block/{Path(device).name}/loop/backing_file").exists():
            return [f"loop device {device} (on {image})"]
        time.sleep(0.2)
    return [f"loop device {device} (on {image}; detaches when its last user closes it)"]


class ProbeLab(Lab):
    name = "assess-probes"
    description = ("virtbench assess's scratch testbed: a loop device on a fresh image file "
                   "(disk probes) and two namespaces joined by a veth pair with an iperf3 "
                   "server (network probes); probes change settings only on these")
    Params = ProbeParams
    tools = (
        Tool("losetup", "mount", "the scratch loop device"),
        Tool("findmnt", "util-linux", "naming the filesystem behind the image"),
        Tool("ip", "iproute2", "namespaces and the veth pair"),
        Tool("ethtool", "ethtool", "the veth's offloads"),
        Tool("iperf3", "iperf3", "the network probe's server"),
    )
    switch_cost: ClassVar[str] = "cheap"
    provides = (ScratchDisk, VethPair)

    def __init__(self, params: BaseModel | None, workdir: Path, target: Target) -> None:
        super().__init__(params, workdir, target)
        self.token = secrets.token_hex(2)
        self.manifest: Manifest | None = None
        self.published: list[Service] = []
        """What ``up`` made, published to every variant."""
        self.server: Daemon | None = None

    def check(self) -> list[str]:
        if not isinstance(self.target, LocalTarget) or isinstance(self.target, NetnsTarget):
            return ["lab assess-probes: runs on the local machine only (target kind local)"]
        return []

    def up(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.manifest = Manifest(lab_root() / f"{OUR_PREFIX}probe-{self.token}.json", self.name)
        try:
            if self.params.disk:
                self.published.append(self._disk(self.manifest))
            if self.params.network:
                self.published.append(self._network(self.manifest))
        except BaseException:
            self.down()
            raise

    def provided_services(self) -> tuple[type[Service], ...]:
        """The scratch disk with params.disk, the veth pair with params.network."""
        return tuple(kind for kind, wanted in ((ScratchDisk, self.params.disk),
                                               (VethPair, self.params.network)) if wanted)

    def _disk(self, manifest: Manifest) -> ScratchDisk:
        image_dir = Path(self.params.image_dir) if self.params.image_dir else self.workdir
        size = self.params.image_size_mib
        if _free_mib(image_dir) < size + 64:
            raise VirtbenchError(f"lab assess-probes: a {size} MiB scratch image does not fit in "
                                 f"{image_dir}; set params.image_dir or image_size_mib")
        image = image_dir / f"{OUR_PREFIX}probe-{self.token}.img"
        manifest.add("image", str(image))
        # Written, not fallocated: reads of unallocated (or unwritten) blocks would return
        # zeros without touching the disk, and the first write to each would convert an
        # extent (a journal commit the probe would time and the detach would wait for). One
        # random MiB repeated, so nothing below mistakes it for zeros to skip.
        block = os.urandom(1024 * 1024)
        try:
            with open(image, "xb") as out:
                for _ in range(size):
                    out.write(block)
                out.flush()
                os.fsync(out.fileno())
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                raise VirtbenchError(f"lab assess-probes: disk full writing {image}") from exc
            raise
        device = self.target.run(["losetup", "--find", "--show", "--direct-io=on",
                                  str(image)]).stdout.strip()
        manifest.add("loop", {"device": device, "image": str(image)})
        dio = self.target.run(["losetup", "--list", "--noheadings", "--output", "DIO", device],
                              check=False).stdout.strip() == "1"
        # The loop device holds the file open: unlinked now, its blocks are freed when the
        # device goes, so ``down`` never waits for a busy disk's journal to free them.
        image.unlink()
        manifest.remove("image", str(image))
        mount = json.loads(self.target.run(["findmnt", "-J", "-T", str(image_dir)]).stdout)
        fs = mount["filesystems"][0]
        sysfs = f"/sys/block/{Path(device).name}/queue/scheduler"
        return ScratchDisk(
            device=device, image=str(image), size_mib=size, direct_io=dio,
            backing=f"{fs.get('source', '?')} ({fs.get('fstype', '?')}, mounted on "
                    f"{fs.get('target', '?')})",
            scheduler_file=sysfs,
            schedulers=tuple(Path(sysfs).read_text().replace("[", "").replace("]", "").split()))

    def _network(self, manifest: Manifest) -> VethPair:
        server_ns, client_ns = (f"{OUR_PREFIX}{self.token}-p{r}" for r in ("s", "c"))
        for ns in (server_ns, client_ns):
            add_namespace(self.target, manifest, ns)
        add_veth(self.target, server_ns, "vbps", client_ns, "vbpc")
        set_address(self.target, server_ns, "vbps", f"{SUBNET}.1/24")
        set_address(self.target, client_ns, "vbpc", f"{SUBNET}.2/24")
        rundir = lab_root() / f"{OUR_PREFIX}probe-{self.token}"
        manifest.add("dir", str(rundir))
        rundir.mkdir(parents=True, exist_ok=True)
        self.server = start_recorded(manifest, NetnsTarget(server_ns),
                                     ["iperf3", "-s", "-p", str(IPERF3_PORT)],
                                     log=rundir / "iperf3.log")
        self.server.wait_for_port(IPERF3_PORT)
        return VethPair(server_ns=server_ns, server_iface="vbps", client_ns=client_ns,
                        client_iface="vbpc", address=f"{SUBNET}.1", port=IPERF3_PORT)

    def enter(self, variant: str, knobs: Any) -> LabState:
        return LabState(services=self.publish(*self.published))

    def down(self) -> None:
        if self.server is not None:
            server, self.server = self.server, None
            with contextlib.suppress(Exception):
                server.stop()
        if self.manifest is not None:
            self.clean(self.manifest)
            if not any(self.manifest.data["objects"].values()):
                self.manifest.delete()
            else:
                raise VirtbenchError(f"lab assess-probes: cleanup incomplete, see "
                                     f"{self.manifest.path} (virtbench lab clean)")
        self.published = []

    @classmethod
    def clean(cls, manifest: Manifest) -> list[str]:
        target = LocalTarget()
        done = clean_manifest(target, manifest)  # the iperf3 server, namespaces, run dir
        for loop in manifest.items("loop"):
            done += _detach(target, str(loop["device"]), str(loop["image"]))
            manifest.remove("loop", loop)
        for image in manifest.items("image"):  # a crash between allocating and attaching
            if Path(image).exists():
                Path(image).unlink()
                done.append(f"image {image}")
            manifest.remove("image", image)
        return done


LABS = (ProbeLab,)
