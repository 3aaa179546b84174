"""ovs-vswitchd's per-port receive-socket drops, parsed from ``ss -0 -a -e -m -p``."""

from __future__ import annotations

from virtbench.labs.net.ovs import parse_packet_socket_drops

# Captured from `ss -0 -a -e -m -p` in a netdev-datapath switch namespace after a UDP flood
# (ports oda1, odb1; the third socket is bound to no interface), plus another process's socket.
_USERS = 'users:(("{}",pid={},fd={})) ino:{} sk:15d'
_MEM = ("\tver:0 cpy_thresh:0 flags( running auxdata vnethdr ) "
        "skmem:(r0,rb212992,t0,tb212992,f0,w0,o176,bl0,d{}")
SS = "\n".join([
    "Netid Recv-Q Send-Q Local Address:Port  Peer Address:PortProcess",
    "p_raw UNCONN 0 0 *:oda1 * " + _USERS.format("ovs-vswitchd", 26966, 39, 1514986),
    _MEM.format("1256969)"),
    "p_raw UNCONN 0 0 *:odb1 * " + _USERS.format("ovs-vswitchd", 26966, 40, 1514988),
    _MEM.format("0)"),
    "p_raw UNCONN 0 0 [0]:* * " + _USERS.format("ovs-vswitchd", 26966, 42, 1515035),
    _MEM.format("0)"),
    "p_raw UNCONN 0 0 *:oda1 * " + _USERS.format("tcpdump", 4242, 3, 1515099),
    _MEM.format("77)"),
])


def test_drops_per_ovs_port_only() -> None:
    assert parse_packet_socket_drops(SS) == {"oda1": 1256969, "odb1": 0}


def test_no_sockets_no_ports() -> None:
    assert parse_packet_socket_drops("Netid Recv-Q Send-Q Local Address:Port\n") == {}
