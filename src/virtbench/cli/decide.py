"""`compare` and `history`: options → decide → terminal, JSON, HTML or a CI format (JUnit,
GitHub, GitLab, Markdown: virtbench.report.gate). Exit codes of compare: 0 no regression, 1
regression or a row the gate cannot judge, 2 bad input."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from virtbench import safetext
from virtbench.cli import consoles
from virtbench.cli.option_values import PlainValuesCommand
from virtbench.cli.options import DEFAULT_STORE, JsonOpt, OutputOpt, StoreOpt, number_parser
from virtbench.cli.options import open_reader as store_at
from virtbench.model import VirtbenchError

__all__ = ["SIDES", "SidesCommand", "app", "compare", "history"]

app = typer.Typer()

GATE_FORMATS = ("junit", "github", "gitlab", "markdown")
"""compare BASE NEW --format: the gate's verdicts for a CI system (docs/decide.md, "In CI")"""


SIDES = "\x00--"
"""What a bare ``--`` among compare's arguments becomes: the line between the BASE runs and the
NEW runs (no argument can contain NUL, so no run reference is taken for it)."""


class SidesCommand(PlainValuesCommand):
    """`compare B1 B2 -- N1 N2`: click drops a bare ``--`` (it ends the options, and options
    after the NEW runs would then be read as runs); the first one is kept as :data:`SIDES`."""

    markers = (SIDES,)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if "--" in args:
            at = args.index("--")
            args = [*args[:at], SIDES, *args[at + 1:]]
        return super().parse_args(ctx, args)


def _opener(location: str) -> Any:
    """Open the store only when a run is read from it (comparing two files creates nothing)."""
    opened: list[Any] = []

    def open_store() -> Any:
        if not opened:
            opened.append(store_at(location))
        return opened[0]

    return open_store


def _dumps(document: Any) -> str:
    return safetext.dumps(document, indent=2) + "\n"


def _refuse_strict(diffs: list[Any], what: str) -> None:
    from virtbench.decide.comparability import strict_differences

    strict = strict_differences(diffs)
    if strict:
        raise VirtbenchError(f"--strict: {what} differ in " + "; ".join(
            f"{d.what} ({d.base} → {d.new})" for d in strict))


@app.command(cls=SidesCommand)
def compare(
    runs: Annotated[list[str], typer.Argument(
        help="BASE NEW: two run ids (or prefixes, experiment names) or exported files; "
             "BASE1 BASE2 ... -- NEW1 NEW2 ...: several runs per side, judged on run means; "
             "more than two runs without --: a side-by-side report")],
    store: StoreOpt = DEFAULT_STORE,
    fail_if_worse: Annotated[float | None, typer.Option(
        "--fail-if-worse", metavar="PCT", parser=number_parser(0),
        help="exit 1 when NEW is worse than BASE by more than PCT % on a selected metric "
             "(one-sided test, α = 5 %, Holm across the metrics)")] = None,
    equivalence: Annotated[float, typer.Option(
        "--equivalence", metavar="PCT", parser=number_parser(0, 100, low_open=True),
        help="equivalence margin ±PCT % (TOST)")] = 2.0,
    metric: Annotated[list[str] | None, typer.Option(
        "--metric", "-m", help="compare only this metric (name or workload.metric); repeat")]
    = None,
    as_json: Annotated[bool, typer.Option("--json", help="verdicts as JSON")] = False,
    strict: Annotated[bool, typer.Option(
        "--strict", help="refuse (exit 2) runs whose workload parameters or CPU model differ")]
    = False,
    allow_unjudged: Annotated[bool, typer.Option(
        "--allow-unjudged", help="with --fail-if-worse: pass rows the gate cannot judge (n < 2 "
                                 "on a side, no ratio); without it they fail the gate")] = False,
    probability: Annotated[float | None, typer.Option(
        "--probability", metavar="PCT", parser=number_parser(0),
        help="add each row's posterior probability that NEW is at least PCT % worse "
             "(a prior of no change; --prior-ratio; docs/statistics.md)")] = None,
    prior_ratio: Annotated[float, typer.Option(
        "--prior-ratio", metavar="R", parser=number_parser(1, low_open=True),
        help="--probability's prior: 95 % of it on ratios within [1/R, R]")] = 2.0,
    format: Annotated[str, typer.Option(
        "--format", "-f", help="BASE NEW: junit | github | gitlab | markdown (the gate's "
                               "verdicts for CI); more than two runs, or table | json | csv | "
                               "html: the side-by-side report")]
    = "table",
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="junit, markdown: write it here instead of stdout; github: the "
                               "job summary here too; gitlab: the metrics report (OpenMetrics) "
                               "here; report formats: the report")] = None,
    baseline: Annotated[str | None, typer.Option(
        help="side-by-side report: 'run-label/variant' to compare against")] = None,
    no_profile: Annotated[bool, typer.Option(
        "--no-profile", help="ignore a stored noise profile (`virtbench calibrate`): take the "
                             "runs as independent draws")] = False,
    explain: Annotated[bool, typer.Option(
        "--explain", help="BASE NEW: also, per workload, the functions whose share of the "
                          "profile samples changed most (self and total, 95 % CIs) and the "
                          "perf counters that changed (profiled runs; docs/explain.md)")]
    = False,
    explain_dir: Annotated[Path | None, typer.Option(
        "--explain-dir", metavar="DIR", help="with --explain (implied): write each "
        "explanation's flame graphs here as SVG files: BASE's, NEW's and the differential "
        "one")] = None,
    explain_scope: Annotated[str | None, typer.Option(
        "--explain-scope", metavar="workload|system", help="with --explain (implied): shares "
        "of the workload's samples (default, when the profiles say which they are) or of every "
        "sample recorded (all processes, idle included)")] = None,
) -> None:
    """Compare BASE and NEW: better / worse / equivalent / inconclusive per workload · metric,
    with a regression gate for CI pipelines (exit 1). Several runs: a side-by-side report, or
    with BASE... -- NEW... a verdict on run means."""
    sides = _sides(runs)
    if sides is not None and min(map(len, sides)) == max(map(len, sides)) == 1:
        runs, sides = [sides[0][0], sides[1][0]], None  # `compare BASE -- NEW`: one per side
    if len(runs) < 2:
        raise VirtbenchError("compare needs two runs (BASE NEW), or more for a report")
    ask = _CompareAsk(
        runs=runs, sides=sides, store=store, format=format, output=output, baseline=baseline,
        as_json=as_json, metric=metric, fail_if_worse=fail_if_worse, equivalence=equivalence,
        strict=strict, allow_unjudged=allow_unjudged, probability=probability,
        prior_ratio=prior_ratio, no_profile=no_profile,
        explain=explain or explain_dir is not None or explain_scope is not None,
        explain_dir=explain_dir, explain_scope=explain_scope)
    ask.refuse_conflicts()
    if ask.side_by_side:
        _report(ask)
        return
    open_store = _opener(store)
    explained: tuple[list[Any], str] | None = None
    if ask.sides is not None:
        result = _compare_sides(ask, open_store, ask.sides)
    else:
        result, explained = _compare_two(ask, open_store)
    _print_verdicts(ask, result, explained)
    if result.regressions or (result.unjudged and not allow_unjudged):
        raise typer.Exit(1)


@dataclass(frozen=True)
class _CompareAsk:
    """What one `compare` invocation asks for: its runs and options."""

    runs: list[str]
    sides: tuple[list[str], list[str]] | None
    store: str
    format: str
    output: Path | None
    baseline: str | None
    as_json: bool
    metric: list[str] | None
    fail_if_worse: float | None
    equivalence: float
    strict: bool
    allow_unjudged: bool
    probability: float | None
    prior_ratio: float
    no_profile: bool
    explain: bool
    explain_dir: Path | None
    explain_scope: str | None

    @property
    def gate_format(self) -> bool:
        """The verdicts in a CI format (markdown of more runs, or with --baseline, stays the
        side-by-side report)."""
        return (self.format in GATE_FORMATS and (len(self.runs) == 2 or self.sides is not None)
                and self.baseline is None)

    @property
    def plain_table(self) -> bool:
        """The terminal table: no --format, --output or --baseline."""
        return self.format == "table" and self.output is None and self.baseline is None

    @property
    def side_by_side(self) -> bool:
        """A report of the runs side by side, not verdicts."""
        return (self.sides is None and not self.gate_format
                and (len(self.runs) > 2 or not self.plain_table))

    def refuse_conflicts(self) -> None:
        """Refuse (VirtbenchError) options that do not go together."""
        if self.sides is not None and not self.gate_format and not self.plain_table:
            raise VirtbenchError("BASE... -- NEW... gives verdicts: --format table (default), "
                                 "--json or a CI format (junit, github, gitlab, markdown), "
                                 "without --baseline")
        if (self.format in GATE_FORMATS and self.format != "markdown"
                and not self.gate_format) or (self.gate_format and self.as_json):
            raise VirtbenchError(f"--format {self.format} gives the verdicts of exactly two "
                                 "runs (BASE NEW) or of BASE... -- NEW..., without --baseline "
                                 "or --json")
        self._refuse_explain_conflicts()
        if self.side_by_side and (self.fail_if_worse is not None or self.as_json or self.metric
                                  or self.allow_unjudged or self.probability is not None):
            raise VirtbenchError("--fail-if-worse, --allow-unjudged, --json, --metric and "
                                 "--probability compare exactly two runs (BASE NEW) and print "
                                 "verdicts, not a report")

    def _refuse_explain_conflicts(self) -> None:
        if self.explain_scope is not None and self.explain_scope not in ("workload", "system"):
            raise VirtbenchError(f"--explain-scope must be workload or system, got "
                                 f"{self.explain_scope!r}")
        if self.explain and (self.sides is not None or len(self.runs) != 2 or self.gate_format
                             or not self.plain_table):
            raise VirtbenchError("--explain compares exactly two runs (BASE NEW) in the "
                                 "terminal table or --json, without --format, --output or "
                                 "--baseline")


def _report(ask: _CompareAsk) -> None:
    """The side-by-side report of the runs (--strict: of runs that differ in nothing it
    refuses)."""
    from virtbench.cli.reporting import differences_from_first, report_runs

    if ask.strict:
        first, by_run = differences_from_first(store_at(ask.store), ask.runs)
        for run_id, diffs in by_run.items():
            _refuse_strict(diffs, f"runs {first} and {run_id}")
    report_runs(ask.runs, ask.store, ask.format, ask.output, ask.baseline, False, None)


def _compare_sides(ask: _CompareAsk, open_store: Any,
                   sides: tuple[list[str], list[str]]) -> Any:
    """BASE... -- NEW...: verdicts on run means."""
    from virtbench.decide.compare import compare_run_sets
    from virtbench.decide.runs import load_run

    bases = [load_run(ref, open_store) for ref in sides[0]]
    news = [load_run(ref, open_store) for ref in sides[1]]
    result = compare_run_sets(bases, news, equivalence_pct=ask.equivalence,
                              fail_pct=ask.fail_if_worse, metrics=ask.metric,
                              probability_pct=ask.probability, prior_ratio=ask.prior_ratio)
    if ask.strict:
        from virtbench.decide.comparability import differences_many

        for run_id, diffs in differences_many([*bases, *news]).items():
            _refuse_strict(diffs, f"runs {bases[0].id} and {run_id}")
    return result


def _compare_two(ask: _CompareAsk, open_store: Any) -> tuple[Any, tuple[list[Any], str] | None]:
    """BASE NEW: the verdicts (with NEW's noise profile unless --no-profile) and, with
    --explain, the explanations and why there are none."""
    from virtbench.decide.compare import compare_runs
    from virtbench.decide.runs import load_run

    base, new = (load_run(ref, open_store) for ref in ask.runs)
    profile = None if ask.no_profile else _profile(open_store, new)
    result = compare_runs(base, new, equivalence_pct=ask.equivalence,
                          fail_pct=ask.fail_if_worse, metrics=ask.metric, profile=profile,
                          no_profile_reason="--no-profile" if ask.no_profile else "",
                          probability_pct=ask.probability, prior_ratio=ask.prior_ratio)
    if ask.strict:
        _refuse_strict(result.differences, "BASE and NEW")
    if not ask.explain:
        return result, None
    explained = _explain(open_store, base, new, profile, ask.equivalence,
                         ask.explain_scope or "workload")
    if ask.explain_dir is not None:
        _write_flame_graphs(ask.explain_dir, explained[0])
    return result, explained


def _print_verdicts(ask: _CompareAsk, result: Any,
                    explained: tuple[list[Any], str] | None) -> None:
    """The verdicts as JSON, in a CI format or as the terminal table (with explanations)."""
    if ask.as_json:
        document = result.as_dict()
        if explained is not None:
            document["explain"] = {"explanations": [e.as_dict() for e in explained[0]],
                                   "note": explained[1] or None}
        sys.stdout.write(_dumps(document))
    elif ask.gate_format:
        _write_gate(result, ask.format, ask.output, ask.allow_unjudged, ask.runs[0])
    else:
        from virtbench.report.decide_text import render_comparison

        render_comparison(result, consoles.console, allow_unjudged=ask.allow_unjudged)
        if explained is not None:
            from virtbench.report.explain_text import render_explanations

            render_explanations(explained[0], consoles.console)
    if explained is not None and explained[1]:
        consoles.err.print(safetext.text(f"--explain: {explained[1]}"), highlight=False)


def _explain(open_store: Any, base: Any, new: Any, profile: Any, equivalence: float,
             scope: str) -> tuple[list[Any], str]:
    """The explanations of BASE → NEW and '' (or why there are none); the counters are the
    `profile.` metrics, compared as the verdict rows are (same variance model)."""
    from virtbench.decide.compare import compare_runs
    from virtbench.decide.explain import explain_runs

    counters = compare_runs(base, new, equivalence_pct=equivalence, profile=profile,
                            diagnostics=True)
    return explain_runs(open_store, base, new, counters=counters, scope=scope)


def _write_flame_graphs(directory: Path, items: list[Any]) -> None:
    """Three SVG files per explanation, named by its number (stored text never makes a path):
    explain-N-base.svg, explain-N-new.svg and explain-N-diff.svg."""
    from virtbench.report.flamegraph import flame_svg

    directory.mkdir(parents=True, exist_ok=True)
    for number, item in enumerate(items, 1):
        what = f"{item.workload_id}: {item.base} → {item.new}"
        graphs = {
            "base": flame_svg(item.base_stacks, title=f"{item.workload_id} · BASE {item.base}",
                              subtitle=f"{item.base_trials} profiled trials"),
            "new": flame_svg(item.new_stacks, title=f"{item.workload_id} · NEW {item.new}",
                             subtitle=f"{item.new_trials} profiled trials"),
            "diff": flame_svg(item.new_stacks, base=item.base_stacks, title=what,
                              subtitle=f"{item.base_trials} → {item.new_trials} profiled "
                                       "trials")}
        for kind, svg in graphs.items():
            (directory / f"explain-{number}-{kind}.svg").write_text(svg, encoding="utf-8")
        consoles.err.print(safetext.text(f"wrote {directory}/explain-{number}-"
                                         f"{{base,new,diff}}.svg: {what}"),
                           highlight=False, soft_wrap=True)  # paths stay whole


def _sides(runs: list[str]) -> tuple[list[str], list[str]] | None:
    """BASE... -- NEW...: the runs on either side of the separator; None without one."""
    if SIDES not in runs:
        return None
    at = runs.index(SIDES)
    bases, news = runs[:at], runs[at + 1:]
    if not bases or not news:
        raise VirtbenchError("compare BASE... -- NEW...: give at least one run on each side "
                             "of --")
    if min(len(bases), len(news)) == 1 < max(len(bases), len(news)):
        raise VirtbenchError(
            f"compare BASE... -- NEW...: {len(bases)} BASE and {len(news)} NEW runs; judging "
            "run means needs at least 2 runs on each side (with one run per side, `compare "
            "BASE NEW` uses the host's noise profile)")
    return bases, news


def _profile(open_store: Any, new: Any) -> Any:
    """The stored noise profile of NEW's host fingerprint and experiment file, or None (also
    when there is no store: two exported files compare without one)."""
    from virtbench.decide.calibration import find_profile

    try:
        store = open_store()
    except VirtbenchError:
        return None
    return find_profile(store, new)


def _write(path: Path, text: str, *, append: bool = False) -> None:
    with path.open("a" if append else "w", encoding="utf-8") as f:
        f.write(text)
    consoles.err.print(f"wrote {safetext.markup(path)}", highlight=False)


def _code_quality_path(base_ref: str) -> str:
    """Where Code Quality issues are reported: the baseline export when BASE is a relative file
    inside the working directory (accepting a change means updating it), else 'virtbench'."""
    path = Path(base_ref)
    if path.is_file() and not path.is_absolute() and ".." not in path.parts:
        return path.as_posix()
    return "virtbench"


def _write_gate(result: Any, fmt: str, output: Path | None, allow_unjudged: bool,
                base_ref: str) -> None:
    """The verdicts in a CI format: stdout, --output, and GitHub's job summary file."""
    if fmt == "github":
        import os

        from virtbench.report.gate.github import render_commands, render_summary

        sys.stdout.write(render_commands(result, allow_unjudged=allow_unjudged))
        summary = render_summary(result, allow_unjudged=allow_unjudged)
        if os.environ.get("GITHUB_STEP_SUMMARY"):
            _write(Path(os.environ["GITHUB_STEP_SUMMARY"]), summary, append=True)
        if output is not None:
            _write(output, summary)
        return
    if fmt == "gitlab":
        from virtbench.report.gate.gitlab import render_code_quality, render_metrics

        sys.stdout.write(render_code_quality(result, _code_quality_path(base_ref),
                                             allow_unjudged=allow_unjudged))
        if output is not None:
            _write(output, render_metrics(result))
        return
    if fmt == "junit":
        from virtbench.report.gate.junit import render_junit

        rendered = render_junit(result, allow_unjudged=allow_unjudged)
    else:
        from virtbench.report.gate.markdown import render_markdown

        rendered = render_markdown(result, allow_unjudged=allow_unjudged)
    if output is None:
        sys.stdout.write(rendered)
    else:
        _write(output, rendered)


@app.command()
def history(
    experiment: Annotated[str | None, typer.Argument(
        help="experiment name or a run of it (default: the latest run's experiment)")] = None,
    store: StoreOpt = DEFAULT_STORE,
    host: Annotated[str | None, typer.Option(help="runs on this host (name)")] = None,
    metric: Annotated[list[str] | None, typer.Option(
        "--metric", "-m", help="only this metric (name or workload.metric); repeat")] = None,
    as_json: JsonOpt = False,
    format: Annotated[str, typer.Option("--format", "-f", help="table | html")] = "table",
    output: OutputOpt = None,
    any_spec: Annotated[bool, typer.Option(
        "--any-spec", help="also runs of other versions of the experiment file")] = False,
    any_host: Annotated[bool, typer.Option(
        "--any-host", help="also runs on other hosts or CPUs")] = False,
    include_calibration: Annotated[bool, typer.Option(
        "--include-calibration", help="also the A/A runs of `virtbench calibrate`")] = False,
) -> None:
    """Every stored run of one experiment on one host over time, per metric: run means with
    CIs, a sparkline and change points with their step size."""
    from virtbench.decide.history import build_history

    if format not in ("table", "html"):
        raise VirtbenchError("--format must be table or html")
    result = build_history(_opener(store)(), experiment, host, metrics=metric,
                           any_spec=any_spec, any_host=any_host,
                           include_calibration=include_calibration)
    if as_json:
        rendered = _dumps(result.as_dict())
    elif format == "html":
        from virtbench.report.history_html import render_history_html

        rendered = render_history_html(result)
        output = output or Path("history.html")
    else:
        from virtbench.report.decide_text import render_history

        if output is None:
            render_history(result, consoles.console)
            return
        file_console = safetext.console(record=True, width=100,
                                        file=open("/dev/null", "w"))  # noqa: SIM115
        render_history(result, file_console)
        rendered = file_console.export_text()
    if output is None:
        sys.stdout.write(rendered)
    else:
        output.write_text(rendered)
        consoles.err.print(f"wrote {safetext.markup(output)}")
