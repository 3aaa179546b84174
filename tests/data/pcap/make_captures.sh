#!/bin/bash
# Regenerates the small real captures in this directory (run as root, from this directory).
# Two namespaces joined by a veth; an iperf3 UDP flow over IPv4 and an iperf3 TCP flow over IPv6
# run at the same time while tcpdump/dumpcap capture in the receiving namespace.
set -euo pipefail
A=vbpcap-a; B=vbpcap-b
cleanup() {
  for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done
  ip netns del "$A" 2>/dev/null || true; ip netns del "$B" 2>/dev/null || true
}
trap cleanup EXIT
ip netns add "$A"; ip netns add "$B"
ip link add vbpa type veth peer name vbpb
ip link set vbpa netns "$A"; ip link set vbpb netns "$B"
ip -n "$A" addr add 10.98.0.1/24 dev vbpa; ip -n "$B" addr add 10.98.0.2/24 dev vbpb
ip -n "$A" addr add fd00:98::1/64 dev vbpa nodad; ip -n "$B" addr add fd00:98::2/64 dev vbpb nodad
for ns in "$A" "$B"; do ip -n "$ns" link set lo up; done
ip -n "$A" link set vbpa up; ip -n "$B" link set vbpb up
ip netns exec "$A" iperf3 -s -p 5201 -D; ip netns exec "$A" iperf3 -s -p 5202 -D
sleep 0.5

capture() {  # NAME CAPTURE-COMMAND...
  local name=$1; shift
  ip netns exec "$B" "$@" &
  local cap=$!
  sleep 1
  # UDP 10.98.0.2 -> 10.98.0.1:5202 (iperf3 -c sends) and TCP over IPv6 (server sends, -R)
  ip netns exec "$B" iperf3 -c 10.98.0.1 -p 5202 -u -b 400K -l 300 -t 1 >/dev/null &
  ip netns exec "$B" iperf3 -c fd00:98::1 -p 5201 -R -n 200K >/dev/null
  wait %2 2>/dev/null || true
  sleep 1.5
  kill -INT "$cap"; wait "$cap" || true
  echo "$name: $(capinfos -c -M "$name" | tail -1)"
}
F="port 5201 or port 5202"
capture two_flows_us.pcap tcpdump -q -i vbpb -s 96 -w two_flows_us.pcap "$F"
capture two_flows_ns.pcap tcpdump -q -i vbpb -s 96 --time-stamp-precision=nano -w two_flows_ns.pcap "$F"
capture two_flows.pcapng dumpcap -q -i vbpb -i lo -s 96 -f "$F" -w two_flows.pcapng
capture two_flows_sll.pcap tcpdump -q -i any -y LINUX_SLL -s 96 -w two_flows_sll.pcap "$F"
capture two_flows_sll2.pcap tcpdump -q -i any -y LINUX_SLL2 -s 96 -w two_flows_sll2.pcap "$F"
