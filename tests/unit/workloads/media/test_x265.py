"""media.x265 against a FakeTarget: the clip it generates once, the ffmpeg encode it times, the
SIMD level the realisation picked as x265's asm=, and its figures from ffmpeg's own frame count."""

from __future__ import annotations

from pathlib import Path

import pytest

from virtbench.targets.fake import FakeTarget
from virtbench.workloads.cpu.features import feature_set
from virtbench.workloads.media.x265 import X265Workload
from virtbench.workloads.workload_contract import TrialContext

pytestmark = pytest.mark.usefixtures("no_processes")  # tests/conftest.py

ENCODE = ("ffmpeg", "-hide_banner", "-nostdin", "-y")


def _ctx(tmp_path: Path, target: FakeTarget, workload: X265Workload,
         knobs: dict[str, object]) -> TrialContext:
    return TrialContext(target=target, variant="sse4", knobs=knobs, workdir=tmp_path,
                        repetition=2, seed=1, realisation=workload.realise(knobs))


def test_encode_time_and_fps_from_the_last_frame_count(tmp_path: Path) -> None:
    stderr = "frame=   10 fps=5.0\rframe=   48 fps=6.1\rframe=   50 fps=6.2\n"
    target = FakeTarget().add(*ENCODE, stderr=stderr, duration_s=4.0)
    workload = X265Workload(X265Workload.Params(clip="quick", threads=3))
    result = workload.run(_ctx(tmp_path, target, workload, {"cpu_features": ["ssse3"]}))
    assert {m.metric: m.value for m in result.measurements} == {
        "encode_time_s": 4.0, "fps": 50 / 4.0}
    assert result.notes == {"x265_params": "log-level=error:asm=ssse3:frame-threads=3"}
    encode = next(c for c in target.calls if c.argv[:4] == ENCODE)
    assert encode.argv[encode.argv.index("-x265-params") + 1] == result.notes["x265_params"]
    assert encode.argv[encode.argv.index("-i") + 1] == str(tmp_path / "clip-640x360-25-2.mkv")
    assert target.calls[-1].argv[:2] == ("rm", "-f")  # the encoded output does not stay


def test_the_host_leaves_asm_to_x265_and_a_silent_ffmpeg_counts_the_clip(
        tmp_path: Path) -> None:
    target = FakeTarget().add(*ENCODE, duration_s=2.0)
    workload = X265Workload(X265Workload.Params(clip="quick"))
    assert feature_set({}).is_host
    result = workload.run(_ctx(tmp_path, target, workload, {}))
    assert result.notes == {"x265_params": "log-level=error"}
    assert {m.metric: m.value for m in result.measurements}["fps"] == 25 * 2.0 / 2.0


def test_setup_generates_the_clip_only_when_it_is_missing(tmp_path: Path) -> None:
    workload = X265Workload(X265Workload.Params(clip="quick", width=320, height=240))
    missing = FakeTarget().add("test", "-s", returncode=1).add("ffmpeg")
    workload.setup(_ctx(tmp_path, missing, workload, {}))
    [_check, generate] = missing.calls
    assert "testsrc2=size=320x240:rate=25:duration=2.0" in generate.argv
    assert generate.argv[-1] == str(tmp_path / "clip-320x240-25-2.mkv")

    present = FakeTarget().add("test", "-s")
    workload.setup(_ctx(tmp_path, present, workload, {}))
    assert [c.argv[0] for c in present.calls] == ["test"]
