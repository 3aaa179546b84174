"""The size of the source tree, for docs/architecture.md's "Before and after the simplification":
lines of src, number of modules, and the longest function of the runner.

- lines of src: every line (blank lines and comments included, as `wc -l` counts them) of the
  Python modules and C sources under src/virtbench;
- modules: the Python files under src/virtbench (a package's `__init__.py` counts as one, as
  the import system sees it), and the C sources beside them;
- the longest function in runner: of every function and method (nested ones too) in
  src/virtbench/runner, the one with the most lines from its `def` to its last line;
- with `--hops` (a checkout only: it runs the checkout's code), the hops from `run FILE` to the
  first stored sample: `virtbench run FILE --store DB` of a small CPU experiment (cpu.crc32c,
  1 MiB, no warm-up, two repetitions, one variant) runs in a fresh process of the checkout's
  interpreter, with a trace on every SQLite connection; at the first `INSERT INTO samples`
  the Python stack is taken, and its frames in src/virtbench are listed from the console
  script's `main` down to the one that executes the statement. Hops = those frames less one
  (the calls from one virtbench function to the next; frames of typer, click, contextlib and
  SQLAlchemy between them are not counted).

A tree is a directory (a checkout, the default: this one) or a commit of this repository
(`--rev`, read with `git archive`, nothing checked out). It prints a Markdown table; it measures
no time, so it writes nothing into BENCHMARKS.md.

Run: .venv/bin/python benchmarks/tree_figures.py [TREE] [--rev COMMIT] [--hops]
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

REPO = Path(__file__).resolve().parent.parent
PACKAGE = PurePosixPath("src/virtbench")


@dataclass(frozen=True)
class Figures:
    python_lines: int
    c_lines: int
    python_modules: int
    c_sources: int
    longest_runner_function: str  # path:qualified name
    longest_runner_function_lines: int


def _from_directory(tree: Path) -> dict[PurePosixPath, str]:
    root = tree / PACKAGE
    return {PACKAGE / p.relative_to(root).as_posix(): p.read_text(errors="replace")
            for p in sorted(root.rglob("*")) if p.suffix in (".py", ".c")
            and "__pycache__" not in p.parts and p.is_file()}


def _from_commit(rev: str) -> dict[PurePosixPath, str]:
    archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", rev,
                              str(PACKAGE)], check=True, capture_output=True, timeout=120).stdout
    files = {}
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in tar.getmembers():
            path = PurePosixPath(member.name)
            extracted = tar.extractfile(member) if member.isfile() else None
            if extracted is not None and path.suffix in (".py", ".c"):
                files[path] = extracted.read().decode(errors="replace")
    return files


def _functions(tree: ast.AST, prefix: str = "") -> list[tuple[str, int]]:
    """(qualified name, lines) of every function and method, nested ones included."""
    found = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = f"{prefix}{node.name}"
            if not isinstance(node, ast.ClassDef):
                found.append((name, (node.end_lineno or node.lineno) - node.lineno + 1))
            found += _functions(node, f"{name}.")
        else:
            found += _functions(node, prefix)
    return found


def measure(files: dict[PurePosixPath, str]) -> Figures:
    python = {p: text for p, text in files.items() if p.suffix == ".py"}
    c_sources = {p: text for p, text in files.items() if p.suffix == ".c"}
    runner = [(f"{path.relative_to(PACKAGE)}:{name}", lines)
              for path, text in sorted(python.items())
              if path.parts[:3] == ("src", "virtbench", "runner")
              for name, lines in _functions(ast.parse(text, str(path)))]
    name, lines = max(runner, key=lambda item: item[1])
    return Figures(
        python_lines=sum(len(text.splitlines()) for text in python.values()),
        c_lines=sum(len(text.splitlines()) for text in c_sources.values()),
        python_modules=len(python), c_sources=len(c_sources),
        longest_runner_function=name, longest_runner_function_lines=lines)


# Runs in the checkout's interpreter: the console script's main, with a trace on each SQLite
# connection; prints the src/virtbench frames of the stack at the first sample's INSERT.
HOPS_PROBE = """
import json, sqlite3, sys, traceback
from pathlib import Path

src = str(Path(sys.argv[1]).resolve())
found = []
connect = sqlite3.connect

def traced(*args, **kwargs):
    conn = connect(*args, **kwargs)
    def trace(sql):
        if not found and sql.lstrip().upper().startswith("INSERT INTO SAMPLES"):
            found.extend(f"{Path(f.filename).resolve().relative_to(src)}:{f.lineno}:{f.name}"
                         for f in traceback.extract_stack()
                         if str(Path(f.filename).resolve()).startswith(src + "/"))
    conn.set_trace_callback(trace)
    return conn

sqlite3.connect = sqlite3.dbapi2.connect = traced
from virtbench.cli.entry import main
sys.argv = ["virtbench", "run", sys.argv[2], "--store", sys.argv[3], "--quiet"]
try:
    main()
except SystemExit:
    pass
print(json.dumps(found))
"""
HOPS_EXPERIMENT = ("name: hops\nwarmup: 0\nrepetitions: 2\n"
                   "workloads:\n  - {name: cpu.crc32c, params: {size_mib: 1}}\n")


def hops(tree: Path) -> list[str]:
    """The src/virtbench frames from `main` to the first sample's INSERT (see the docstring)."""
    venv_python = tree / ".venv" / "bin" / "python"
    python = str(venv_python) if venv_python.exists() else sys.executable
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    with tempfile.TemporaryDirectory(prefix="vb-tree-") as work:
        spec = Path(work) / "hops.yaml"
        spec.write_text(HOPS_EXPERIMENT)
        env["VIRTBENCH_LAB_ROOT"] = str(Path(work) / "lab")
        out = subprocess.run([python, "-c", HOPS_PROBE, str(tree / PACKAGE), str(spec),
                              str(Path(work) / "s.db")], capture_output=True, text=True,
                             timeout=600, env=env, cwd=work)
    if out.returncode != 0 or not out.stdout.strip():
        raise SystemExit(f"the probe failed ({out.returncode}):\n{out.stderr}")
    frames: list[str] = json.loads(out.stdout.strip().splitlines()[-1])
    if not frames:
        raise SystemExit(f"no sample was stored:\n{out.stderr}")
    return frames


def table(figures: Figures, label: str, frames: list[str] | None = None) -> str:
    f = figures
    hop_rows = [] if frames is None else [
        f"| hops from `run FILE` to the first stored sample | {len(frames) - 1} |"]
    return "\n".join([
        f"| figure | {label} |", "|---|---:|",
        f"| lines of src (Python + C) | {f.python_lines + f.c_lines:,} "
        f"({f.python_lines:,} + {f.c_lines:,}) |",
        f"| modules (Python files + C sources) | {f.python_modules + f.c_sources} "
        f"({f.python_modules} + {f.c_sources}) |",
        f"| the longest function in runner (lines) | {f.longest_runner_function_lines} "
        f"(`{f.longest_runner_function}`) |",
        *hop_rows,
    ])


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tree", nargs="?", type=Path, default=REPO,
                        help="a checkout's directory (default: this one)")
    parser.add_argument("--rev", help="a commit of this repository, read with git archive")
    parser.add_argument("--hops", action="store_true",
                        help="also run `run FILE` in the checkout and count the hops")
    args = parser.parse_args(argv)
    if args.hops and args.rev:
        parser.error("--hops runs a checkout's code: give its directory, not --rev")
    files = _from_commit(args.rev) if args.rev else _from_directory(args.tree)
    frames = hops(args.tree.resolve()) if args.hops else None
    print(table(measure(files), args.rev or str(args.tree), frames))
    if frames is not None:
        print("\nThe first sample's stack, src/virtbench frames only (file:line:function):")
        print("\n".join(f"{i}. `{frame}`" for i, frame in enumerate(frames, start=1)))


if __name__ == "__main__":
    main(sys.argv[1:])
