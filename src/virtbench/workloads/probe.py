"""Run a standalone probe script on a target: `python3 - ARGS` with the script on stdin.

Probes import nothing from virtbench, so remote targets and guests need only the probe's own
Python packages. A fresh process per trial also gives the masks read at import a clean start.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from importlib.resources import files
from typing import Any

from virtbench.model import VirtbenchError
from virtbench.targets.target_contract import CommandFailed, Target

__all__ = ["probe_source", "probe_window", "run_probe"]


def probe_source(package: str, script: str) -> str:
    return files(package).joinpath(script).read_text()


def probe_window(result: Mapping[str, Any]) -> tuple[float, float] | None:
    """The probe's timed section, ``"window": [start, end]`` (CLOCK_MONOTONIC seconds), or None
    when it reported none or something else (a window is a profile's filter, never a value)."""
    window = result.get("window")
    if (isinstance(window, list) and len(window) == 2
            and all(isinstance(t, int | float) and not isinstance(t, bool) for t in window)
            and 0 <= window[0] <= window[1] < float("inf")):
        return float(window[0]), float(window[1])
    return None


def run_probe(
    target: Target,
    package: str,
    script: str,
    args: Sequence[str],
    env: Mapping[str, str | None],
    timeout: float = 600,
) -> tuple[dict[str, Any], str]:
    """Return the probe's JSON result and its raw stdout (kept as an artifact)."""
    source = probe_source(package, script)
    # `python3 -c SOURCE` keeps stdin free for data; argv[0] is "-c".
    try:
        result = target.run([*target.python(), "-c", source, *args], env=env, timeout=timeout)
    except CommandFailed as exc:
        if "ModuleNotFoundError" in exc.result.stderr:
            missing = exc.result.stderr.strip().splitlines()[-1]
            raise VirtbenchError(f"{script} on {target.describe()}: {missing}; install it in the "
                                 "target's Python (pip install crc32c cryptography)") from exc
        raise
    try:
        return json.loads(result.stdout.strip().splitlines()[-1]), result.stdout
    except (json.JSONDecodeError, IndexError) as exc:
        raise VirtbenchError(f"{script} printed no result: {result.stdout[-200:]!r}") from exc
