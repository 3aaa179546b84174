"""What a fresh `virtbench` process imports. A command pays at start-up for every module it
imports, so the tests here run the console script's entry point (virtbench.cli.entry) in a new
interpreter and look at ``sys.modules`` when it exits."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from typing import NamedTuple

import pytest

PROBE = """
import json, sys
sys.argv = ["virtbench", *json.loads(sys.argv[1])]
from virtbench.cli.entry import main
try:
    main()
finally:
    print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


class Started(NamedTuple):
    returncode: int
    stdout: str
    stderr: str
    modules: frozenset[str]

    def loaded(self, *names: str) -> list[str]:
        """Which of ``names`` (modules or packages: a package counts when any of its modules
        was imported) the process imported."""
        return [name for name in names
                if any(m == name or m.startswith(f"{name}.") for m in self.modules)]


def start(*args: str) -> Started:
    """`virtbench ARGS` in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args)], capture_output=True,
                         text=True, timeout=120)
    *before, last = out.stderr.rstrip("\n").split("\n")
    return Started(out.returncode, out.stdout, "\n".join(before), frozenset(json.loads(last)))


@pytest.fixture
def started() -> Callable[..., Started]:
    return start
