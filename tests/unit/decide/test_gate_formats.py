"""`compare BASE NEW --format junit|github|gitlab|markdown` and `export --format openmetrics`
through the real CLI and a real SQLite store: each output parses against a schema or grammar
of what CI reads (our JUnit XSD written from the documented format, GitLab Code Quality
fields, OpenMetrics), says why a row fails, keeps hostile stored names inert, and the exit
code stays the gate's. The JUnit schema is shown to refuse malformed documents."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
import xmlschema
from decide_cli import CliRun
from prometheus_client.openmetrics.parser import text_string_to_metric_families
from synthetic import METRICS, add_run

from virtbench.model import Better, Metric
from virtbench.report.gate.github import escape_data, escape_property
from virtbench.report.openmetrics import label_value, metric_name
from virtbench.store import Store

SCHEMAS = Path(__file__).resolve().parents[2] / "data" / "schemas"
JUNIT = xmlschema.XMLSchema11(str(SCHEMAS / "junit.xsd"))  # XSD 1.1: it asserts the counts
CODE_QUALITY = json.loads((SCHEMAS / "gitlab-codequality.schema.json").read_text())
BASE = [1.0, 1.01, 0.99, 1.0, 1.02]
SLOWER = [1.2, 1.21, 1.19, 1.2, 1.22]  # time_s 20 % worse, rate 17 % worse
SAME = [1.0, 1.0, 1.01, 0.99, 1.0]
# Stored names as an imported export could carry them: XML and Markdown markup, a workflow
# command after a line break, quotes and backslashes for OpenMetrics, a terminal escape.
HOSTILE_WID = "w<b>&amp;]]>|`x`\n::warning::pwned\\\"\x1b[2J"
# as the store keeps it (safetext.stored): one line, its line break and ESC as escapes
STORED_WID = "w<b>&amp;]]>|`x`\\x0a::warning::pwned\\\"\\x1b[2J"
HOSTILE_VARIANT = '<img src=x onerror=alert(1)>|[a](http://x.example) @here "q"\\'
HOSTILE_METRICS = [Metric("lat-p99.9 ms", "ms", Better.LOWER, "p99.9 <b>latency</b>\n# EOF",
                          True),
                   Metric("9rate", "B/s", Better.HIGHER, 'bytes "per" second \\')]


def _runs(tmp_path: Path, base: list[float], new: list[float], **kw: object) -> tuple[str, ...]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    location = str(tmp_path / "decide.db")
    store = Store(location)
    try:
        return (add_run(store, {"v": base}, **kw),  # type: ignore[arg-type]
                add_run(store, {"v": new}, **kw), location)  # type: ignore[arg-type]
    finally:
        store.close()


# ---- JUnit ------------------------------------------------------------------------------

def test_junit_fails_each_regressed_metric_and_validates(tmp_path: Path, cli: CliRun) -> None:
    base, new, store = _runs(tmp_path, BASE, SLOWER)
    code, out, _ = cli("compare", base, new, "-s", store, "--fail-if-worse", "5", "-f", "junit")
    assert code == 1
    JUNIT.validate(out)
    suite = ET.fromstring(out).find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("2", "2", "0")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert set(cases) == {"time_s", "rate"} and {c.get("classname") for c in cases.values()} \
        == {"w"}
    failure = cases["time_s"].find("failure")
    assert failure is not None and failure.get("type") == "regression"
    text = failure.text or ""
    assert re.search(r"NEW/BASE = 1\.19\d\d \[1\.1\d{3}, 1\.2\d{3}\]", text), text
    assert "one-sided p = " in text and "more than 5 % (NEW/BASE above 1.05)" in text
    assert "time_s: s, lower is better: wall time of one operation" in text  # the definition


def test_junit_passes_an_unchanged_run_and_reads_unjudged_rows(tmp_path: Path,
                                                               cli: CliRun) -> None:
    base, new, store = _runs(tmp_path, BASE, SAME)
    code, out, _ = cli("compare", base, new, "-s", store, "--fail-if-worse", "5", "-f", "junit")
    assert code == 0
    JUNIT.validate(out)
    assert ET.fromstring(out).find(".//failure") is None
    base, one, store = _runs(tmp_path / "one", BASE, [1.0])
    code, out, _ = cli("compare", base, one, "-s", store, "--fail-if-worse", "5", "-f", "junit")
    assert code == 1
    JUNIT.validate(out)
    failures = ET.fromstring(out).findall(".//failure")
    assert len(failures) == 2 and {f.get("type") for f in failures} == {"cannot-judge"}
    assert "fewer than 2 values on a side" in (failures[0].get("message") or "")
    code, out, _ = cli("compare", base, one, "-s", store, "--fail-if-worse", "5", "-f", "junit",
                       "--allow-unjudged")
    assert code == 0
    JUNIT.validate(out)
    suite = ET.fromstring(out).find("testsuite")
    assert suite is not None and suite.get("skipped") == "2" and suite.get("failures") == "0"


def test_junit_keeps_hostile_names_as_text(tmp_path: Path, cli: CliRun) -> None:
    base, new, store = _runs(tmp_path, BASE, SLOWER, wid=HOSTILE_WID, metrics=HOSTILE_METRICS)
    output = tmp_path / "junit.xml"
    code, out, err = cli("compare", base, new, "-s", store, "--fail-if-worse", "5", "-f",
                         "junit", "-o", str(output))
    assert code == 1 and out == "" and "wrote" in err
    document = output.read_text(encoding="utf-8")
    JUNIT.validate(document)  # XML 1.0 holds no ESC: it is written as the text '\x1b'
    classnames = {c.get("classname") for c in ET.fromstring(document).iter("testcase")}
    assert classnames == {STORED_WID}


# A small JUnit document as CI systems read it, and ways to break it that a reader (or the
# counts it shows) trips over: each must be refused, for its own reason among those the schema
# gives, or the schema checks nothing.
JUNIT_SAMPLE = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="virtbench" tests="2" failures="1" errors="0">
  <testsuite name="s" tests="2" failures="1" errors="0" skipped="0" hostname="h"
             timestamp="2026-01-31T12:30:00">
    <properties><property name="base_run" value="r1"/></properties>
    <testcase classname="w" name="time_s">
      <failure type="regression" message="m">why</failure>
      <system-out>why</system-out>
    </testcase>
    <testcase classname="w" name="rate" time="0.5"/>
  </testsuite>
</testsuites>"""
FAILURE = '<failure type="regression" message="m">why</failure>'
# what is broken: (text of JUNIT_SAMPLE, what it becomes, part of the schema's reason)
JUNIT_BREAKS = {
    "testcase without name": ('classname="w" name="rate"', 'classname="w"',
                              "missing required attribute 'name'"),
    "testcase without classname": ('classname="w" name="rate"', 'name="rate"',
                                   "missing required attribute 'classname'"),
    "suite without tests": ('name="s" tests="2"', 'name="s"', "missing required attribute"),
    "failures not a number": ('failures="1" errors="0" skipped', 'failures="one" errors="0" '
                              'skipped', "failures='one'"),
    "negative count": ('skipped="0"', 'skipped="-1"', "skipped='-1'"),
    "time not in seconds": ('time="0.5"', 'time="0:00:01"', "time='0:00:01'"),
    "timestamp not ISO 8601": ("2026-01-31T12:30:00", "31/01/2026 12:30", "timestamp="),
    "output before the failure": (FAILURE, "<system-out>x</system-out>" + FAILURE,
                                  "Unexpected child with tag 'failure'"),
    "two outcomes": (FAILURE, FAILURE + "<error/>", "Unexpected child with tag 'error'"),
    "empty name": ('name="rate"', 'name=""', "name=''"),
    "counts not the cases'": ('name="s" tests="2"', 'name="s" tests="3"', "assertion"),
    "property without value": (' value="r1"', "", "missing required attribute 'value'"),
    "unknown element": ("<properties>", "<note/><properties>", "Unexpected child"),
    "unknown attribute": ('hostname="h"', 'hostname="h" status="red"', "'status'"),
}


def test_junit_schema_accepts_the_sample() -> None:
    JUNIT.validate(JUNIT_SAMPLE)


@pytest.mark.parametrize("why", list(JUNIT_BREAKS))
def test_junit_schema_refuses_a_malformed_document(why: str) -> None:
    old, new, reason = JUNIT_BREAKS[why]
    assert JUNIT_SAMPLE.count(old) == 1
    broken = JUNIT_SAMPLE.replace(old, new)
    with pytest.raises(xmlschema.XMLSchemaValidationError):
        JUNIT.validate(broken)
    reasons = [str(error.reason) for error in JUNIT.iter_errors(broken)]
    assert any(reason in r for r in reasons), reasons


# ---- GitHub -----------------------------------------------------------------------------

def test_github_annotations_and_job_summary(tmp_path: Path, cli: CliRun,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    base, new, store = _runs(tmp_path, BASE, SLOWER, wid=HOSTILE_WID)
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, out, _ = cli("compare", base, new, "-s", store, "--fail-if-worse", "5", "-f", "github")
    assert code == 1
    lines = out.splitlines()
    # every line is one of ours: the name's line break and '::warning::' start nothing
    assert len(lines) == 3 and all(re.match(r"::(error|notice) title=[^:]*::", li) for li in lines)
    assert [li.split(" ", 1)[0] for li in lines] == ["::error"] * 3
    assert "\\x0a%3A%3Awarning%3A%3Apwned" in lines[0]  # in the title: ':' escaped
    assert "\x1b" not in out and "\\x1b[2J" in out
    assert "95 %25 CI" in lines[0] and "one-sided p = " in lines[0]
    written = summary.read_text()
    assert written.startswith("earlier step\n### virtbench compare")  # appended
    assert "| **FAIL** |" in written


def test_github_notices_only_when_the_gate_passes(tmp_path: Path, cli: CliRun,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    base, new, store = _runs(tmp_path, BASE, SAME)
    code, out, _ = cli("compare", base, new, "-s", store, "--fail-if-worse", "5", "-f", "github")
    assert code == 0
    assert out.count("::notice ") == 3 and "::error" not in out
    assert "gate passed" in out


def test_github_escapes_as_the_runner_reads_them() -> None:
    # a CR is shown as text (safetext.visible) before GitHub's own escapes
    assert escape_data("50% done\r\nnext") == "50%25 done\\x0d%0Anext"
    assert escape_property("a: b, c%") == "a%3A b%2C c%25"


# ---- GitLab -----------------------------------------------------------------------------

def test_gitlab_code_quality_and_metrics_reports(tmp_path: Path, cli: CliRun,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    base, new, store = _runs(tmp_path, BASE, SLOWER, wid=HOSTILE_WID)
    monkeypatch.chdir(tmp_path)
    metrics = tmp_path / "metrics.txt"
    code, out, _ = cli("compare", base, new, "-s", store, "--fail-if-worse", "5", "-f", "gitlab",
                       "-o", str(metrics))
    assert code == 1
    issues = json.loads(out)
    jsonschema.validate(issues, CODE_QUALITY)
    assert len(issues) == 2 and {i["check_name"] for i in issues} == {"virtbench/regression"}
    assert len({i["fingerprint"] for i in issues}) == 2
    assert all("NEW/BASE = " in i["description"] and "one-sided p" in i["description"]
               for i in issues)
    families = {f.name: f for f in text_string_to_metric_families(metrics.read_text())}
    regression = families["virtbench_compare_regression"].samples
    assert [s.value for s in regression] == [1.0, 1.0]
    assert {s.labels["workload"] for s in regression} == {
        STORED_WID}
    # the same regression in another pair of runs is the same issue (GitLab's MR widget)
    again, newer, store2 = _runs(tmp_path / "b", BASE, SLOWER, wid=HOSTILE_WID)
    _, out2, _ = cli("compare", again, newer, "-s", store2, "--fail-if-worse", "5", "-f",
                     "gitlab")
    assert {i["fingerprint"] for i in json.loads(out2)} == {i["fingerprint"] for i in issues}
    # an exported baseline in the working tree is where the issues are reported (an export
    # holds no control characters: import checks refuse them)
    base, new, store = _runs(tmp_path / "c", BASE, SLOWER)
    export = Path("baseline.json")
    assert cli("export", base, "-s", store, "-o", str(export))[0] == 0
    code, out3, err3 = cli("compare", str(export), new, "-s", store, "--fail-if-worse", "5",
                           "-f", "gitlab")
    assert code == 1, err3
    assert {i["location"]["path"] for i in json.loads(out3)} == {"baseline.json"}


def test_gitlab_passing_gate_is_an_empty_report(tmp_path: Path, cli: CliRun) -> None:
    base, new, store = _runs(tmp_path, BASE, SAME)
    code, out, _ = cli("compare", base, new, "-s", store, "--fail-if-worse", "5", "-f", "gitlab")
    assert code == 0 and json.loads(out) == []
    with pytest.raises(jsonschema.ValidationError):  # the schema does refuse a bad issue
        jsonschema.validate([{"description": "x", "check_name": "c", "fingerprint": "f",
                              "severity": "fatal", "location": {"path": "p"}}], CODE_QUALITY)


# ---- Markdown ---------------------------------------------------------------------------

def test_markdown_table_keeps_hostile_names_inert(tmp_path: Path, cli: CliRun) -> None:
    location = str(tmp_path / "decide.db")
    store = Store(location)
    try:
        base = add_run(store, {"v": BASE, HOSTILE_VARIANT: BASE}, wid=HOSTILE_WID)
        new = add_run(store, {"v": SLOWER, HOSTILE_VARIANT: SAME}, wid=HOSTILE_WID)
    finally:
        store.close()
    code, out, _ = cli("compare", base, new, "-s", location, "--fail-if-worse", "5", "-f",
                       "markdown")
    assert code == 1
    rows = [line for line in out.splitlines() if line.startswith("|")]
    assert len(rows) == 2 + 4  # header, rule, 2 metrics × 2 variants
    assert {line.count("|") for line in rows} == {8}  # no name adds or ends a cell
    for raw in ("<img", "<b>", "`x`", "[a](", "@here", "\x1b"):
        assert raw not in out, raw
    assert "&#60;img src=x onerror=alert(1)&#62;&#124;&#91;a&#93;(http&#58;//x.example)" in out
    assert out.count("**FAIL**") == 2  # v's two metrics; the hostile variant is unchanged
    assert "- w&#60;b&#62;" in out and "wall time of one operation" in out


def test_markdown_of_more_runs_stays_the_side_by_side_report(tmp_path: Path,
                                                             cli: CliRun) -> None:
    location = str(tmp_path / "decide.db")
    store = Store(location)
    try:
        runs = [add_run(store, {"v": values}) for values in (BASE, SAME, SLOWER)]
    finally:
        store.close()
    code, out, err = cli("compare", *runs, "-s", location, "-f", "markdown")
    assert code == 0, err
    assert "| variant | n | mean |" in out
    code, _, err = cli("compare", *runs, "-s", location, "-f", "junit")
    assert code == 2 and "exactly two runs" in err
    code, _, err = cli("compare", *runs[:2], "-s", location, "-f", "junit", "--json")
    assert code == 2


# ---- OpenMetrics ------------------------------------------------------------------------

def test_export_openmetrics_parses_back(tmp_path: Path, cli: CliRun) -> None:
    base, _new, store = _runs(tmp_path, BASE, SAME, wid=HOSTILE_WID, metrics=HOSTILE_METRICS)
    code, out, _ = cli("export", base, "-s", store, "-f", "openmetrics")
    assert code == 0 and out.endswith("# EOF\n")
    families = {f.name: f for f in text_string_to_metric_families(out)}
    assert set(families) == {"virtbench_lat_p99_9_ms", "virtbench_9rate_B_per_s",
                             "virtbench_values"}
    latency = families["virtbench_lat_p99_9_ms"]
    assert latency.unit == "ms" and latency.type == "gauge"
    assert "p99.9 <b>latency</b>\n# EOF" in latency.documentation  # help text round trip
    by_stat = {s.labels["stat"]: s for s in latency.samples}
    assert by_stat["ci_low"].value < by_stat["mean"].value < by_stat["ci_high"].value
    assert by_stat["mean"].value == pytest.approx(sum(BASE) / len(BASE))
    labels = by_stat["mean"].labels
    assert labels["workload"] == STORED_WID
    assert labels["metric"] == "lat-p99.9 ms" and labels["run"] == base
    assert [s.value for s in families["virtbench_values"].samples] == [5.0, 5.0]


def test_export_openmetrics_of_the_synthetic_metrics(tmp_path: Path, cli: CliRun) -> None:
    base, _new, store = _runs(tmp_path, BASE, SAME, metrics=METRICS)
    output = tmp_path / "run.prom"
    assert cli("export", base, "-s", store, "-f", "openmetrics", "-o", str(output))[0] == 0
    names = [f.name for f in text_string_to_metric_families(output.read_text())]
    assert sorted(names) == ["virtbench_rate_B_per_s", "virtbench_time_s", "virtbench_values"]
    code, _, err = cli("export", base, "-s", store)
    assert code == 2 and "--output" in err


def test_openmetrics_escapes() -> None:
    assert metric_name("virtbench", "lat p99.9/ms") == "virtbench_lat_p99_9_ms"
    assert metric_name("9x") == "_9x"
    assert label_value('a\\b"c\nd') == 'a\\\\b\\"c\\nd'
