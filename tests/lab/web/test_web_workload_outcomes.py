"""web.load in the web lab: the study protocol and each failure mode's recorded outcome."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from webhelpers import context, make_lab, needs_web

from virtbench.labs.web import WebLab
from virtbench.model import Measurement, VirtbenchError
from virtbench.services import WebStack
from virtbench.workloads.web import WebLoad

pytestmark = [pytest.mark.lab, needs_web, pytest.mark.timeout(600)]


def _one(ms: list[Measurement], name: str) -> Measurement:
    found = [m for m in ms if m.metric == name and m.t is None]
    assert len(found) == 1, name
    return found[0]


def _load(**params: object) -> WebLoad:
    base: dict[str, object] = {"rate_per_s": 40, "duration_s": 2, "stat_interval_s": 0.5}
    base.update(params)
    return WebLoad(WebLoad.Params(**base))


def test_cold_then_warm_runs_without_restart(static_lab: WebLab, open_dir: Path) -> None:
    """Study 004: enter = Varnish cold; repetitions 0, 1 run on the same Varnish."""
    state = static_lab.enter("memory", {"cache_storage": "malloc", "cache_size": "64M"})
    workload = _load(duration_s=1.5)
    runs = [workload.run(context(open_dir, state.services, repetition=k)).measurements
            for k in range(2)]
    declared = {m.name for m in WebLoad.metrics}
    for ms in runs:
        assert {m.metric for m in ms} <= declared
        assert _one(ms, "samples").value == 60 and _one(ms, "failures").value == 0
        assert _one(ms, "success_rate").value == 100.0
        per_request = [m for m in ms if m.metric == "response_time"]
        assert len(per_request) == 60 and all(m.t is not None for m in per_request)
        assert [m.t for m in per_request] == pytest.approx([i / 40 for i in range(60)])
        timeline = [m for m in ms if m.metric == "hit_ratio_interval"]
        assert len(timeline) >= 3 and all(m.t is not None for m in timeline)
    cold, warm = (_one(ms, "hit_ratio_run").value for ms in runs)
    assert cold is not None and warm is not None and cold < warm
    pages = [{m.labels["url"] for m in ms if m.metric == "response_time"} for ms in runs]
    # Cold: one origin fetch per distinct page; warm: only pages run 0 never asked for.
    assert _one(runs[0], "backend_fetches_run").value == len(pages[0])
    assert _one(runs[1], "backend_fetches_run").value == len(pages[1] - pages[0])


def test_backend_down_gives_503_failures(static_lab: WebLab, open_dir: Path) -> None:
    state = static_lab.enter("v", {})
    static_lab.stop_origin_server()
    result = _load(duration_s=1).run(context(open_dir, state.services))
    ms = result.measurements
    assert _one(ms, "failures").value == 40 and _one(ms, "success_rate").value == 0.0
    assert _one(ms, "response_time_mean").value is None
    assert '"http_503": 40' in result.notes["errors"]
    failed = [m for m in ms if m.metric == "response_time"]
    assert {m.status for m in failed} == {"failed"} and {m.labels["status"] for m in failed} == {
        "503"}


def test_slow_backend_gives_timeouts(open_dir: Path, lab_root: Path) -> None:
    lab = make_lab(open_dir, page_bytes=200_000, origin_limit_rate_bps=50_000)
    try:
        lab.up()
        state = lab.enter("slow", {})
        ms = _load(rate_per_s=10, duration_s=0.5, timeout_s=0.5).run(
            context(open_dir, state.services)).measurements
        assert _one(ms, "failures").value == 5
        errors = {m.labels.get("error") for m in ms if m.metric == "response_time"}
        assert errors == {"timeout"}
    finally:
        lab.down()


@pytest.fixture
def silent_backend() -> Iterator[int]:
    """A socket that accepts connections (kernel backlog) and never answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()


def test_first_byte_timeout_is_a_503(open_dir: Path, lab_root: Path,
                                     silent_backend: int) -> None:
    lab = make_lab(open_dir, origin="external", external_backend_port=silent_backend,
                   first_byte_timeout_s=0.3)
    try:
        lab.up()
        state = lab.enter("v", {})
        ms = _load(rate_per_s=4, duration_s=1).run(context(open_dir, state.services)).measurements
        assert _one(ms, "failures").value == 4
        assert {m.labels["status"] for m in ms if m.metric == "response_time"} == {"503"}
    finally:
        lab.down()


def test_full_storage_nukes_and_keeps_serving(open_dir: Path, lab_root: Path) -> None:
    lab = make_lab(open_dir, sites=2, pages_per_site=20, page_bytes=200_000)
    try:
        lab.up()
        state = lab.enter("tiny", {"cache_storage": "malloc", "cache_size": "2M"})
        ms = _load(rate_per_s=40, duration_s=1.5).run(
            context(open_dir, state.services)).measurements
        assert _one(ms, "failures").value == 0
        nuked = _one(ms, "lru_nuked_run").value
        assert nuked is not None and nuked > 0
        assert sum(m.value or 0 for m in ms if m.metric == "lru_nuked_interval") == nuked
        used = [m.value for m in ms if m.metric == "storage_used_bytes"
                and m.labels.get("storage") == "s0"]
        assert max(v or 0 for v in used) <= 2 * 1024 * 1024
    finally:
        lab.down()


def test_bad_url_list(static_lab: WebLab, open_dir: Path) -> None:
    state = static_lab.enter("v", {})
    base = state.services.get(WebStack).base_url
    bad = open_dir / "urls.txt"
    bad.write_text(f"{base}/site1/page1.html\n{base}/no/such/page.html\n")
    ms = _load(url_file=bad, url_choice="sequential", users=1, duration_s=1).run(
        context(open_dir, state.services)).measurements
    assert _one(ms, "failures").value == 20 and _one(ms, "success_rate").value == 50.0
    bad.write_text("127.0.0.1/site1/page1.html\n")
    with pytest.raises(VirtbenchError, match=r"url_file .* line 1"):
        _load(url_file=bad).run(context(open_dir, state.services))


def test_wrk_engine_through_the_workload(static_lab: WebLab, open_dir: Path) -> None:
    state = static_lab.enter("w", {})
    result = _load(engine="wrk", model="closed", users=4, duration_s=1).run(
        context(open_dir, state.services))
    ms = result.measurements
    samples = _one(ms, "samples").value
    assert samples is not None and samples > 100 and _one(ms, "failures").value == 0
    assert not [m for m in ms if m.metric == "response_time"]  # wrk has no per-request times
    assert _one(ms, "response_time_p99").value is not None
    fetches = _one(ms, "backend_fetches_run").value
    assert fetches is not None and 0 < fetches <= 20
    assert result.notes["load_generator"].startswith("wrk")
