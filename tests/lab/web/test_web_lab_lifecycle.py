"""The web lab on real nginx and varnishd: storage variants, cold restarts, cleanup."""

from __future__ import annotations

import contextlib
import json
import os
import urllib.request
from pathlib import Path

import pytest
from webhelpers import make_lab, needs_web

from virtbench.labs.lab_contract import Manifest
from virtbench.labs.web import WebLab
from virtbench.model import VirtbenchError
from virtbench.profiling.perf_record import live_descendants
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


def _memory_cgroup_of(pid: int) -> str:
    """The memory controller's group of a process (cgroup v1 line, or v2's single line)."""
    lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    v1 = [line.split(":", 2)[2] for line in lines if "memory" in line.split(":")[1].split(",")]
    return v1[0] if v1 else next(line.split(":", 2)[2] for line in lines if line.startswith("0::"))


def test_cache_memory_limits_varnishd_and_its_daemons_are_named(open_dir: Path,
                                                                lab_root: Path) -> None:
    lab = make_lab(open_dir, cache_memory_mib=96)
    try:
        lab.up()
        # malloc storage is varnishd's own memory: one larger than the limit is refused
        # refused before anything runs (run --check), and by enter all the same
        assert "malloc of 96M does not fit" in lab.check_variant(
            "big", {"cache_storage": "malloc", "cache_size": "96M"})[0]
        assert lab.check_variant("disk", {"cache_storage": "file-disk", "cache_size": "1G"}) == []
        with pytest.raises(VirtbenchError, match=r"variant big: .*malloc of 96M does not fit "
                                                 r"in params.cache_memory_mib \(96 MiB\)"):
            lab.enter("big", {"cache_storage": "malloc", "cache_size": "96M"})
        state = lab.enter("disk", {"cache_storage": "file-disk", "cache_size": "256M"})
        assert "limit 96 MiB" in state.notes["cache_memory"]
        daemons = lab.serving_daemons()
        assert set(daemons) == {"nginx", "varnishd"}
        varnishd = live_descendants(daemons["varnishd"])
        assert len(varnishd) == 2  # the manager and the child that serves (as user vcache)
        groups = {_memory_cgroup_of(pid) for pid in varnishd}
        assert len(groups) == 1 and lab.run_id in next(iter(groups))
        assert lab.run_id not in _memory_cgroup_of(daemons["nginx"])  # the origin: unlimited
        # the memory controller's group (v1 here; a v2 host has one group for all)
        limit = next(p / name for p in Path("/sys/fs/cgroup").glob(f"**/*{lab.run_id}-disk")
                     for name in ("memory.limit_in_bytes", "memory.max") if (p / name).exists())
        group_dir = limit.parent
        assert int(limit.read_text()) == 96 << 20
        status, _via, body = _get(state.services.get(WebStack).urls[0])
        assert status == 200 and body
        lab.leave("disk")
        assert not group_dir.exists()
        assert lab.serving_daemons() == {"nginx": daemons["nginx"]}
    finally:
        lab.down()
    assert list(lab_root.iterdir()) == []


def test_clean_removes_the_memory_cgroup_a_crashed_run_left(open_dir: Path,
                                                            lab_root: Path) -> None:
    lab = make_lab(open_dir, cache_memory_mib=128)
    try:
        lab.up()
        lab.enter("t", {"cache_storage": "file-disk", "cache_size": "64M"})
        manifest_path = lab_root / f"{lab.run_id}.json"
        groups = [Path(p) for p in json.loads(manifest_path.read_text())["objects"]["cgroup"]]
        assert groups and all(g.is_dir() for g in groups)
        removed = WebLab.clean(Manifest(manifest_path, "web"))  # only the manifest to go on
        assert sum("removed cgroup" in r for r in removed) == len(groups)
        assert not any(g.exists() for g in groups)
        for item in removed:  # reap our own children so they do not linger as zombies
            if item.startswith("stopped"):
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(int(item.rsplit("pid ", 1)[1].rstrip(")")), os.WNOHANG)
    finally:
        lab.down()
