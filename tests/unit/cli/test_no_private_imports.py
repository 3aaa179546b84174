"""No module of virtbench imports a private module of typer or click (``typer._click``,
``typer._coercion``, ``click._compat``, ...): those change in any release, which is what kept
typer pinned below 0.30 (docs/decisions.md). Every import is read from the source, the ones
inside functions included."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).parents[3] / "src" / "virtbench"
OWNERS = ("typer", "click")


def _private(module: str) -> bool:
    parts = module.split(".")
    return parts[0] in OWNERS and any(part.startswith("_") for part in parts[1:])


def private_imports(source: str) -> list[str]:
    """The private typer/click modules ``source`` imports, as ``line: module``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        else:
            continue
        found += [f"{node.lineno}: {name}" for name in names if _private(name)]
    return found


@pytest.mark.parametrize("source", [
    "from typer._param_types import coerce_cli_path",
    "import typer._coercion",
    "def f():\n    from typer import _click\n",
    "import click._compat as c",
])
def test_the_check_finds_a_private_import(source: str) -> None:
    assert private_imports(source)


def test_public_imports_pass() -> None:
    assert private_imports("import typer\nfrom typer.core import TyperCommand\n"
                           "from typer.models import DefaultPlaceholder\nimport click\n") == []


def test_no_module_of_src_imports_a_private_typer_or_click_module() -> None:
    modules = sorted(SRC.rglob("*.py"))
    assert len(modules) > 100
    found = {str(m.relative_to(SRC)): hits for m in modules
             if (hits := private_imports(m.read_text(encoding="utf-8")))}
    assert found == {}
