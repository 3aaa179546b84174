"""How long the README's test command takes, and that it passes however it is started.

Clones the repository's committed HEAD into a fresh directory, installs it once (not timed:
the floor is for the suite with the install done), then runs `bash scripts/test.sh` three times
in a row, each started differently, and records each run's wall time and outcome:

1. in the foreground (stdin the terminal's or whatever this script has);
2. as a script's background job: `setsid`, stdin /dev/null, SIGINT ignored (as cron, nohup and
   CI start it);
3. in the foreground with `stress-ng --cpu 1` hogging one of the two cores the whole time.

Usage: .venv/bin/python benchmarks/suite_duration.py [--keep]
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from record import record

REPO = Path(__file__).resolve().parent.parent
TOTAL = re.compile(r"^([0-9]+ passed, [0-9]+ failed)$", re.M)
LINE = re.compile(r"^line (\w+): ([0-9]+) s wall", re.M)
SUMMARY = re.compile(r"^=+ (.*(?:passed|failed).*) in [0-9.]+s", re.M)


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run(clone: Path, how: str, log: Path) -> tuple[float, int, str, str]:
    argv = ["bash", "scripts/test.sh"]
    hog = None
    started = time.monotonic()
    with log.open("w") as out:
        if how == "background":
            proc = subprocess.Popen(["setsid", *argv], cwd=clone, stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    preexec_fn=_ignore_sigint)
        else:
            if how == "hog":
                hog = subprocess.Popen(["stress-ng", "--cpu", "1", "--timeout", "3600s",
                                        "--quiet"], stdin=subprocess.DEVNULL)
            proc = subprocess.Popen(argv, cwd=clone, stdout=out, stderr=subprocess.STDOUT)
        try:
            code = proc.wait(timeout=5400)
        finally:
            if hog is not None:
                hog.terminate()
                hog.wait(timeout=60)
    wall = time.monotonic() - started
    text = log.read_text()
    total = TOTAL.findall(text)  # scripts/test.sh's line over its three pytest lines
    found = SUMMARY.findall(text)
    summary = total[-1] if total else found[-1] if found else "no pytest summary"
    lines = ", ".join(f"{name} {seconds}" for name, seconds in LINE.findall(text))
    return wall, code, summary, lines or "—"


def main() -> None:
    keep = "--keep" in sys.argv
    work = Path(tempfile.mkdtemp(prefix="vb-suite-"))
    clone = work / "virtbench"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True, timeout=600)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=clone, check=True,
                          capture_output=True, text=True, timeout=60).stdout.strip()
    subprocess.run(["bash", "scripts/install.sh", "--dev"], cwd=clone, check=True,
                   stdout=subprocess.DEVNULL, timeout=3600)
    rows = []
    labels = {"foreground": "foreground, in a terminal session",
              "background": "`setsid ... < /dev/null &`, SIGINT ignored",
              "hog": "foreground, `stress-ng --cpu 1` beside it"}
    for how in ("foreground", "background", "hog"):
        wall, code, summary, lines = _run(clone, how, work / f"{how}.log")
        rows.append(f"| {labels[how]} | {wall / 60:.1f} min | {code} | {summary} | {lines} |")
        print(rows[-1], flush=True)
    body = (f"Fresh clone of {head}, installed once before the runs (not timed); each run is the "
            "whole `bash scripts/test.sh` (install check, ruff, mypy, every test; PostgreSQL "
            "started and stopped), one after the other.\n\n"
            "| started | wall time | exit code | pytest's summary | lines (wall, s) |\n"
            "|---|---|---|---|---|\n"
            + "\n".join(rows) + "\n")
    record("suite: the test command's duration", ".venv/bin/python benchmarks/suite_duration.py",
           body)
    if not keep:
        subprocess.run(["rm", "-rf", str(work)], check=False, timeout=600)
    else:
        print(f"logs in {work}")


if __name__ == "__main__":
    main()
