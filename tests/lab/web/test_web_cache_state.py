"""web.load's cache states and the origin-direct target on real nginx and Varnish: a cold
trial meets empty storage (every request a miss), a warm one a full cache (every request a
hit), and via origin no request reaches Varnish."""

from __future__ import annotations

from pathlib import Path

import pytest
from webhelpers import context, needs_web

from virtbench.labs.web import WebLab
from virtbench.model import Measurement, VirtbenchError
from virtbench.workloads.web import WebLoad

pytestmark = [pytest.mark.lab, needs_web, pytest.mark.timeout(600)]

PAGES = 20  # make_lab: 2 sites x 10 pages


def _value(ms: list[Measurement], name: str) -> float | None:
    found = [m.value for m in ms if m.metric == name and m.t is None]
    assert len(found) == 1, name
    return found[0]


def _caches(ms: list[Measurement]) -> list[str]:
    return [m.labels["cache"] for m in ms if m.metric == "response_time"]


def _load(**params: object) -> WebLoad:
    # Sequential URLs at PAGES req/s for 1 s: every page exactly once per trial.
    base: dict[str, object] = {"rate_per_s": PAGES, "duration_s": 1, "stat_interval_s": 0.5,
                               "url_choice": "sequential", "users": 1}
    base.update(params)
    return WebLoad(WebLoad.Params(**base))


@pytest.mark.parametrize("storage", ["malloc", "file-tmpfs"])
def test_cold_trials_each_start_from_empty_storage(static_lab: WebLab, open_dir: Path,
                                                   storage: str) -> None:
    state = static_lab.enter("v", {"cache_storage": storage, "cache_size": "64M"})
    workload = _load(cache_state="cold")
    for repetition in range(2):
        result = workload.run(context(open_dir, state.services, repetition=repetition))
        ms = result.measurements
        # Without the restart the second trial would be all hits (as-is keeps the cache).
        assert _caches(ms) == ["miss"] * PAGES
        assert _value(ms, "hit_ratio_run") == 0.0
        assert _value(ms, "backend_fetches_run") == PAGES
        assert result.notes["cache_objects_at_start"] == "0"
        assert "restarted" in result.notes["cache_emptied"]
    as_is = _load().run(context(open_dir, state.services, repetition=2)).measurements
    assert _caches(as_is) == ["hit"] * PAGES


def test_warm_trial_starts_with_every_page_cached(static_lab: WebLab, open_dir: Path) -> None:
    state = static_lab.enter("v", {"cache_storage": "malloc", "cache_size": "64M"})
    result = _load(cache_state="warm").run(context(open_dir, state.services))
    assert _caches(result.measurements) == ["hit"] * PAGES
    assert _value(result.measurements, "backend_fetches_run") == 0
    assert result.notes["cache_objects_at_start"] == str(PAGES)


def test_via_origin_bypasses_varnish(static_lab: WebLab, open_dir: Path) -> None:
    state = static_lab.enter("v", {"cache_storage": "malloc", "cache_size": "64M"})
    result = _load(via="origin").run(context(open_dir, state.services))
    ms = result.measurements
    # No X-Varnish header on any response, every one answered by nginx, no Varnish counters.
    assert _caches(ms) == ["-"] * PAGES
    assert _value(ms, "failures") == 0
    assert not [m for m in ms if m.metric == "hit_ratio_run"]
    urls = {m.labels["url"] for m in ms if m.metric == "response_time"}
    assert len(urls) == PAGES
    with pytest.raises(VirtbenchError, match="origin has no cache"):
        _load(via="origin", cache_state="cold").run(context(open_dir, state.services))
