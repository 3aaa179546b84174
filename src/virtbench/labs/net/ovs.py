"""A private Open vSwitch (ovsdb-server + ovs-vswitchd or ovs-vswitchd-dpdk) in one namespace.

Everything lives in a run directory of ours (database, sockets, pid and log files), so the
system's OVS, if any, is never touched. DPDK gets its own ``--file-prefix`` for the same reason.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from virtbench.labs.daemons import start_recorded
from virtbench.labs.lab_contract import Manifest
from virtbench.model import VirtbenchError
from virtbench.targets.daemon import Daemon
from virtbench.targets.local import NetnsTarget
from virtbench.targets.target_contract import CommandFailed, Target

__all__ = ["DPDK_VSWITCHD", "OVS_SCHEMA", "DpdkOptions", "OvsDaemons", "OvsStartError",
           "dpdk_runtime_dir", "parse_packet_socket_drops"]

# ovs-vswitchd logs DPDK's EAL errors and the cause of a failed port a few lines before the end.
LOG_LINES_SHOWN = 20

OVS_SCHEMA = Path("/usr/share/openvswitch/vswitch.ovsschema")
DPDK_VSWITCHD = "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk"


def dpdk_runtime_dir(prefix: str) -> Path:
    return Path("/var/run/dpdk") / prefix


class OvsStartError(VirtbenchError):
    """OVS (or DPDK inside it) failed; the message carries the end of ovs-vswitchd.log."""

    def __init__(self, what: str, log: Path, log_lines: list[str]) -> None:
        self.log_lines = log_lines
        shown = "\n".join(f"  {line}" for line in log_lines) if log_lines else "  (no lines)"
        super().__init__(f"{what}; last lines of {log}:\n{shown}")


_SS_SOCKET = re.compile(r"^p_\S+\s+\S+\s+\d+\s+\d+\s+\S*:(\S+)\s.*\"ovs-vswitchd")
_SS_DROPS = re.compile(r"skmem:\(.*\bd(\d+)\)")


def parse_packet_socket_drops(out: str) -> dict[str, int]:
    """Per interface, the packets the kernel dropped at ovs-vswitchd's AF_PACKET receive
    socket of that interface (its receive buffer was full), from ``ss -0 -a -e -m -p``: the
    ``d`` field of ``skmem`` (the socket's sk_drops). Sockets bound to no interface (``*``)
    and other processes' sockets are left out; two sockets on one interface add up."""
    drops: dict[str, int] = {}
    iface: str | None = None
    for line in out.splitlines():
        if sock := _SS_SOCKET.match(line):
            iface = sock[1] if sock[1] != "*" else None
        elif (mem := _SS_DROPS.search(line)) and iface is not None:
            drops[iface] = drops.get(iface, 0) + int(mem[1])
            iface = None
        elif line and not line[0].isspace():
            iface = None
    return drops


@dataclass(frozen=True)
class DpdkOptions:
    """How OVS-DPDK initialises. ``hugepages`` False uses ``--no-huge -m MEM --legacy-mem``;
    with ``huge_dir`` DPDK takes ``-m MEM`` from that hugetlbfs mount only."""

    file_prefix: str
    memory_mb: int = 512
    hugepages: bool = False
    pmd_cpu_mask: str = "0x2"
    lcore_mask: str = "0x1"
    huge_dir: str | None = None
    pmd_max_sleep_us: int = 0
    """OVS's ``pmd-maxsleep`` (OVS >= 3.1): how long an idle poll-mode thread may sleep; 0
    keeps OVS's default, a thread that polls without pause."""

    def extra_args(self) -> str:
        base = f"--file-prefix={self.file_prefix}"
        if self.hugepages and self.huge_dir:
            return f"--huge-dir {self.huge_dir} -m {self.memory_mb} {base}"
        if self.hugepages:
            return base
        return f"--no-huge -m {self.memory_mb} --legacy-mem {base}"


class OvsDaemons:
    """Start, configure and stop one private OVS instance inside namespace ``ns``."""

    def __init__(self, target: Target, ns: str, rundir: Path, manifest: Manifest,
                 dpdk: DpdkOptions | None = None) -> None:
        self.target = target
        self.ns = ns
        self.rundir = rundir
        self.manifest = manifest
        self.dpdk = dpdk
        self.db_sock = rundir / "db.sock"
        self.procs: list[Daemon] = []

    def vsctl(self, *args: str, timeout_s: float = 30.0) -> str:
        try:
            return self.target.run(
                ["ovs-vsctl", f"--db=unix:{self.db_sock}", f"--timeout={int(timeout_s)}", *args],
                timeout=timeout_s + 5,
            ).stdout
        except CommandFailed as exc:
            raise self.error(str(exc)) from exc

    def start(self) -> None:
        self.manifest.add("dir", str(self.rundir))
        self.rundir.mkdir(parents=True, exist_ok=True)
        db = self.rundir / "conf.db"
        self.target.run(["ovsdb-tool", "create", str(db), str(OVS_SCHEMA)])
        self.procs.append(start_recorded(self.manifest, NetnsTarget(self.ns), [
            "ovsdb-server", str(db), f"--remote=punix:{self.db_sock}",
            f"--pidfile={self.rundir / 'ovsdb-server.pid'}",
            f"--unixctl={self.rundir / 'ovsdb-server.ctl'}",
            f"--log-file={self.rundir / 'ovsdb-server.log'}",
        ]))
        self._wait(lambda: self.db_sock.exists(), "ovsdb-server socket")
        self.vsctl("--no-wait", "init")
        vswitchd = "ovs-vswitchd"
        if self.dpdk is not None:
            self.manifest.add("dir", str(dpdk_runtime_dir(self.dpdk.file_prefix)))
            self.vsctl("--no-wait", "set", "Open_vSwitch", ".",
                       "other_config:dpdk-init=true",
                       f'other_config:dpdk-extra="{self.dpdk.extra_args()}"',
                       f"other_config:pmd-cpu-mask={self.dpdk.pmd_cpu_mask}",
                       f"other_config:dpdk-lcore-mask={self.dpdk.lcore_mask}",
                       *([f"other_config:pmd-maxsleep={self.dpdk.pmd_max_sleep_us}"]
                         if self.dpdk.pmd_max_sleep_us else []))
            vswitchd = DPDK_VSWITCHD
        else:
            # Without TSO the netdev datapath drops TCP's large segments: flows stall at 0 bit/s.
            self.vsctl("--no-wait", "set", "Open_vSwitch", ".",
                       "other_config:userspace-tso-enable=true")
        ctl = self.rundir / "ovs-vswitchd.ctl"
        self.procs.append(start_recorded(self.manifest, NetnsTarget(self.ns), [
            vswitchd, f"unix:{self.db_sock}",
            f"--pidfile={self.rundir / 'ovs-vswitchd.pid'}", f"--unixctl={ctl}",
            f"--log-file={self.rundir / 'ovs-vswitchd.log'}",
        ]))
        self._wait(lambda: ctl.exists(), "ovs-vswitchd control socket", timeout_s=60)
        if self.dpdk is not None:
            self._wait(self._dpdk_initialised, "DPDK initialisation", timeout_s=60)

    def _dpdk_initialised(self) -> bool:
        return self.vsctl("get", "Open_vSwitch", ".", "dpdk_initialized").strip() == "true"

    def _wait(self, ready: Callable[[], bool], what: str, timeout_s: float = 20.0) -> None:
        deadline = time.monotonic() + timeout_s
        while True:  # ends: done, or past the deadline below
            for proc in self.procs:
                if not proc.alive():
                    raise self.error(f"OVS: {proc.argv[0]} exited ({proc.process.returncode}) "
                                     f"before {what}")
            if ready():
                return
            if time.monotonic() > deadline:
                raise self.error(f"OVS: no {what} after {timeout_s:.0f} s")
            time.sleep(0.1)

    def error(self, what: str) -> OvsStartError:
        """``what`` went wrong, with the end of ovs-vswitchd's log (where OVS says why)."""
        log = self.rundir / "ovs-vswitchd.log"
        try:
            lines = log.read_text(errors="replace").splitlines()[-LOG_LINES_SHOWN:]
        except OSError:
            lines = []
        return OvsStartError(what, log, lines)

    def rx_socket_drops(self) -> dict[str, int]:
        """Packets dropped so far at ovs-vswitchd's receive socket of each system/tap port
        (netdev datapath; see :func:`parse_packet_socket_drops`). The kernel counted them
        in the port's rx_packets, OVS never saw them, and no OVS counter shows them."""
        out = NetnsTarget(self.ns).run(["ss", "-0", "-a", "-e", "-m", "-p"]).stdout
        return parse_packet_socket_drops(out)

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.stop()
        self.procs.clear()
        if self.dpdk is not None:
            path = dpdk_runtime_dir(self.dpdk.file_prefix)
            shutil.rmtree(path, ignore_errors=True)
            self.manifest.remove("dir", str(path))
            with contextlib.suppress(OSError):
                path.parent.rmdir()  # /var/run/dpdk, which DPDK created, only when empty
        shutil.rmtree(self.rundir, ignore_errors=True)
        self.manifest.remove("dir", str(self.rundir))
