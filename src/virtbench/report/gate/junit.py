"""The gate as JUnit XML (the Ant/Jenkins schema CI systems read): one <testcase> per
workload · metric (classname = workload, name = metric, '(variant)' added when the runs have
several), a <failure> for a regression or a row the gate cannot judge, <skipped> for an
unjudged row that --allow-unjudged passes. Written with xml.etree (which escapes markup);
stored text goes through safetext.visible first, since XML 1.0 cannot hold control
characters at all."""

from __future__ import annotations

import datetime as dt
import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING

from virtbench import safetext
from virtbench.report.gate import comparison_rows as gate_rows
from virtbench.stats.verdict import ALPHA

if TYPE_CHECKING:
    from virtbench.decide.compare import Comparison

__all__ = ["render_junit"]

_FAILURE_TYPE = {"regression": "regression", "unjudged": "cannot-judge"}


def _text(value: object) -> str:
    return safetext.visible(value)


def _properties(comparison: Comparison, allow_unjudged: bool) -> ET.Element:
    element = ET.Element("properties")
    pct = comparison.fail_pct
    for name, value in (("base_run", ",".join(gate_rows.run_ids(comparison, "base"))),
                        ("new_run", ",".join(gate_rows.run_ids(comparison, "new"))),
                        ("variance_model", comparison.variance.text),
                        ("base_experiment", comparison.base.experiment),
                        ("new_experiment", comparison.new.experiment),
                        ("fail_if_worse_pct", "" if pct is None else f"{pct:g}"),
                        ("equivalence_pct", f"{comparison.equivalence_pct:g}"),
                        ("alpha", f"{ALPHA:g}"), ("allow_unjudged", str(allow_unjudged).lower()),
                        # metrics without a direction: left out, named so a reader sees why
                        ("not_judged", ",".join(comparison.not_judged))):
        ET.SubElement(element, "property", name=name, value=_text(value))
    return element


def render_junit(comparison: Comparison, *, allow_unjudged: bool = False) -> str:
    several = gate_rows.several_variants(comparison)
    suite = ET.Element("testsuite", name="virtbench compare")
    suite.append(_properties(comparison, allow_unjudged))
    failures = skipped = 0
    for row in comparison.rows:
        name = row.metric.name + (f" ({row.variant})" if several else "")
        case = ET.SubElement(suite, "testcase", classname=_text(row.workload_id),
                             name=_text(name))
        outcome = gate_rows.outcome(comparison, row, allow_unjudged)
        explanation = _text(gate_rows.explanation(comparison, row))
        if outcome in _FAILURE_TYPE:
            failures += 1
            message = ("NEW worse than BASE beyond the threshold" if outcome == "regression"
                       else f"cannot judge: {row.unjudged}")
            failure = ET.SubElement(case, "failure", type=_FAILURE_TYPE[outcome],
                                    message=_text(message))
            failure.text = explanation
        elif outcome == "allowed":
            skipped += 1
            ET.SubElement(case, "skipped", message=_text(
                f"cannot judge: {row.unjudged}; passed by --allow-unjudged"))
        out = ET.SubElement(case, "system-out")
        out.text = explanation
    suite.set("tests", str(len(comparison.rows)))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suite.set("skipped", str(skipped))
    suite.set("hostname", _text(comparison.new.host or "unknown"))
    suite.set("timestamp", dt.datetime.fromtimestamp(comparison.new.started_at, dt.UTC)
              .strftime("%Y-%m-%dT%H:%M:%S"))
    root = ET.Element("testsuites", name="virtbench", tests=str(len(comparison.rows)),
                      failures=str(failures), errors="0")
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
