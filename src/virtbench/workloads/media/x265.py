"""media.x265: H.265 encoding with ffmpeg + libx265 (study 000's video-compression workload)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field

from virtbench.contract import Params
from virtbench.model import Artifact, Better, Measurement, Metric
from virtbench.workloads.cpu.features import CPU_FEATURES_KNOB, feature_set, x265_realisation
from virtbench.workloads.workload_contract import (
    Realisation,
    Tool,
    TrialContext,
    TrialResult,
    TypicalTime,
    Workload,
)

__all__ = ["WORKLOADS", "X265Workload"]

# The study's clip: 10 s of 4K. "quick" keeps a CI run short; explicit sizes override presets.
CLIP_PRESETS = {"quick": (640, 360, 25, 2.0), "hd": (1920, 1080, 30, 2.0),
                "study": (3840, 2160, 30, 10.0)}


class X265Params(Params):
    clip: Literal["quick", "hd", "study"] = Field(
        "quick", description="clip preset: quick 640x360 25 fps 2 s; hd 1080p 30 fps 2 s; "
                             "study 3840x2160 30 fps 10 s (the study's 4K clip)")
    width: int | None = Field(None, ge=16, le=8192,
                              description="clip width in pixels; None: the preset's")
    height: int | None = Field(None, ge=16, le=8192,
                               description="clip height in pixels; None: the preset's")
    rate: int | None = Field(None, ge=1, le=240, description="frames per second")
    duration_s: float | None = Field(None, ge=0.1, le=600,
                                     description="clip length in seconds; None: the preset's")
    preset: str = Field("medium", description="x265 preset (study: medium)")
    crf: int = Field(32, ge=0, le=51, description="constant rate factor (study: 32)")
    threads: int = Field(0, ge=0, le=256, description="x265 frame threads; 0 = x265 default")

    def geometry(self) -> tuple[int, int, int, float]:
        width, height, rate, duration = CLIP_PRESETS[self.clip]
        return (self.width or width, self.height or height, self.rate or rate,
                self.duration_s or duration)


_FRAME_RE = re.compile(r"frame=\s*(\d+)")


class X265Workload(Workload):
    name = "media.x265"
    description = ("ffmpeg -c:v libx265 -preset medium -crf 32 of a lavfi testsrc2 clip "
                   "(generated once as lossless FFV1); SIMD level chosen with x265 asm=")
    metrics = (
        Metric("encode_time_s", "s", Better.LOWER,
               "wall time of the whole ffmpeg process (decode + x265 encode + mux)",
               primary=True),
        Metric("fps", "frames/s", Better.HIGHER, "encoded frames / encode_time_s"),
    )
    tools = (Tool("ffmpeg", "ffmpeg", "H.265 encoding with libx265"),)
    Params = X265Params
    knobs = (CPU_FEATURES_KNOB,)
    timeout_s = 7200.0  # the encode's own limit: 1080p without asm takes minutes per clip

    def typical_trial_s(self) -> TypicalTime | None:
        p = self.params
        if p.clip == "study" and p.geometry() == CLIP_PRESETS["study"] and (
                p.preset, p.crf) == ("medium", 32):
            # Study 000's own mean encode times of this clip (docs/cpu-features.md): all four
            # SSE flags 57.7 s, the default guest CPU 138.24 s.
            return TypicalTime(57.7, 138.24, "study 000's encode times of this clip on its "
                                             "4-vCPU Ryzen 7 4800H guest")
        return None

    def realise(self, knobs: Mapping[str, Any]) -> Realisation:
        return x265_realisation(feature_set(knobs), self.name)

    def _clip_path(self, ctx: TrialContext) -> str:
        width, height, rate, duration = self.params.geometry()
        return str(ctx.workdir / f"clip-{width}x{height}-{rate}-{duration:g}.mkv")

    def setup(self, ctx: TrialContext) -> None:
        width, height, rate, duration = self.params.geometry()
        clip = self._clip_path(ctx)
        if ctx.target.run(["test", "-s", clip], check=False).returncode == 0:
            return
        ctx.target.run([
            "ffmpeg", "-hide_banner", "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi",
            "-i", f"testsrc2=size={width}x{height}:rate={rate}:duration={duration}",
            "-c:v", "ffv1", clip,
        ], timeout=3600)

    def run(self, ctx: TrialContext) -> TrialResult:
        realisation = ctx.realisation  # realised once by the runner, not again here
        x265_params = ["log-level=error"]
        if "asm" in realisation.settings and realisation.settings["asm"] != "auto":
            x265_params.append(f"asm={realisation.settings['asm']}")
        if self.params.threads:
            x265_params.append(f"frame-threads={self.params.threads}")
        out = str(ctx.workdir / f"out-{ctx.variant}-{ctx.repetition}.mp4".replace("/", "_"))
        result = ctx.target.run([
            "ffmpeg", "-hide_banner", "-nostdin", "-y", "-i", self._clip_path(ctx),
            "-c:v", "libx265", "-preset", self.params.preset, "-crf", str(self.params.crf),
            "-x265-params", ":".join(x265_params), "-an", out,
        ], timeout=7200)
        frames = [int(m) for m in _FRAME_RE.findall(result.stderr)]
        ctx.target.run(["rm", "-f", out], check=False)
        _width, _height, rate, duration = self.params.geometry()
        frame_count = frames[-1] if frames else round(rate * duration)
        return TrialResult(
            [Measurement("encode_time_s", result.duration_s),
             Measurement("fps", frame_count / result.duration_s)],
            artifacts=[Artifact("ffmpeg.stderr", result.stderr[-4000:].encode())],
            notes={"x265_params": ":".join(x265_params)},
        )


WORKLOADS = (X265Workload,)
