"""Each study's builder answers only for its own study's workloads."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from virtbench.plugins import build_sections
from virtbench.report.sections.net_qos import qos_sections
from virtbench.report.sections.storage import storage_sections
from virtbench.report.sections.vnf_scalability import vnf_sections
from virtbench.report.sections.web import web_sections
from virtbench.store import Store

from .synthetic import (
    analysed,
    build_other,
    build_qos,
    build_storage,
    build_vnf,
    build_web,
    new_store,
)

BUILDERS: dict[str, tuple[Callable[[Store], Any], Callable[..., Any], str]] = {
    "qos": (build_qos, qos_sections, "net-qos-"),
    "vnf": (build_vnf, vnf_sections, "vnf-scalability-"),
    "storage": (build_storage, storage_sections, "storage-bonnie-"),
    "web": (build_web, web_sections, "web-"),
    "other": (build_other, lambda a: [], ""),
}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("study", list(BUILDERS))
def test_a_run_of_one_study_gets_only_its_own_sections(tmp_path: Path, study: str) -> None:
    store = new_store(tmp_path)
    BUILDERS[study][0](store)
    analysis = analysed(store)
    for name, (_build, sections_of, prefix) in BUILDERS.items():
        found = sections_of(analysis)
        assert bool(found) == (name == study and name != "other"), name
        assert all(s.key.startswith(prefix) for s in found)
    keys = [s.key for s in build_sections(analysis)]  # discovered through SECTIONS
    prefix = BUILDERS[study][2]
    assert (study == "other") == (not keys)
    assert all(k.startswith(prefix) for k in keys) and len(keys) == len(set(keys))
