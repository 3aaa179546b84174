"""The web lab on real nginx and varnishd: storage variants, cold restarts, cleanup."""

from __future__ import annotations

import contextlib
import json
import os
import urllib.request
from pathlib import Path

import pytest
from webhelpers import make_lab, needs_web

from virtbench.labs.base import Manifest
from virtbench.labs.web import WebLab
from virtbench.model import VirtbenchError
from virtbench.services import WebStack
from virtbench.spec import SpecError, parse_experiment
from virtbench.targets.daemon import is_ours

pytestmark = [pytest.mark.lab, needs_web, pytest.mark.timeout(600)]


def _get(url: str) -> tuple[int, str, bytes]:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return resp.status, resp.headers["X-Varnish"], resp.read()


@pytest.mark.parametrize("storage", ["malloc", "file-disk", "file-tmpfs", "file:USER"])
def test_each_storage_variant_serves_and_caches(static_lab: WebLab, open_dir: Path,
                                                storage: str) -> None:
    user_dir = open_dir / "san"
    user_dir.mkdir()
    knob = storage.replace("USER", str(user_dir))
    state = static_lab.enter(storage, {"cache_storage": knob, "cache_size": "32M"})
    try:
        url = state.services.get(WebStack).urls[3]
        status, first, body = _get(url)
        _, second, body2 = _get(url)
        assert status == 200 and len(body) == 20_000 and body == body2
        assert len(first.split()) == 1 and len(second.split()) == 2  # miss, then hit
        assert "cache_storage" in state.notes
        if storage == "file-tmpfs":
            assert "filesystem tmpfs" in state.notes["cache_storage"]
        if storage == "file:USER":
            assert any(p.suffix == ".bin" for p in user_dir.iterdir())
    finally:
        static_lab.leave(storage)
    assert not any(user_dir.iterdir())  # the storage file is removed on leave
    assert not list((open_dir / "disk").glob("*/*.bin"))


def test_entering_again_restarts_varnish_cold(static_lab: WebLab) -> None:
    state = static_lab.enter("a", {"cache_size": "16M"})
    url = state.services.get(WebStack).urls[0]
    _get(url)
    assert len(_get(url)[1].split()) == 2
    state = static_lab.enter("a", {"cache_size": "16M"})
    assert len(_get(state.services.get(WebStack).urls[0])[1].split()) == 1  # a miss again: cold
    static_lab.leave("a")


def test_bad_knobs_name_the_variant(static_lab: WebLab) -> None:
    with pytest.raises(VirtbenchError, match=r"variant fast.*cache_storage 'ssd'"):
        static_lab.enter("fast", {"cache_storage": "ssd"})
    # A knob the lab does not declare never reaches enter(): the experiment is refused first.
    with pytest.raises(SpecError, match=r"unknown knob 'colour'.*lab web.*cache_storage"):
        parse_experiment("name: odd\nlab: {kind: web}\n"
                         "variants: [{name: odd, knobs: {colour: red}}]\n"
                         "workloads: [{name: web.load}]\n", "odd.yaml")
    with pytest.raises(VirtbenchError, match="does not exist"):
        static_lab.enter("nodir", {"cache_storage": "file:/nonexistent/vbweb"})


def test_clean_stops_leftovers_by_pid_and_removes_files(open_dir: Path, lab_root: Path) -> None:
    lab = make_lab(open_dir)
    try:
        lab.up()
        lab.enter("t", {"cache_storage": "file-tmpfs", "cache_size": "16M"})
        manifest_path = lab_root / f"{lab.run_id}.json"
        data = json.loads(manifest_path.read_text())
        pids = [item["pid"] for item in data["objects"]["pid"]]
        assert len(pids) == 2 and all(is_ours(p, str(lab.private)) for p in pids)
        mount = Path(data["objects"]["mount"][0])
        assert mount.is_mount()
        # Simulate a crashed run: only the manifest is left to go on.
        removed = WebLab.clean(Manifest(manifest_path, "web"))
        assert sum("stopped" in r for r in removed) == 2
        assert not any(is_ours(p, str(lab.private)) for p in pids)
        assert not mount.is_mount() and not lab.private.exists()
        for p in pids:  # reap our own children so they do not linger as zombies
            with contextlib.suppress(ChildProcessError):
                os.waitpid(p, os.WNOHANG)
    finally:
        lab.down()  # idempotent: after clean() it finds nothing left


def test_down_leaves_nothing(open_dir: Path, lab_root: Path) -> None:
    lab = make_lab(open_dir)
    try:
        lab.up()
        lab.enter("t", {"cache_storage": "file-disk"})
    finally:
        lab.down()
    assert not lab.private.exists()
    assert list(lab_root.iterdir()) == []
    assert list((open_dir / "disk").iterdir()) == []
