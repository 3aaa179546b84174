"""`serve` shows a profiled run's Explain section as the HTML report does, with the flame graph
search as the server's own script (the page's CSP allows no inline script)."""

from __future__ import annotations

import re

from profiled import HARDWARE, HARDWARE_TRIALS, SOFTWARE, SOFTWARE_TRIALS, add_profiled_run
from starlette.testclient import TestClient

from virtbench.report.flamegraph import search_script
from virtbench.store import Store


def test_run_page_and_download_explain_a_profiled_run(store: Store, client: TestClient) -> None:
    run = add_profiled_run(store, {"masked": SOFTWARE_TRIALS, "granted": HARDWARE_TRIALS})
    page = client.get(f"/runs/{run}")
    assert page.status_code == 200
    assert 'id="explain-crc32c"' in page.text and HARDWARE in page.text
    assert 'href="#explain-crc32c"' in page.text
    assert '<script src="/static/flamegraph.js"></script>' in page.text
    assert "<script>" not in page.text  # nothing inline: the CSP would refuse it
    assert "script-src" not in page.headers["content-security-policy"]  # default-src 'self'
    script = client.get("/static/flamegraph.js")
    assert script.status_code == 200 and script.text == search_script()
    assert script.headers["content-type"].startswith("text/javascript")
    body = client.get(f"/runs/{run}/body").text  # what the live page swaps in
    assert 'class="vbf-input"' in body
    download = client.get(f"/runs/{run}/download/html").text
    assert 'id="explain-crc32c"' in download and download.count("<script>") == 1


def test_compare_page_explains_two_profiled_runs(store: Store, client: TestClient) -> None:
    base = add_profiled_run(store, {"masked": SOFTWARE_TRIALS})
    new = add_profiled_run(store, {"granted": HARDWARE_TRIALS})
    plain = add_profiled_run(store, {"masked": [None] * 3})  # no profile: nothing to explain
    page = client.get(f"/compare?run={base}&run={new}&run={plain}")
    assert page.status_code == 200
    text = page.text
    assert re.findall(r'id="(explain-\d+)"', text) == ["explain-1", "explain-2"]
    assert "no profile in NEW for crc32c, variant masked" in text  # BASE → the unprofiled run
    assert SOFTWARE in text and HARDWARE in text and "profile.task_clock_ms" in text
    ids = re.findall(r'<svg [^>]*id="(flame-[\d-]+)"', text)
    assert len(ids) == 6 and len(set(ids)) == 6  # per pair: the differential, BASE's, NEW's
    assert '<script src="/static/flamegraph.js"></script>' in text and "<script>" not in text
    plain_too = add_profiled_run(store, {"masked": [None] * 3})
    two = client.get(f"/compare?run={plain}&run={plain_too}").text
    assert "flamegraph.js" not in two and 'id="explain-' not in two
