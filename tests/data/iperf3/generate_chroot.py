"""iperf3 of another Debian release, from a debootstrap chroot, on loopback (-J, --json-stream).

Usage: generate_chroot.py CHROOT VERSION (e.g. /tmp/chroots/trixie 3.18).
"""
import os
import signal
import subprocess
import sys
import time

ROOT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/chroots/trixie"
VERSION = sys.argv[2] if len(sys.argv) > 2 else "3.18"
PORT = "5292"


def run(name: str, args: list[str], interrupt_after: float | None = None) -> None:
    with open(f"{name}.server.txt", "wb") as log, open(f"{name}.json", "wb") as out:
        srv = subprocess.Popen(["chroot", ROOT, "iperf3", "-s", "-1", "-p", PORT], stdout=log,
                               stderr=subprocess.STDOUT)
        time.sleep(0.7)
        cli = subprocess.Popen(["chroot", ROOT, "iperf3", "-c", "127.0.0.1", "-p", PORT, *args],
                               stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        if interrupt_after:
            time.sleep(interrupt_after)
            os.kill(cli.pid, signal.SIGINT)
        cli.wait(timeout=60)
        try:
            srv.wait(timeout=10)
        except subprocess.TimeoutExpired:
            srv.kill()
            srv.wait()
    print(name, cli.returncode, flush=True)


v = VERSION
run(f"iperf{v}-tcp-json-stream-loopback", ["-t", "2", "--json-stream"])
run(f"iperf{v}-udp-json-stream-loopback", ["-t", "2", "-u", "-b", "100M", "--json-stream"])
run(f"iperf{v}-tcp-bidir-json-stream-loopback", ["-t", "2", "--bidir", "--json-stream"])
run(f"iperf{v}-udp-loopback", ["-t", "2", "-u", "-b", "100M", "-J"])
run(f"iperf{v}-tcp-bidir-loopback", ["-t", "2", "--bidir", "-J"])
