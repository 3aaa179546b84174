"""Test hosts: network namespaces, each with its own sshd and host key, on a private bridge.

A controller namespace holds the bridge (10.77.0.1/24); host i is namespace ``PREFIX-hI``
with 10.77.0.(10+i), joined to the bridge by a veth pair. The fleet's ssh clients run in the
controller namespace (``--netns``), so every packet stays inside namespaces made here.
Used by tests/lab/fleet and benchmarks/fleet_*.py.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from waits import kill

SUBNET = "10.77.0"


def _run(*argv: str) -> str:
    return subprocess.run(list(argv), check=True, capture_output=True, text=True,
                          timeout=300).stdout


@dataclass
class SshHost:
    name: str
    namespace: str
    address: str
    directory: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def config(self) -> Path:
        return self.directory / "sshd_config"

    @property
    def host_key_pub(self) -> str:
        return (self.directory / "ssh_host_ed25519_key.pub").read_text().strip()

    def start_sshd(self) -> None:
        self.process = subprocess.Popen(
            ["ip", "netns", "exec", self.namespace, "/usr/sbin/sshd", "-D", "-e", "-f",
             str(self.config)],
            stdout=subprocess.DEVNULL, stderr=open(self.directory / "sshd.log", "ab"),  # noqa: SIM115
            start_new_session=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            listening = _run("ip", "netns", "exec", self.namespace, "ss", "-Htln",
                             "sport = :22")
            if self.address in listening:
                return
            time.sleep(0.05)
        raise RuntimeError(f"sshd of {self.name} did not listen: "
                           f"{(self.directory / 'sshd.log').read_text()}")

    def cpu_seconds(self, settle_s: float = 10.0) -> float:
        """CPU (user + system) of this host's sshd and everything it ran, in s, once the
        sessions served so far have ended (each connection's process, and through it every
        shell and command, is reaped into the listening daemon's children's times)."""
        assert self.process is not None
        pid = self.process.pid
        deadline = time.monotonic() + settle_s
        while time.monotonic() < deadline and Path(
                f"/proc/{pid}/task/{pid}/children").read_text().strip():
            time.sleep(0.05)
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        # utime, stime, cutime, cstime: fields 14-17 of proc(5), 11-14 after the name
        return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")

    def kill_sshd(self) -> None:
        """The listening daemon and every connection it serves: sshd puts each connection in
        a session of its own, so they are found as this namespace's sshd processes."""
        if self.process is not None:
            kill(self.process)  # its process group, reaped within a bound
        self.process = None
        for pid in _run("ip", "netns", "pids", self.namespace).split():
            with contextlib.suppress(OSError):
                if Path(f"/proc/{pid}/comm").read_text().strip() == "sshd":
                    os.kill(int(pid), signal.SIGKILL)


@dataclass
class SshFleet:
    prefix: str
    directory: Path
    hosts: list[SshHost] = field(default_factory=list)

    @property
    def controller(self) -> str:
        return f"{self.prefix}-c"

    @property
    def client_key(self) -> Path:
        return self.directory / "id_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.directory / "known_hosts"

    def inventory_yaml(self, hosts: list[SshHost] | None = None, ssh_args: str = "") -> str:
        lines = ["all:", "  vars:", "    ansible_user: root",
                 f"    ansible_ssh_private_key_file: {self.client_key}",
                 f"    virtbench_known_hosts: {self.known_hosts}",
                 *([f"    ansible_ssh_common_args: '{ssh_args}'"] if ssh_args else []),
                 "  hosts:"]
        for host in hosts or self.hosts:
            lines.append(f"    {host.name}: {{ansible_host: {host.address}}}")
        return "\n".join(lines) + "\n"

    def stop(self) -> None:
        for host in self.hosts:
            host.kill_sshd()
            subprocess.run(["ip", "netns", "del", host.namespace], check=False,
                           capture_output=True, timeout=60)
        subprocess.run(["ip", "netns", "del", self.controller], check=False,
                       capture_output=True, timeout=60)
        shutil.rmtree(self.directory, ignore_errors=True)


_SSHD_CONFIG = """\
ListenAddress {address}
Port 22
HostKey {directory}/ssh_host_ed25519_key
PidFile {directory}/sshd.pid
AuthorizedKeysFile {authorized}
StrictModes no
UsePAM no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
MaxStartups 200:30:400
MaxSessions 200
Subsystem sftp /usr/lib/openssh/sftp-server
LogLevel ERROR
"""


def _restricted_bin(directory: Path, binaries: list[str]) -> Path:
    """A directory holding only ``binaries`` (symlinks): a host where the rest is missing."""
    bin_dir = directory / "bin"
    bin_dir.mkdir()
    for binary in binaries:
        found = shutil.which(binary)
        if found:
            (bin_dir / binary).symlink_to(found)
    return bin_dir


def start_fleet(count: int, prefix: str | None = None,
                only_binaries: dict[str, list[str]] | None = None) -> SshFleet:
    """``count`` hosts with sshd listening; known_hosts holds every host's key.

    ``only_binaries``: host name -> the only binaries on its PATH (a host missing tools).
    """
    prefix = prefix or f"vbfl{os.getpid() % 100000}"
    fleet = SshFleet(prefix, Path(tempfile.mkdtemp(prefix="vb-fleet.")))
    try:
        Path("/run/sshd").mkdir(parents=True, exist_ok=True)
        _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(fleet.client_key))
        authorized = fleet.directory / "authorized_keys"
        authorized.write_text(Path(f"{fleet.client_key}.pub").read_text())
        _run("ip", "netns", "add", fleet.controller)
        ctl = ["ip", "-n", fleet.controller]
        _run(*ctl, "link", "set", "lo", "up")
        _run(*ctl, "link", "add", "br0", "type", "bridge")
        _run(*ctl, "addr", "add", f"{SUBNET}.1/24", "dev", "br0")
        _run(*ctl, "link", "set", "br0", "up")
        known = []
        for index in range(1, count + 1):
            host = SshHost(f"h{index}", f"{prefix}-h{index}", f"{SUBNET}.{9 + index}",
                            fleet.directory / f"h{index}")
            fleet.hosts.append(host)
            host.directory.mkdir()
            _run("ip", "netns", "add", host.namespace)
            _run(*ctl, "link", "add", f"v{index}", "type", "veth", "peer", "name", "eth0",
                 "netns", host.namespace)
            _run(*ctl, "link", "set", f"v{index}", "master", "br0", "up")
            inside = ["ip", "-n", host.namespace]
            _run(*inside, "link", "set", "lo", "up")
            _run(*inside, "addr", "add", f"{host.address}/24", "dev", "eth0")
            _run(*inside, "link", "set", "eth0", "up")
            _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                 str(host.directory / "ssh_host_ed25519_key"))
            config = _SSHD_CONFIG.format(address=host.address, directory=host.directory,
                                         authorized=authorized)
            if only_binaries and host.name in only_binaries:
                bin_dir = _restricted_bin(host.directory, only_binaries[host.name])
                config += f"SetEnv PATH={bin_dir}\n"
            host.config.write_text(config)
            known.append(f"{host.address} {host.host_key_pub}")
            host.start_sshd()
        fleet.known_hosts.write_text("\n".join(known) + "\n")
    except BaseException:
        fleet.stop()
        raise
    return fleet
