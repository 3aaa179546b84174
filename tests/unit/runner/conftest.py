"""The runner tests' fake plugins: added to the real ones, found by their names, with the
runner's facts faked (collecting them starts processes)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from virtbench.labs.lab_contract import Lab
from virtbench.runner import engine as engine_module
from virtbench.workloads.workload_contract import Workload

InstallFakes = Callable[..., None]


@pytest.fixture
def fake_plugins(monkeypatch: pytest.MonkeyPatch) -> InstallFakes:
    """``fake_plugins(workloads=(...), labs=(...))`` for the rest of the test."""

    def install(*, workloads: tuple[type[Workload], ...] = (),
                labs: tuple[type[Lab], ...] = ()) -> None:
        from virtbench import plugins

        known_workloads = {**plugins.all_workloads(), **{w.name: w for w in workloads}}
        known_labs = {**plugins.all_labs(), **{lab.name: lab for lab in labs}}
        monkeypatch.setattr(plugins, "all_workloads", lambda: known_workloads)
        monkeypatch.setattr(plugins, "all_labs", lambda: known_labs)
        monkeypatch.setattr(engine_module, "collect_facts", lambda target: {"fake": True})

    return install
