"""How long `bash scripts/install.sh` takes in a fresh clone: one commit against another.

Clones each commit into a fresh directory and times the whole install there (a new .venv,
pip, the C extension's build, the byte-compiling), the commits alternating, ROUNDS times each,
each round in a new clone. pip's cache is warm for both (whatever an earlier install here left:
the downloads are not timed, the building and unpacking are). Also counts the lines of the
install's output that say "experimental" (setuptools' warning about pyproject.toml's
`[tool.setuptools] ext-modules`).

Usage: .venv/bin/python benchmarks/install_time.py [--before 2aad4ee] [--after HEAD] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from record import record

REPO = Path(__file__).resolve().parent.parent


def _short(commit: str) -> str:
    return subprocess.run(["git", "rev-parse", "--short", commit], cwd=REPO, check=True,
                          capture_output=True, text=True).stdout.strip()


def install_once(commit: str, parent: Path) -> tuple[float, float, int]:
    """(wall s, CPU s of the install's processes, lines saying 'experimental')."""
    clone = parent / f"clone-{commit}"
    shutil.rmtree(clone, ignore_errors=True)
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(REPO), str(clone)], check=True)
    subprocess.run(["git", "checkout", "-q", commit], cwd=clone, check=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.run(["bash", "scripts/install.sh"], cwd=clone, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"install of {commit} failed:\n{proc.stdout}\n{proc.stderr}")
    shutil.rmtree(clone)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    output = proc.stdout + proc.stderr
    return wall, cpu, sum("experimental" in line for line in output.splitlines())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", default="2aad4ee")
    parser.add_argument("--after", default="HEAD")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    commits = [_short(args.before), _short(args.after)]
    runs: dict[str, list[tuple[float, float, int]]] = {c: [] for c in commits}
    with tempfile.TemporaryDirectory(prefix="vb-install-time-") as tmp:
        for r in range(args.rounds):
            for commit in commits if r % 2 == 0 else commits[::-1]:
                runs[commit].append(install_once(commit, Path(tmp)))
                print(commit, runs[commit][-1], flush=True)
    fastest = min(statistics.median(w for w, _c, _e in runs[c]) for c in commits)
    rows = []
    for commit in commits:
        walls = [w for w, _c, _e in runs[commit]]
        cpus = [c for _w, c, _e in runs[commit]]
        rows.append(
            f"| {commit} | {statistics.median(walls):.1f} s | {max(walls) / min(walls):.2f}× | "
            f"{statistics.median(walls) / fastest:.2f}× | {statistics.median(cpus):.1f} s | "
            f"{max(e for _w, _c, e in runs[commit])} | "
            f"{', '.join(f'{w:.1f}' for w in walls)} |")
    body = (
        f"`bash scripts/install.sh` (users' install, no --dev) in a fresh `git clone` of each "
        f"commit, {args.rounds} rounds, the commits alternating, a new clone each time; pip's "
        "cache warm for both (downloads not timed; building, unpacking and byte-compiling are). "
        "CPU: user + system time of the install's processes. 'experimental': lines of the "
        "install's output with setuptools' warning.\n\n"
        "| commit | median wall | spread (max/min) | vs fastest | median CPU | "
        "'experimental' lines | walls |\n|---|---|---|---|---|---|---|\n"
        + "\n".join(rows)
        + f"\n\nLoad average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores "
        "(shared machine).\n")
    print(body)
    record("install: fresh clone", "python3 benchmarks/install_time.py "
           f"--before {args.before} --after {args.after} --rounds {args.rounds}", body)


if __name__ == "__main__":
    main()
