"""Every repository path the docs and the source name exists, so a renamed or deleted file
cannot leave a stale reference behind.

Read: docs/*.md and README.md (every line), and src/ (the comments and string literals of each
Python module — docstrings included — and the whole text of each C source). Checked:

- a path from the repository's root: ``src/...``, ``tests/...``, ``scripts/...``,
  ``benchmarks/...``, ``examples/...``, ``docs/...``; a glob (``tests/e2e/test_explain_*.py``)
  must match something; a placeholder (``tests/unit/<package>/``, ``benchmarks/NAME.py``: a
  part in angle brackets or braces, or a file name in capitals) is not a path;
- a path inside the package, ``PACKAGE/.../NAME.py`` (or ``.c``) where PACKAGE is a package of
  src/virtbench (``store/reading.py``): it must exist under src/virtbench;
- a section of a document, ``docs/cli.md, "Nothing waits forever"`` (the quoted text on the
  same line as the file's name): the text must be part of one of that document's headings or
  of the bold lead of one of its paragraphs (``**Labels (frame kinds).**``);
- a dotted module name: ``virtbench.a.b`` anywhere, and ``a.b`` in backticks
  when ``a`` is a package or module of src/virtbench (``targets.daemon``,
  ``cli.lazy.LazyCommand``). Each part names a subpackage or module in turn; once a part is a
  module, the parts after it are names that module must contain (a class, function, constant,
  a lazily loaded attribute). A name ending in a file suffix (``virtbench.db``) is a file name,
  not a module.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "virtbench"
DOCS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]

# Stale references allowed for a while, each with its reason (none today):
# (the file that names the path, relative to the root; the path it names).
ALLOWED_MISSING: dict[tuple[str, str], str] = {
}

TOP_DIRS = ("src", "tests", "scripts", "benchmarks", "examples", "docs")
PACKAGES = sorted(p.parent.name for p in SRC.glob("*/__init__.py"))
MODULES = set(PACKAGES) | {p.stem for p in SRC.glob("*.py")}
# Dotted names in backticks that are not modules though they begin with a package's name: the
# capacity search's trial note keys (docs/capacity.md).
NOT_MODULES = {"search.load", "search.passed", "search.failures", "search.offered",
               "search.result", "search.loss_ratio", "search.goal", "search.informs"}
FILE_SUFFIXES = {"css", "js", "db", "yaml", "yml", "json", "html", "md", "py", "gz", "xz",
                 "zst", "csv", "txt", "log", "toml", "sh", "c", "svg", "png", "pcap", "pcapng",
                 "sqlite"}

# Not preceded by a character that would make it the tail of a longer path or name.
_START = r"(?<![\w./<>{}-])"
ROOTED = re.compile(_START + "((?:" + "|".join(TOP_DIRS) + r")/[\w./*<>{}+-]*[\w*/>}])")
IN_PACKAGE = re.compile(_START + "((?:" + "|".join(PACKAGES) + r")/[\w./-]*\.(?:py|c))\b")
DOTTED = re.compile(r"(?<![\w.])virtbench((?:\.\w+)+)")
BACKTICKED = re.compile(r"`([^`\n]+)`")
SHORT_DOTTED = re.compile(r"(?<![\w./-])([a-z_]\w*(?:\.\w+)+)")


SECTION = re.compile(r"((?:docs/)?[\w-]+\.md),? \"([^\"\n]+)\"")


def _sections(document: Path) -> list[str]:
    """The headings and bold paragraph leads of a Markdown document, in lower case."""
    text = document.read_text()
    return [h.lstrip("#").strip().lower() for h in text.splitlines() if h.startswith("#")] + [
        lead.lower() for lead in re.findall(r"^\*\*([^*\n]+)\*\*", text, re.M)]


def _missing_sections(line: str) -> list[str]:
    missing = []
    for name, section in SECTION.findall(line):
        document = next((d for d in (ROOT / name, ROOT / "docs" / name) if d.is_file()), None)
        if document is None:
            continue  # a file of another project, or one the path check reports
        if not any(section.lower() in heading for heading in _sections(document)):
            missing.append(f'{name}, "{section}"')
    return missing


def _is_placeholder(path: str) -> bool:
    return any(c in path for c in "<>{}") or any(
        re.fullmatch(r"[A-Z][A-Z_]+", Path(part).stem) for part in path.split("/"))


def _path_exists(path: str, base: Path) -> bool:
    path = path.rstrip("/")
    if "*" in path:
        return next(base.glob(path), None) is not None
    return (base / path).exists()


def _names_in(module: Path) -> str:
    return module.read_text(errors="replace")


def _module_name_resolves(parts: list[str]) -> bool:
    """virtbench.<parts...>: packages, then a module, then names the module contains."""
    node = SRC
    for i, part in enumerate(parts):
        if node.is_dir():
            if (node / part / "__init__.py").exists():
                node = node / part
            elif (node / f"{part}.py").exists():
                node = node / f"{part}.py"
            elif (node / f"{part}.c").exists():  # a compiled extension, built from its source
                return True
            elif i > 0 and re.search(rf"\b{re.escape(part)}\b", _names_in(node / "__init__.py")):
                node = node / "__init__.py"
            else:
                return False
        elif not re.search(rf"\b{re.escape(part)}\b", _names_in(node)):
            return False
    return True


def _dotted_names(line: str) -> list[str]:
    """The module names of a line, as written (with or without ``virtbench.``)."""
    names = [m.group(0) for m in DOTTED.finditer(line)]
    for span in BACKTICKED.findall(line):
        names += [m.group(1) for m in SHORT_DOTTED.finditer(span)
                  if m.group(1).split(".")[0] in MODULES and not span.startswith("virtbench")
                  and m.group(1) not in NOT_MODULES]
    return [n for n in names if n.rsplit(".", 1)[-1] not in FILE_SUFFIXES]


def _missing_in_text(line: str) -> list[str]:
    missing = [p for p in ROOTED.findall(line)
               if not _is_placeholder(p) and not _path_exists(p, ROOT)]
    missing += [p for p in IN_PACKAGE.findall(line) if not _path_exists(p, SRC)]
    missing += _missing_sections(line)
    missing += [name for name in _dotted_names(line)
                if not _module_name_resolves(name.removeprefix("virtbench.").split("."))]
    return missing


_TEXT_TOKENS = {tokenize.COMMENT, tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", -1)}


def _python_text(path: Path) -> list[tuple[int, str]]:
    """(line number, text) of each line of the module's comments and string literals."""
    pieces = []
    for token in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
        if token.type in _TEXT_TOKENS:
            pieces += [(token.start[0] + i, text)
                       for i, text in enumerate(token.string.splitlines())]
    return pieces


def _lines(path: Path) -> list[tuple[int, str]]:
    if path.suffix == ".py":
        return _python_text(path)
    return list(enumerate(path.read_text().splitlines(), start=1))


def _stale_in(path: Path) -> list[tuple[int, str]]:
    """(line, missing name) of one file. A Python module is tokenized (slow) only when one of
    its lines, read whole, names something missing: to tell a comment or string from code."""
    lines = list(enumerate(path.read_text().splitlines(), start=1))
    if path.suffix == ".py" and any(_missing_in_text(line) for _n, line in lines):
        lines = _python_text(path)
    elif path.suffix == ".py":
        return []
    return [(number, missing) for number, line in lines
            for missing in _missing_in_text(line)]


def _stale_references() -> list[str]:
    sources = [*DOCS, *(p for p in sorted(SRC.rglob("*")) if p.suffix in (".py", ".c")
                        and "__pycache__" not in p.parts)]
    found = []
    for path in sources:
        name = str(path.relative_to(ROOT))
        found += [f"{name}:{number}: {missing}" for number, missing in _stale_in(path)
                  if (name, missing) not in ALLOWED_MISSING]
    return found


def test_every_path_and_module_named_in_the_docs_and_the_source_exists() -> None:
    stale = _stale_references()
    assert not stale, "these name a path or module that does not exist:\n" + "\n".join(stale)


def test_the_allowed_stale_references_are_still_there() -> None:
    """An entry of ALLOWED_MISSING goes once its reference is fixed."""
    for (name, missing), _reason in ALLOWED_MISSING.items():
        lines = _lines(ROOT / name) if (ROOT / name).exists() else []
        assert any(missing in line for _n, line in lines), (name, missing)


def test_the_check_sees_each_form() -> None:
    assert _missing_in_text("see src/virtbench/nowhere.py and `tests/unit/none/`") == [
        "src/virtbench/nowhere.py", "tests/unit/none/"]
    assert _missing_in_text("tests/unit/<package>/ and benchmarks/NAME.py") == []
    assert _missing_in_text("tests/e2e/test_nothing_*.py, tests/e2e/test_*.py.") == [
        "tests/e2e/test_nothing_*.py"]
    assert _missing_in_text("store/nowhere.py beside store/__init__.py") == [
        "store/nowhere.py"]
    assert _missing_in_text('docs/cli.md, "Nothing waits forever"; cli.md "No such part"') == [
        'cli.md, "No such part"']
    assert _missing_in_text("tests/unit/store/test_nowhere.py") == [
        "tests/unit/store/test_nowhere.py"]  # not also its tail, store/test_nowhere.py
    line = ("`targets.daemon`, `targets.Nowhere`, virtbench.cli.nowhere, `virtbench.db`, "
            "`cli.lazy.LazyCommand`, `Target.spawn`, `net_qos._capscan`")
    assert _missing_in_text(line) == ["virtbench.cli.nowhere", "targets.Nowhere"]


def test_in_python_only_comments_and_strings_count(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('"""See tests/unit/none_a.py."""\n'
                      "x = 1  # and tests/unit/none_b.py\n"
                      "y = f'{x} tests/unit/none_c.py'\n"
                      "z = tests/unit/none_d.py\n")
    assert _stale_in(module) == [(1, "tests/unit/none_a.py"), (2, "tests/unit/none_b.py"),
                                 (3, "tests/unit/none_c.py")]
