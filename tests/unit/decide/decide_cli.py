"""What the decide tests' `cli` fixture (conftest.py) gives: a module of its own name, since
`from conftest import` finds whichever conftest pytest loaded last."""

from collections.abc import Callable

CliRun = Callable[..., tuple[int, str, str]]
"""`virtbench ARGS` run in-process: (exit code, stdout, stderr)."""
