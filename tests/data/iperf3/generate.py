"""Run iperf3 on loopback in the modes its version is tested in: the client's output in NAME.json
(stdout and stderr together, as a user saves it), the one-off server's text report beside it
in NAME.server.txt. Writes into the current directory.

Usage: generate.py                   the system's iperf3 (Debian 12: 3.12)
       generate.py CHROOT VERSION    another Debian release's iperf3 from a debootstrap chroot
                                     (e.g. /tmp/chroots/trixie 3.18, /tmp/chroots/bullseye 3.9)
"""
import os
import signal
import subprocess
import sys
import time

PORT = "5291"
MODES = {  # name: (client arguments, seconds until SIGINT or None)
    "tcp": (["-t", "2", "-J"], None),
    "tcp-reverse": (["-t", "2", "-R", "-J"], None),
    "tcp-P2": (["-t", "2", "-P", "2", "-J"], None),
    "tcp-bidir": (["-t", "2", "--bidir", "-J"], None),
    "tcp-interrupted": (["-t", "10", "-J"], 2.5),
    "udp": (["-t", "2", "-u", "-b", "100M", "-J"], None),
    "udp-reverse-P2": (["-t", "2", "-u", "-b", "50M", "-R", "-P", "2", "-J"], None),
    "udp-bidir": (["-t", "2", "-u", "-b", "50M", "--bidir", "-J"], None),
    "tcp-json-stream": (["-t", "2", "--json-stream"], None),
    "udp-json-stream": (["-t", "2", "-u", "-b", "100M", "--json-stream"], None),
    "tcp-bidir-json-stream": (["-t", "2", "--bidir", "--json-stream"], None),
}
MODES["udp-100M"] = MODES["udp"]  # the 3.12 files' name for it
RUNS = {  # version: the modes its files cover (3.9 has no --json-stream)
    "3.12": ("tcp", "tcp-reverse", "tcp-P2", "tcp-bidir", "udp-100M", "udp-reverse-P2",
             "udp-bidir", "tcp-interrupted"),
    "3.18": ("tcp-json-stream", "udp-json-stream", "tcp-bidir-json-stream", "udp", "tcp-bidir"),
    "3.9": ("udp", "udp-reverse-P2", "tcp", "tcp-reverse", "tcp-bidir", "udp-bidir"),
}


def run(prefix: list[str], name: str, args: list[str], interrupt_after: float | None = None
        ) -> None:
    with open(f"{name}.server.txt", "wb") as log, open(f"{name}.json", "wb") as out:
        srv = subprocess.Popen([*prefix, "iperf3", "-s", "-1", "-p", PORT], stdout=log,
                               stderr=subprocess.STDOUT)
        time.sleep(0.7)
        # Its own session with SIGINT restored: a background child of a script ignores it.
        cli = subprocess.Popen([*prefix, "iperf3", "-c", "127.0.0.1", "-p", PORT, *args],
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
            srv.wait(10)
    print(name, cli.returncode, flush=True)


def main(argv: list[str]) -> None:
    prefix, version = (["chroot", argv[0]], argv[1]) if argv else ([], "3.12")
    for mode in RUNS[version]:
        args, interrupt_after = MODES[mode]
        run(prefix, f"iperf{version}-{mode}-loopback", args, interrupt_after)


if __name__ == "__main__":
    main(sys.argv[1:])
