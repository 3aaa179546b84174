"""Load configuration and URL-list validation: bad input names the field."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import ValidationError

from virtbench.loadgen.config import LoadConfig
from virtbench.model import VirtbenchError
from virtbench.parsers.varnishstat import VarnishSnapshot
from virtbench.services import WebStack
from virtbench.targets.fake import FakeTarget
from virtbench.workloads.web.cache_state import prepare_cache
from virtbench.workloads.web.load import WebLoad, child_restarts
from virtbench.workloads.web.sampler import VarnishSampler, keep_counter
from virtbench.workloads.web.urls import read_url_file, resolve_urls


def test_non_loopback_url_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"urls\[1\].*not a loopback"):
        LoadConfig(urls=["http://127.0.0.1:1/a", "http://192.0.2.1/b"])


def test_urls_must_share_one_server() -> None:
    with pytest.raises(ValidationError, match="one host:port"):
        LoadConfig(urls=["http://127.0.0.1:1/a", "http://127.0.0.1:2/b"])


def test_url_file_errors_name_the_line(tmp_path: Path) -> None:
    f = tmp_path / "urls.txt"
    f.write_text("# pages\nhttp://127.0.0.1:8080/a\n\nftp://x/y\n")
    with pytest.raises(VirtbenchError, match=r"url_file .*line 4.*http://"):
        read_url_file(f)
    f.write_text("# nothing\n\n")
    with pytest.raises(VirtbenchError, match="no URL"):
        read_url_file(f)
    with pytest.raises(VirtbenchError, match="cannot read"):
        read_url_file(tmp_path / "missing.txt")


def _stack(urls: tuple[str, ...] = ("http://127.0.0.1:8/y",),
           origin_urls: tuple[str, ...] = ("http://127.0.0.1:7/y",),
           empty_cache: Callable[[], dict[str, str]] = dict) -> WebStack:
    return WebStack(base_url="http://127.0.0.1:8", urls=urls, origin_url="http://127.0.0.1:7",
                    origin_urls=origin_urls, host_header=None, cache_storage="malloc",
                    varnish_workdir="/nonexistent", varnish_pid=0, empty_cache=empty_cache)


def test_url_sources_in_order(tmp_path: Path) -> None:
    p = WebLoad.Params(urls=["http://127.0.0.1:9/x"])
    assert resolve_urls(p, _stack()) == ["http://127.0.0.1:9/x"]
    p = WebLoad.Params(max_urls=1)
    assert resolve_urls(p, _stack(("http://127.0.0.1:8/y", "http://127.0.0.1:8/z"))) == [
        "http://127.0.0.1:8/y"]
    with pytest.raises(VirtbenchError, match="no URLs"):
        resolve_urls(WebLoad.Params(), None)


def test_via_origin_takes_the_labs_origin_urls() -> None:
    assert resolve_urls(WebLoad.Params(via="origin"), _stack()) == ["http://127.0.0.1:7/y"]
    assert resolve_urls(WebLoad.Params(), _stack()) == ["http://127.0.0.1:8/y"]
    with pytest.raises(VirtbenchError, match="via origin needs the 'web' lab"):
        resolve_urls(WebLoad.Params(via="origin"), None)


def test_cold_cache_needs_a_lab_that_can_empty_it() -> None:
    with pytest.raises(VirtbenchError, match="cache_state cold needs the web lab"):
        prepare_cache("cold", "cache", ["http://127.0.0.1:8/y"], None)
    with pytest.raises(VirtbenchError, match="origin has no cache"):
        prepare_cache("warm", "origin", ["http://127.0.0.1:8/y"], None)
    emptied: list[bool] = []

    def empty_cache() -> dict[str, str]:
        emptied.append(True)
        return {"cache_emptied": "yes"}

    notes = prepare_cache("cold", "cache", [], _stack(empty_cache=empty_cache))
    assert emptied == [True] and notes == {"cache_emptied": "yes"}
    assert prepare_cache("as-is", "origin", [], None) == {}


def test_the_web_lab_is_needed_unless_the_urls_are_given(tmp_path: Path) -> None:
    assert WebLoad(WebLoad.Params()).needed_services() == (WebStack,)
    assert WebLoad(WebLoad.Params(urls=["http://127.0.0.1:9/x"])).needed_services() == ()
    assert WebLoad(WebLoad.Params(url_file=tmp_path / "u.txt")).needed_services() == ()
    # only the web lab can empty its cache
    assert WebLoad(WebLoad.Params(urls=["http://127.0.0.1:9/x"], cache_state="cold")
                   ).needed_services() == (WebStack,)


def test_every_metric_is_defined() -> None:
    names = [m.name for m in WebLoad.metrics]
    assert len(names) == len(set(names))
    assert all(m.unit and m.description for m in WebLoad.metrics)
    assert [m.name for m in WebLoad.metrics if m.primary] == ["response_time_mean"]


def test_a_varnish_child_that_died_in_the_trial_is_said() -> None:
    sampler = VarnishSampler(FakeTarget(), "/nowhere", 1.0)

    def snap(died: int, started: int) -> VarnishSnapshot:
        return VarnishSnapshot(None, {"MGT.child_died": died, "MGT.child_start": started,
                                      "MAIN.n_object": 5})

    sampler.snapshots = [snap(0, 1), snap(0, 1)]
    assert child_restarts(sampler) == ""
    sampler.snapshots = [snap(0, 1), snap(0, 1), snap(1, 2)]  # the kernel killed it mid-trial
    said = child_restarts(sampler)
    assert said.startswith("varnishd's child process died 1 and was restarted 1 time(s)")
    assert "cache was emptied mid-trial" in said
    sampler.snapshots = [snap(1, 2)]  # one snapshot: nothing to compare
    assert child_restarts(sampler) == ""
    assert keep_counter("MGT.child_died") and keep_counter("MGT.child_start")
