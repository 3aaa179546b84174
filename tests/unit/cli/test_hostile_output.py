"""Hostile stored text through the real CLI and a real SQLite or PostgreSQL store: names,
descriptions, stop reasons, a failing command's stderr, knobs, hosts and facts carrying rich
markup (`[/]`, `[/dev/sdz]`), terminal escapes (OSC title, CR, BEL, C1, bidi overrides),
spreadsheet formulas, and what no database keeps (NUL, a lone surrogate: an undecodable byte).
Every command that shows them must not crash, let a control character reach the terminal,
write a live formula into a CSV, or print anything but strict JSON."""

from __future__ import annotations

import csv
import io
import json
import math
import re
import time
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from served import BASE_URL
from typer.testing import CliRunner

from virtbench import safetext
from virtbench.cli import consoles
from virtbench.cli.root import app
from virtbench.model import Better, Measurement, Metric
from virtbench.store import Store, TrialRecord

NAMES = ["[/]", "[bold]b", "\x1b]0;title\x07t", "c\rd", "evil\u202eexe", "=cmd|' /C calc'!A0",
         '=HYPERLINK("http://x.example","y")', "-2+3", "@SUM(1)", "\x9b31mc1 :smile:"]
WORKLOAD = "wl[/]\x1b[2J"
STOP_REASON = "[/dev/sdz] \x1b]0;pwned\x07 =1+1 stopped\x00\udcff"
METRICS = [Metric("time", "s", Better.LOWER, "time [/] of one \x1b[31mrun\x1b[0m", True),
           Metric("rate", "ops/s", Better.HIGHER, "=cmd|' /C calc'!A0 per second")]
SGR = re.compile(r"\x1b\[[0-9;]*m")  # rich's own colours: the only escapes allowed


def _fill(store: Store, knobs: bool, scale: float, names: list[str] = NAMES,
          workload: str = WORKLOAD, experiment: str = "hostile") -> str:
    run_id = store.create_run(
        experiment=experiment, description="=cmd|' /C calc'!A0 [/] \x1b]0;d\x07",
        spec_yaml="", spec_path="exp[/]\x1b.yaml", seed=1, host="h[/]\x1b]0;h\x07",
        target="local\u202e", baseline=names[0], version="0.1.0")
    store.add_variants(run_id, [(name, {"[/]k\x1b": name, "=x": i} if knobs else {})
                                for i, name in enumerate(names)], names[0])
    store.add_workload(run_id, workload, "exec.command", 0, {"argv": ["[/]", "\x1b[2J"]},
                       METRICS)
    store.add_facts(run_id, "before", {"cpu": {"model": f"CPU [/] \x1b]0;{scale}\x07"},
                                       "kernel": "=1+1"})
    store.add_realisation(run_id, names[1], workload, "mech [/]", {"x": "[/]"},
                          ["cannot [/dev/sdz] \x1b]0;lim\x07"])
    order = 0
    for v, name in enumerate(names):
        for rep in range(3):
            now = time.time()
            t = scale * (1 + v / 10) * (1 + rep / 50)
            store.record_trial(run_id, TrialRecord(
                variant=name, workload_id=workload, repetition=rep, order_index=order,
                warmup=False, status="ok", error="", started_at=now, ended_at=now + t,
                target="local", facts_id=None, notes={"note[/]": "\x1b]0;n\x07[bold]"}),
                [Measurement("time", t), Measurement("rate", 1 / t),
                 Measurement("rate", None, status="too[/]\x1b")], {"time": "s", "rate": "ops/s"})
            order += 1
    now = time.time()
    store.record_trial(run_id, TrialRecord(
        variant=names[2], workload_id=workload, repetition=9, order_index=order, warmup=False,
        status="failed", error="dd: [/dev/sdz]: \x1b[2J\x1b]0;err\x07 =cmd|' /C calc'!A0\x00\udcff",
        started_at=now, ended_at=now, target="local", facts_id=None, notes={}), [], {})
    store.set_run_status(run_id, "failed", STOP_REASON)
    return run_id


def _hostile_runs(location: str) -> tuple[str, str, str]:
    store = Store(location)
    try:
        for run in store.runs():  # a PostgreSQL database other tests used
            store.delete_run(run.id)
        first, second = _fill(store, False, 1e-3), _fill(store, True, 2e-3)
    finally:
        store.close()
    return location, first, second


@pytest.fixture(scope="module")
def hostile_sqlite(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    """The hostile runs in a SQLite store: the HTML and serve tests (the same reads as the
    terminal's, and the dearest tests here) use this one alone."""
    return _hostile_runs(str(tmp_path_factory.mktemp("hostile") / "hostile.db"))


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def hostile_store(request: pytest.FixtureRequest,
                  hostile_sqlite: tuple[str, str, str]) -> tuple[str, str, str]:
    """The hostile runs in SQLite, then in PostgreSQL (which refused NUL where SQLite kept
    it): the terminal, CSV and JSON outputs of each."""
    if request.param == "sqlite":
        return hostile_sqlite
    return _hostile_runs(request.getfixturevalue("postgres_url"))


@pytest.fixture(params=["pipe", "terminal"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The commands' consoles as they make them (safetext.console), wide enough for whole
    names: 'pipe' writes to a pipe or file, 'terminal' believes it writes to a colour terminal,
    as a person sees the output."""
    terminal = request.param == "terminal"
    for name, stderr in (("console", False), ("err", True)):  # every command prints through them
        monkeypatch.setattr(consoles, name, safetext.console(
            stderr=stderr, force_terminal=terminal, color_system="truecolor" if terminal
            else None, width=250))
    yield request.param


def _acting(out: str) -> list[str]:
    """Characters that would act on a terminal (after rich's own colour codes)."""
    return [c for c in SGR.sub("", out)
            if not (c.isprintable() or c in "\n\t" or unicodedata.category(c) == "Zs")]


def _invoke(args: list[str]) -> Any:
    result = CliRunner().invoke(app, args)
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, (
        result.stderr[-3000:])
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit), repr(result.exception)
    assert _acting(result.stdout) == [] and _acting(result.stderr) == [], (
        result.stdout[-2000:], result.stderr[-2000:])
    return result


def _strict(body: str) -> Any:
    def refuse(constant: str) -> None:
        raise AssertionError(f"not strict JSON: {constant}")

    return json.loads(body, parse_constant=refuse)


def _live_formula(cell: str) -> bool:
    stripped = cell.lstrip("\t\r")
    if not stripped[:1] or stripped[0] not in "=+-@":
        return False
    try:
        return not math.isfinite(float(stripped))
    except ValueError:
        return True


def test_runs_lists_a_store_with_hostile_stop_reasons(hostile_store: tuple[str, str, str],
                                                      mode: str) -> None:
    location, first, second = hostile_store
    result = _invoke(["runs", "--store", location])
    assert result.exit_code == 0
    plain = SGR.sub("", result.stdout)
    assert "[/dev/sdz]" in plain and "\\x1b]0;pwned\\x07" in plain
    assert first in plain and second in plain


@pytest.mark.parametrize("extra", [[], ["--details"]])
def test_report_table_shows_hostile_names_literally(hostile_store: tuple[str, str, str],
                                                    mode: str, extra: list[str]) -> None:
    location, first, _second = hostile_store
    result = _invoke(["report", first, "--store", location, *extra])
    assert result.exit_code == 0
    plain = SGR.sub("", result.stdout)
    for shown in ("[/]", "[bold]b", "stopped: [/dev/sdz] \\x1b]0;pwned\\x07", ":smile:",
                  "cannot [/dev/sdz]", "dd: [/dev/sdz]: \\x1b[2J"):
        assert shown in plain, shown


def test_report_of_two_runs_and_knob_columns(hostile_store: tuple[str, str, str],
                                             mode: str) -> None:
    location, first, second = hostile_store
    assert _invoke(["report", second, "--store", location]).exit_code == 0
    result = _invoke(["report", first, second, "--store", location])
    assert result.exit_code == 0
    assert "CPU [/] \\x1b]0;" in SGR.sub("", result.stdout + result.stderr)


def test_compare_and_history_tables(hostile_store: tuple[str, str, str], mode: str) -> None:
    location, first, second = hostile_store
    assert _invoke(["compare", first, second, "--store", location]).exit_code in (0, 1)
    assert _invoke(["compare", first, second, "--store", location,
                    "--fail-if-worse", "5"]).exit_code in (0, 1)
    result = _invoke(["history", second, "--store", location])
    assert result.exit_code == 0
    assert "[/]" in SGR.sub("", result.stdout)


def test_csv_has_no_live_formula_and_numbers_stay_numbers(
        hostile_store: tuple[str, str, str]) -> None:
    location, first, _second = hostile_store
    result = _invoke(["report", first, "--store", location, "-f", "csv"])
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(rows) == 2 * len(NAMES)
    for row in rows:
        for cell in row.values():
            assert not _live_formula(cell), cell
    variants = {row["variant"] for row in rows}
    assert "'=cmd|' /C calc'!A0" in variants and "'-2+3" in variants and "'@SUM(1)" in variants
    assert all(float(row["mean"]) > 0 for row in rows)


@pytest.mark.parametrize("command", [
    ["report", "{first}", "-f", "json"], ["report", "{first}", "{second}", "-f", "json"],
    ["compare", "{first}", "{second}", "--json"], ["history", "{second}", "--json"]])
def test_json_outputs_are_strict(hostile_store: tuple[str, str, str],
                                 command: list[str]) -> None:
    location, first, second = hostile_store
    args = [a.format(first=first, second=second) for a in command]
    result = _invoke([*args, "--store", location])
    document = _strict(result.stdout)
    assert NAMES[0] in json.dumps(document)  # the text itself survives, escaped as JSON


# Names that are Markdown or HTML: a tag, a script, code spans, a link, an image, emphasis,
# strikethrough, a mention, an entity, a cell break after a backslash, a line break.
MARKDOWN_NAMES = ["<img src=x onerror=alert(1)>", "`rm -rf /`", "[a](http://x.example)",
                  "![i](http://x.example/i.png)", "*em* __strong__ ~~s~~", "@here #1 :smile:",
                  "<script>alert(1)</script>", "&lt;b&gt; &amp;", "x\\|y", "a|b\nc"]
MARKDOWN_WORKLOAD = "wl<b>`x`</b>[l](http://x.example)"
# What CommonMark with GitHub's tables and strikethrough makes of markup (markdown-it-py, which
# rich brings): none of it may come from a stored name.
MARKUP = {"html_inline", "html_block", "code_inline", "code_block", "fence", "link_open",
          "image", "em_open", "strong_open", "s_open"}


@pytest.fixture(scope="module")
def markdown_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    location = str(tmp_path_factory.mktemp("markdown") / "markdown.db")
    store = Store(location)
    try:
        return location, _fill(store, False, 1e-3, MARKDOWN_NAMES, MARKDOWN_WORKLOAD,
                               "<b>`exp`</b>")
    finally:
        store.close()


def _markdown_tokens(document: str) -> list[Any]:
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable(["table", "strikethrough"]).parse(document)
    return [*tokens, *(child for t in tokens for child in t.children or [])]


@pytest.mark.parametrize("which", ["markdown", "rich markup"])
def test_markdown_report_shows_names_as_written(which: str,
                                                 markdown_store: tuple[str, str],
                                                 hostile_store: tuple[str, str, str]) -> None:
    if which == "markdown":
        (location, run), names = markdown_store, MARKDOWN_NAMES
    else:
        (location, run, _second), names = hostile_store, NAMES
    out = _invoke(["report", run, "--store", location, "-f", "markdown"]).stdout
    columns = None
    for line in out.splitlines():  # no name adds or ends a cell, or ends a row
        if not line.startswith("|"):
            columns = None
            continue
        columns = columns or line.count("|")
        assert line.count("|") == columns, line
    tokens = _markdown_tokens(out)
    assert {t.type for t in tokens} & MARKUP == set()  # no tag, code span, link, image, ...
    cells = [t.content for t in tokens if t.type == "text"]
    for name in names:  # each name is shown as the store keeps it (control characters and a
        # name's line breaks as escapes: safetext.stored)
        shown = safetext.stored(name, line=True)
        assert shown in cells, (name, [c for c in cells if c[:3] == shown[:3]])
    for raw in ("<img", "<script", "<b>", "`", "](", "@here", "~~", "\\|"):
        assert raw not in out, raw
    if which == "rich markup":
        assert "\\[/\\]" not in out  # not rich's escapes either


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_failing_command_with_markup_in_stderr_ends_as_a_failed_run(
        tmp_path: Path, backend: str, request: pytest.FixtureRequest) -> None:
    """`[/dev/sdz]` in a failing command's stderr crashed the run (exit 3); the crash text
    became the stop reason, and `runs` then crashed for the whole store. A NUL in it stopped a
    run on PostgreSQL ("text fields cannot contain NUL") where SQLite kept the failed trial."""
    def experiment_file(second_variant: str) -> Path:
        experiment = tmp_path / "fail.yaml"
        experiment.write_text(
            "name: hostile-run\n"
            f"variants:\n  - {{name: \"[/]\"}}\n  - {{name: \"{second_variant}\"}}\n"
            "workloads:\n  - {name: exec.command, params: {argv: [sh, -c, 'printf \"dd: "
            "[/dev/sdz]: \\033]0;t\\007 No such device\\000\\377\" >&2; exit 1']}}\n"
            "repetitions: 2\nwarmup: 0\n")
        return experiment

    location = str(tmp_path / "r.db")
    if backend == "postgresql":  # the hostile runs may be there too: `runs` lists them all
        location = request.getfixturevalue("postgres_url")
    result = _invoke(["run", str(experiment_file("[bold]variant")), "--store", location])
    assert result.exit_code == 1, result.stderr
    assert "[/dev/sdz]" in result.stderr and "\\x1b]0;t\\x07" in result.stderr
    assert "No such device\\x00\ufffd" in result.stderr  # NUL shown; not UTF-8: U+FFFD
    assert "\x1b" not in result.stderr  # the ESC of the stderr is shown, never sent
    runs = _invoke(["runs", "--store", location])
    assert runs.exit_code == 0 and "failed" in runs.stdout
    assert "MarkupError" not in runs.stdout
    # ESC in a variant name never reaches the store: the experiment file is refused
    refused = _invoke(["run", str(experiment_file("esc\\e]0;pwned\\avariant")), "--store",
                       str(tmp_path / "refused.db")])
    assert refused.exit_code == 2, refused.stderr
    said = " ".join(refused.stderr.split())
    assert said.startswith("error: ") and "variants[1].name" in said, said
    assert "control characters" in said and "Traceback" not in said, said
    assert not (tmp_path / "refused.db").exists()


DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -5.0])
def test_parse_json_is_strict_for_a_tool_output_with_non_finite_figures(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: float) -> None:
    """`parse --json` printed a bare NaN (not JSON) for such a file. Either the parser refuses
    the figure (exit 2) or the JSON is strict and every missing value's status says why."""
    from virtbench.cli.entry import _run, plain_parse

    document = json.loads((DATA / "iperf3" / "iperf3.12-tcp-loopback.json").read_text())
    document["end"]["sum_received"]["bits_per_second"] = bad
    document["end"]["sum_sent"]["bits_per_second"] = bad
    damaged = tmp_path / "damaged.json"
    damaged.write_text(json.dumps(document))  # Python writes NaN / Infinity as iperf3 could
    call = plain_parse(["parse", "iperf3", str(damaged), "--json"], "")
    assert call is not None
    code = _run(call)
    out, err = capsys.readouterr()
    assert code in (0, 2), err
    if code == 0:
        measurements = _strict(out)["measurements"]
        assert measurements
        assert all(m["status"] != "ok" for m in measurements if m["value"] is None)
        assert all(m["value"] is None or math.isfinite(m["value"]) for m in measurements)


def test_serve_downloads_neutralise_formulas_and_are_strict_json(
        hostile_sqlite: tuple[str, str, str]) -> None:
    """/runs.csv, a run's, a comparison's and the history's downloads (CSV and JSON) over the
    same hostile store: no live formula in any CSV cell, every JSON strict."""
    from starlette.testclient import TestClient

    from virtbench.serve import create_app

    location, first, second = hostile_sqlite
    store = Store(location)
    csv_cells = 0
    try:
        with TestClient(create_app(store), base_url=BASE_URL) as client:
            for path in ("/runs.{fmt}", f"/runs/{first}/download/{{fmt}}",
                         f"/compare.{{fmt}}?run={first}&run={second}",
                         "/history.{fmt}?experiment=hostile"):
                for fmt in ("csv", "json"):
                    response = client.get(path.format(fmt=fmt))
                    assert response.status_code == 200, (path, response.text[:300])
                    body = response.content.decode()
                    assert _acting(body.replace("\r", "")) == [], path
                    if fmt == "json":
                        _strict(body)
                        continue
                    for row in csv.reader(io.StringIO(body)):
                        for cell in row:
                            csv_cells += 1
                            assert not _live_formula(cell), (path, cell)
    finally:
        store.close()
    assert csv_cells > 100


# An HTML report with its charts and serve's pages in one process: about 20 s on 2 busy cores,
# over the default 60 s at a load of 14 (the CI-style run of 2026-12-02 10:20).
@pytest.mark.timeout(240)
def test_html_report_and_pages_show_control_characters_as_escapes(
        hostile_sqlite: tuple[str, str, str], tmp_path: Path) -> None:
    """The HTML report (and serve's pages, same templates) escaped markup but let ESC, BEL and
    U+202E through: a bidi override reverses the name a reader sees."""
    from starlette.testclient import TestClient

    from virtbench.serve import create_app

    location, first, second = hostile_sqlite
    out = tmp_path / "report.html"
    assert _invoke(["report", first, "--store", location, "-f", "html", "-o",
                    str(out)]).exit_code == 0
    html = out.read_text()
    assert _acting(html) == []
    assert "evil\\u202eexe" in html and "\\x1b]0;title\\x07t" in html
    assert _invoke(["history", second, "--store", location, "-f", "html", "-o",
                    str(tmp_path / "history.html")]).exit_code == 0
    assert _acting((tmp_path / "history.html").read_text()) == []
    store = Store(location)
    try:
        with TestClient(create_app(store), base_url=BASE_URL) as client:
            for path in ("/runs", f"/runs/{second}", "/history?experiment=hostile"):
                response = client.get(path)
                assert response.status_code == 200, path
                assert _acting(response.text) == [], path
    finally:
        store.close()
