set -x
cd /tmp/pcorp/irtt
irtt server -b 127.0.0.1:2212 > server.log 2>&1 &
SRV=$!
sleep 0.5
c() { name=$1; shift; irtt client -i 10ms -d 1s "$@" -o $name.json.gz 127.0.0.1:2212 > $name.txt 2>&1; echo "$name rc=$?"; }
c irtt0.9-default-loopback
c irtt0.9-tstamp-none-loopback --tstamp=none
c irtt0.9-tstamp-send-loopback --tstamp=send
c irtt0.9-tstamp-receive-loopback --tstamp=receive
c irtt0.9-tstamp-midpoint-loopback --tstamp=midpoint
c irtt0.9-clock-monotonic-loopback --clock=monotonic
c irtt0.9-clock-wall-loopback --clock=wall
irtt client -i 10ms -d 1s -o irtt0.9-plain-loopback.json 127.0.0.1:2212 > irtt0.9-plain-loopback.txt 2>&1
kill $SRV; wait $SRV
# loss: a network namespace whose loopback is limited by a tbf qdisc drops part of the probes
ip netns add vbparse-irtt
ip -n vbparse-irtt link set lo up
tc -n vbparse-irtt qdisc add dev lo root tbf rate 300kbit burst 3000 latency 5ms
ip netns exec vbparse-irtt irtt server -b 127.0.0.1:2212 > server-loss.log 2>&1 &
SRV=$!
sleep 0.5
ip netns exec vbparse-irtt irtt client -i 10ms -d 2s -l 500 -o irtt0.9-tbf-loss-netns.json.gz 127.0.0.1:2212 > irtt0.9-tbf-loss-netns.txt 2>&1
kill $SRV; wait $SRV
ip netns del vbparse-irtt
