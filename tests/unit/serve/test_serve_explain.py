"""`serve` shows a profiled run's Explain section as the HTML report does, with the flame graph
search as the server's own script (the page's CSP allows no inline script)."""

from __future__ import annotations

from profiled import HARDWARE, HARDWARE_TRIALS, SOFTWARE_TRIALS, add_profiled_run
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
