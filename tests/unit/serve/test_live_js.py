"""serve/static/live.js under Node with a minimal stand-in for the page: when the polled
progress says the run ended, the "in progress" note goes (it used to stay forever)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

LIVE_JS = Path(__file__).parents[3] / "src/virtbench/serve/static/live.js"

HARNESS = r"""
const fs = require("fs");
const removed = [];
const elements = {};
function element(id, attrs) {
  return elements[id] = {id: id, textContent: "", innerHTML: "", attrs: attrs || {},
    getAttribute(k) { return this.attrs[k]; }, setAttribute(k, v) { this.attrs[k] = v; },
    parentNode: {removeChild(child) { removed.push(child.id); delete elements[child.id]; }}};
}
element("live", {"data-run": "abc", "data-status": "running", "data-samples": "4"});
["live-status", "live-samples", "live-trials", "live-failed", "live-last", "live-duration",
 "live-note", "report-body", "report-toc"].forEach(id => element(id));
const answers = JSON.parse(process.argv[2]);
let polls = 0;
global.document = {getElementById: id => elements[id] || null};
global.window = {setTimeout: fn => { if (polls < answers.length) { setImmediate(fn); } }};
global.fetch = url => Promise.resolve(url.endsWith("/progress")
  ? {ok: true, json: () => Promise.resolve(answers[polls++])}
  : {ok: true, text: () => Promise.resolve("<p>body</p>")});
eval(fs.readFileSync(process.argv[1], "utf8"));
setTimeout(() => console.log(JSON.stringify({
  removed: removed, status: elements["live-status"].textContent, polls: polls})), 200);
"""


def _progress(status: str, samples: int) -> dict[str, object]:
    return {"status": status, "samples": samples, "trials_ok": samples, "trials_failed": 0,
            "last_trial": "-", "duration": "1 min 00 s", "stop_reason": ""}


def _run(answers: list[dict[str, object]]) -> dict[str, object]:
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.skip("node (Debian package nodejs) runs live.js outside a browser")
    result = subprocess.run([node, "-e", HARNESS, str(LIVE_JS), json.dumps(answers)],
                            capture_output=True, text=True, timeout=60, check=True)
    return dict(json.loads(result.stdout))


def test_the_in_progress_note_goes_when_the_run_ends() -> None:
    seen = _run([_progress("running", 6), _progress("complete", 8)])
    assert seen == {"removed": ["live-note"], "status": "complete", "polls": 2}


def test_the_note_stays_while_the_run_runs() -> None:
    seen = _run([_progress("running", 6), _progress("running", 8)])
    assert seen["removed"] == [] and seen["status"] == "running"
