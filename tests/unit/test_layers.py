"""The layers cannot silently regress.

1. Imports follow the layers declared in pyproject.toml ([tool.importlinter]), checked by
   import-linter on the real import graph: indirect and deferred (in-function) imports count,
   so a cycle hidden by a deferred import fails here.
2. Every subpackage of virtbench is placed in a layer (a new one cannot escape the check).
3. Only ``virtbench.targets`` spawns processes: no subprocess/os.spawn*/os.exec*/os.system/
   os.fork/os.popen/asyncio subprocesses/pty.spawn anywhere else in src/.
4. Only ``virtbench.targets`` signals or waits for a process itself: elsewhere a process is
   driven through the handle ``Target.spawn`` returns (targets.process.Process: signal, stop,
   kill_group, wait, poll).
"""

from __future__ import annotations

import ast
import logging
import tomllib
from pathlib import Path

from importlinter.cli import lint_imports

ROOT = Path(__file__).parents[2]
PYPROJECT = ROOT / "pyproject.toml"
PACKAGE = ROOT / "src" / "virtbench"

# Calls that start a process, by module. (`subprocess.DEVNULL`, `subprocess.Popen[bytes]` in a
# type annotation and `subprocess.TimeoutExpired` start nothing: allowed here; the signal check
# below refuses naming Popen.)
SPAWNING = {
    "subprocess": {"run", "Popen", "call", "check_call", "check_output", "getoutput",
                   "getstatusoutput"},
    "os": {"system", "popen", "fork", "forkpty", "posix_spawn", "posix_spawnp", "execl",
           "execle", "execlp", "execlpe", "execv", "execve", "execvp", "execvpe", "spawnl",
           "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe"},
    "asyncio": {"create_subprocess_exec", "create_subprocess_shell"},
    "pty": {"spawn", "fork"},
    "multiprocessing": {"Process", "Pool"},
}
# Modules outside targets/ allowed to spawn, each with the reason. None today: the load
# generator's own process is started through Target.run/spawn (workloads/web/load.py).
ALLOWED_SPAWNS: dict[str, str] = {}


def test_imports_follow_the_declared_layers() -> None:
    # import-linter configures logging with disable_existing_loggers: every logger made so far
    # (virtbench's) would stay silent for the tests after this one (caplog sees nothing).
    loggers = [logger for logger in logging.Logger.manager.loggerDict.values()
               if isinstance(logger, logging.Logger) and not logger.disabled]
    try:
        # The report (the broken contract, with the offending import chains) goes to stdout.
        assert lint_imports(config_filename=str(PYPROJECT), no_cache=True, no_logo=True) == 0, (
            "an import breaks the layers in pyproject.toml [tool.importlinter]; see the report "
            "above")
    finally:
        for logger in loggers:
            logger.disabled = False


def _layered_packages() -> set[str]:
    config = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]
    names: set[str] = set()
    for contract in config["contracts"]:
        for layer in contract.get("layers", []):
            for name in layer.replace(":", "|").split("|"):
                names.add(name.strip().strip("()"))
    return names


def test_every_subpackage_has_a_layer() -> None:
    modules = {f"virtbench.{p.stem}" for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    modules |= {f"virtbench.{p.parent.name}" for p in PACKAGE.glob("*/__init__.py")}
    missing = sorted(modules - _layered_packages())
    assert not missing, f"not placed in any layer of pyproject.toml: {missing}"


def _modules() -> list[tuple[str, Path]]:
    """(dotted name, file) of every module of the package."""
    return [(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts), path)
            for path in sorted(PACKAGE.rglob("*.py"))]


def _spawn_calls(path: Path) -> list[str]:
    """``module.function(`` calls (and ``from module import function``) that start processes."""
    tree = ast.parse(path.read_text(), str(path))
    aliases = {}  # local name -> module, for `import subprocess as sp`
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                aliases[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module in SPAWNING:
            for alias in node.names:
                if alias.name in SPAWNING[node.module]:
                    found.append(f"{path}:{node.lineno}: from {node.module} import {alias.name}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and isinstance(node.func.value, ast.Name)):
            module = aliases.get(node.func.value.id)
            if module in SPAWNING and node.func.attr in SPAWNING[module]:
                found.append(f"{path}:{node.lineno}: {module}.{node.func.attr}(...)")
    return found


def test_only_targets_spawn_processes() -> None:
    offenders = [found for module, path in _modules()
                 if not module.startswith("virtbench.targets.") and module not in ALLOWED_SPAWNS
                 for found in _spawn_calls(path)]
    assert not offenders, ("only virtbench.targets may start processes (use Target.run / "
                           "Target.spawn / targets.daemon):\n" + "\n".join(offenders))


def test_the_spawn_check_sees_each_form(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import subprocess as sp\nimport os\nfrom pty import spawn\n"
                      "sp.run(['true'])\nos.execvp('true', ['true'])\n"
                      "x: sp.Popen[bytes] | None = None\nsp.DEVNULL\n")
    found = _spawn_calls(sample)
    assert sorted(line.split(": ", 1)[1] for line in found) == [
        "from pty import spawn", "os.execvp(...)", "subprocess.run(...)"]


# Calls that signal a process, by module; and methods of a raw process (``subprocess.Popen``,
# asyncio's Process, multiprocessing's) refused outright, whatever their receiver: the handle
# Target.spawn returns calls these ``signal``, ``stop``, ``kill_group`` and ``wait``.
SIGNALLING = {"os": {"kill", "killpg"}, "signal": {"pthread_kill"}}
RAW_PROCESS_METHODS = {"terminate", "kill", "send_signal", "communicate"}
# ``.wait(`` and ``.poll()`` stay allowed: a simple AST check cannot tell their receivers apart
# (threading.Event.wait, Condition.wait, select.poll(), the handle's own wait and poll), and
# they need none: outside targets no raw process exists to call them on -- the spawn check
# above refuses every way to start one, and this one refuses naming its type
# (``subprocess.Popen`` even in an annotation), so a ``.wait(`` there is the handle's, which
# reaps a process as targets do.
RAW_PROCESS_TYPES = {"subprocess": {"Popen", "CompletedProcess"}}
# Modules outside targets/ allowed to signal, each with the reason.
ALLOWED_SIGNALS = {
    "virtbench.store.liveness": "os.kill(pid, 0) probes whether a run's owner is alive (signal 0 "
                                "sends nothing); store sits beside targets in the layers and "
                                "cannot import it",
}


def _signal_calls(path: Path) -> list[str]:
    """Calls that signal or wait for a raw process, and names of a raw process's type."""
    tree = ast.parse(path.read_text(), str(path))
    aliases = {}  # local name -> module
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                aliases[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            refused = (SIGNALLING.get(node.module, set())
                       | RAW_PROCESS_TYPES.get(node.module, set()))
            found += [f"{path}:{node.lineno}: from {node.module} import {alias.name}"
                      for alias in node.names if alias.name in refused]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            module = aliases.get(node.value.id)
            if module in RAW_PROCESS_TYPES and node.attr in RAW_PROCESS_TYPES[module]:
                found.append(f"{path}:{node.lineno}: {module}.{node.attr}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            func = node.func
            module = aliases.get(func.value.id) if isinstance(func.value, ast.Name) else None
            if module in SIGNALLING and func.attr in SIGNALLING[module]:
                found.append(f"{path}:{node.lineno}: {module}.{func.attr}(...)")
            elif module is None and func.attr in RAW_PROCESS_METHODS:
                found.append(f"{path}:{node.lineno}: .{func.attr}(...)")
    return found


def test_only_targets_signal_or_wait_for_processes() -> None:
    offenders = [found for module, path in _modules()
                 if not module.startswith("virtbench.targets.") and module not in ALLOWED_SIGNALS
                 for found in _signal_calls(path)]
    assert not offenders, ("only virtbench.targets may signal or wait for a process itself (use "
                           "the handle Target.spawn returns: signal, stop, kill_group, wait):\n"
                           + "\n".join(offenders))


def test_the_signal_check_sees_each_form(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import os as o\nimport subprocess\nfrom os import killpg\n"
                      "from subprocess import Popen\n"
                      "o.kill(1, 9)\nproc.terminate()\nself.proc.kill()\n"
                      "p.send_signal(2)\nout, err = p.communicate(timeout=1)\n"
                      "x: subprocess.Popen[bytes] | None = None\n"
                      "event.wait(1)\nproc.wait(1)\nproc.poll()\nproc.stop(10)\n"
                      "proc.kill_group()\nproc.signal(2)\nsubprocess.TimeoutExpired\n")
    found = _signal_calls(sample)
    assert sorted(line.split(": ", 1)[1] for line in found) == sorted([
        "from os import killpg", "from subprocess import Popen", "os.kill(...)",
        ".terminate(...)", ".kill(...)", ".send_signal(...)", ".communicate(...)",
        "subprocess.Popen"])


# Modules allowed to import a project module by a name computed at run time, each with the
# reason; nowhere else may the import graph miss an edge. None today.
ALLOWED_DYNAMIC_IMPORTS: dict[str, str] = {}


def _dynamic_imports(path: Path) -> list[str]:
    """``import_module(...)``/``__import__(...)`` calls whose module may be a project module:
    any name but a string constant naming another package."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name not in ("import_module", "__import__"):
            continue
        first = node.args[0] if node.args else None
        if (isinstance(first, ast.Constant) and isinstance(first.value, str)
                and not first.value.startswith(("virtbench", "."))):
            continue  # a named third-party module (libvirt_qemu): no project edge to hide
        found.append(f"{path}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_project_module_is_imported_by_a_computed_name() -> None:
    offenders = [found for module, path in _modules() if module not in ALLOWED_DYNAMIC_IMPORTS
                 for found in _dynamic_imports(path)]
    assert not offenders, ("import project modules statically (inside a function where start-up "
                           "needs it), so the layer check sees the edge:\n" + "\n".join(offenders))


def test_the_dynamic_import_check_sees_each_form(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import importlib\nfrom importlib import import_module\n"
                      "importlib.import_module('virtbench.labs.web')\nimport_module(name)\n"
                      "__import__(f'virtbench.{x}')\nimportlib.import_module('libvirt_qemu')\n")
    assert [line.split(": ", 1)[1] for line in _dynamic_imports(sample)] == [
        "importlib.import_module('virtbench.labs.web')", "import_module(name)",
        "__import__(f'virtbench.{x}')"]


def test_the_plugin_assembly_sits_between_its_users_and_the_plugin_families() -> None:
    """virtbench.plugins imports every built-in plugin: above the families (labs, workloads,
    report, parsers), below those who look plugins up (spec, runner, fleet, serve, cli)."""
    config = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]
    layers = next(c["layers"] for c in config["contracts"] if c.get("type") == "layers")

    def depth(package: str) -> int:
        return next(i for i, layer in enumerate(layers)
                    if package in {n.strip() for n in layer.replace(":", "|").split("|")})

    here = depth("virtbench.plugins")
    for user in ("virtbench.spec", "virtbench.runner", "virtbench.fleet", "virtbench.serve",
                 "virtbench.cli"):
        assert depth(user) < here, user
    for family in ("virtbench.labs", "virtbench.workloads", "virtbench.report",
                   "virtbench.parsers", "virtbench.registry"):
        assert depth(family) > here, family
