"""Helpers for the web lab tests (imported by name: pytest puts this folder on sys.path)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from virtbench.labs.web import WebLab
from virtbench.services import Services
from virtbench.targets.local import LocalTarget
from virtbench.workloads.workload_contract import TrialContext

needs_web = pytest.mark.skipif(
    not (shutil.which("nginx") and shutil.which("varnishd")),
    reason="nginx and varnishd are needed (Debian packages nginx-light, varnish)")


def make_lab(tmp_path: Path, **params: object) -> WebLab:
    defaults: dict[str, object] = {"sites": 2, "pages_per_site": 10, "page_bytes": 20_000,
                                   "disk_dir": tmp_path / "disk"}
    defaults.update(params)
    (tmp_path / "disk").mkdir(exist_ok=True)
    return WebLab(WebLab.Params(**defaults), tmp_path, LocalTarget())


def context(tmp_path: Path, services: Services, repetition: int = 0,
            variant: str = "v") -> TrialContext:
    return TrialContext(target=LocalTarget(), variant=variant, knobs={},
                        workdir=tmp_path / "work", repetition=repetition, seed=0,
                        services=services)
