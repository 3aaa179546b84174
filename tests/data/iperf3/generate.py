"""Run iperf3 3.12 on loopback in every mode; server text log beside each client JSON."""
import os
import signal
import subprocess
import time

PORT = "5291"


def run(name, args, interrupt_after=None):
    srv = subprocess.Popen(["iperf3", "-s", "-1", "-p", PORT, "--logfile", f"{name}.server.txt"])
    time.sleep(0.5)
    with open(f"{name}.json", "wb") as out:
        cli = subprocess.Popen(["iperf3", "-c", "127.0.0.1", "-p", PORT, *args], stdout=out,
                               stderr=subprocess.STDOUT, start_new_session=True,
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


run("iperf3.12-tcp-loopback", ["-t", "2", "-J"])
run("iperf3.12-tcp-reverse-loopback", ["-t", "2", "-R", "-J"])
run("iperf3.12-tcp-P2-loopback", ["-t", "2", "-P", "2", "-J"])
run("iperf3.12-tcp-bidir-loopback", ["-t", "2", "--bidir", "-J"])
run("iperf3.12-udp-100M-loopback", ["-t", "2", "-u", "-b", "100M", "-J"])
run("iperf3.12-udp-reverse-P2-loopback", ["-t", "2", "-u", "-b", "50M", "-R", "-P", "2", "-J"])
run("iperf3.12-udp-bidir-loopback", ["-t", "2", "-u", "-b", "50M", "--bidir", "-J"])
run("iperf3.12-tcp-interrupted-loopback", ["-t", "10", "-J"], interrupt_after=2.5)
