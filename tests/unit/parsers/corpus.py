"""The real tool outputs under tests/data that a parser must read (see each README.md there)."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "data"

# Files beside the outputs that are not outputs of the parsed tool: notes, the scripts and job
# files that made them, and the human-readable reports used as cross-checks.
_NOT_OUTPUTS = ("README.md", ".sh", ".py", ".fio", ".server.txt")
REFUSED = {"fio3.33-bad-filename-json-normal.txt"}
"""Real outputs a parser must refuse (the tool measured nothing), with the true reason: tested
by test_real_classes.py, not among the outputs that parse."""
_DIRS = {"fio": "fio", "iperf3": "iperf3", "bonnie++": "bonnie", "irtt": "irtt",
         "varnishstat": "varnishstat"}


def corpus(tool: str) -> list[Path]:
    """Every saved output of ``tool`` (parser name) in the corpus."""
    out = []
    for path in sorted((DATA / _DIRS[tool]).iterdir()):
        if path.name.endswith(_NOT_OUTPUTS) or path.name in REFUSED:
            continue
        if tool == "irtt" and path.suffix == ".txt":
            continue  # irtt's own text summary of a run, a cross-check
        out.append(path)
    return out


def all_corpus() -> list[tuple[str, Path]]:
    return [(tool, path) for tool in _DIRS for path in corpus(tool)]
