"""Lab cross-host's guest endpoints without processes: the guest_addresses parameter refused
naming the role, the host's routes as ``ip route`` lines, the SSH target's spec and its way
through a host to a guest's forwarded sshd."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from virtbench.kvm.sandbox_image import DebianGuestImage
from virtbench.labs.net.crosshost import CrossHostLab, CrossHostParams
from virtbench.labs.net.crosshost_guests import RoleGuest, _route_line, address_problems
from virtbench.model import VirtbenchError
from virtbench.runner.plan import build_plan, check_plan
from virtbench.spec import parse_resolved
from virtbench.targets.fake import FakeTarget, Scripted
from virtbench.targets.ssh import SSHTarget

ROLES = ("server", "client")


def test_guest_addresses_are_refused_naming_the_role() -> None:
    assert address_problems({"server": "10.0.0.20/24", "client": "10.0.0.21/24"}, ROLES) == []
    assert "each of server, client" in address_problems({"server": "10.0.0.20/24"}, ROLES)[0]
    assert address_problems({"server": "10.0.0.20", "client": "10.0.0.21/24"}, ROLES) == [
        "guest_addresses.server: '10.0.0.20' needs its prefix length (10.0.0.20/24)"]
    assert address_problems({"server": "10.0.0.300/24", "client": "10.0.0.21/24"}, ROLES) == [
        "guest_addresses.server: '10.0.0.300/24' is not an IPv4 address/prefix"]
    assert "different addresses" in address_problems(
        {"server": "10.0.0.20/24", "client": "10.0.0.20/24"}, ROLES)[0]


def test_the_lab_refuses_guests_without_addresses(tmp_path: Path) -> None:
    params = CrossHostParams(roles={"server": "h2", "client": "h1"}, endpoints="guests")
    with pytest.raises(VirtbenchError, match="lab cross-host: guest_addresses must give"):
        CrossHostLab(params, tmp_path, FakeTarget([]))
    CrossHostLab(CrossHostParams(roles={"server": "h2", "client": "h1"}), tmp_path,
                 FakeTarget([]))  # endpoints hosts: no addresses needed


def test_routes_are_given_back_as_ip_route_lines() -> None:
    assert _route_line({"dst": "default", "gateway": "10.0.0.1", "protocol": "dhcp",
                        "metric": 100, "flags": []}) == \
        "default via 10.0.0.1 proto dhcp metric 100"
    assert _route_line({"dst": "192.168.5.0/24", "scope": "link", "protocol": "static"}) == \
        "192.168.5.0/24 proto static scope link"


def test_a_guest_behind_a_host_is_reached_through_the_hosts_connection() -> None:
    host = SSHTarget("10.0.0.5", user="root", port=2222, identity_file="/k", known_hosts="/kh",
                     extra_options=["-o", "Ciphers=aes128-ctr"])
    try:
        assert SSHTarget.from_spec(host.spec).spec == host.spec
        guest = host.behind(40022, user="root", identity_file="/gk", known_hosts="/gkh")
        option = next(o for o in guest._base if o.startswith("ProxyCommand="))
        proxy = shlex.split(option.removeprefix("ProxyCommand=").replace("%%", "%"))
        assert proxy[-4:] == ["-W", "127.0.0.1:40022", "--", "10.0.0.5"]
        # the host's own options and master, its %C for the inner ssh to expand
        assert "Ciphers=aes128-ctr" in proxy and any(p.endswith("/%C") for p in proxy)
        assert "%C" not in option.replace("%%C", "")
        assert guest.spec["host"] == "127.0.0.1" and guest.spec["port"] == 40022
        guest.close()
    finally:
        host.close()


EXPERIMENT = """\
name: x
lab: {{kind: cross-host, params: {{roles: {{server: h2, client: h1}}, endpoints: {endpoints},
       guest_addresses: {{server: 10.0.0.20/24, client: 10.0.0.21/24}}}}}}
variants: [{{name: base, knobs: {{}}}}]
workloads: [{{name: net.qos-transfer, params: {{duration_s: 1}}}}]
"""


def test_with_guest_endpoints_the_workloads_tools_are_not_asked_of_the_host() -> None:
    """The guests' image holds iperf3, irtt and tcpdump (checked in the guest when the trial
    is set up); the host needs libvirt and QEMU instead."""
    host = FakeTarget([Scripted(("true",))], binaries={"ip": "/usr/bin/ip", "ss": "/usr/bin/ss"})
    guests = check_plan(build_plan(parse_resolved(EXPERIMENT.format(endpoints="guests"))), host)
    assert not [p for p in guests if "iperf3" in p or "irtt" in p]
    assert any("'libvirtd' not found on fake (endpoints: guests)" in p for p in guests), guests
    hosts = check_plan(build_plan(parse_resolved(EXPERIMENT.format(endpoints="hosts"))), host)
    assert any("'iperf3' not found" in p for p in hosts) and not [
        p for p in hosts if "libvirtd" in p]


def test_a_host_without_the_image_is_refused_naming_it_and_the_path(tmp_path: Path) -> None:
    host = FakeTarget().add("test", returncode=1)
    guest = RoleGuest("server", "h2", host, "10.0.0.5", "10.0.0.20/24",  # type: ignore[arg-type]
                      "vbxh0a0b0cs", tmp_path)
    image = DebianGuestImage(Path("/cache/net-image/vmlinuz"), Path("/cache/net-image/rootfs"))
    with pytest.raises(VirtbenchError, match=r"the net image is not on h2 at "
                                             r"/cache/net-image/rootfs \(guest_image_cache\)"):
        guest._instance(image)
    assert [c.argv[0] for c in host.calls] == ["test"]  # nothing written, no key made
    assert not list(tmp_path.iterdir())
