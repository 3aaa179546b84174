"""A lab publishes only the service kinds it declares (``provides``), so the check before a run
can trust the declaration."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from virtbench.labs.assess_scratch import ProbeLab
from virtbench.labs.lab_contract import Lab, LabState
from virtbench.model import VirtbenchError
from virtbench.services import ResourceLimits, ScratchDisk, Services, VethPair
from virtbench.targets.fake import FakeTarget


class LimitedLab(Lab):
    name = "test.limited"
    description = "publishes what it is told to"
    provides = (ResourceLimits,)

    def enter(self, variant: str, knobs: Mapping[str, Any]) -> LabState:
        return LabState(services=self.publish(ResourceLimits(vcpus=1, memory_mib=None,
                                                             cgroup=None)))


def test_published_services_carry_the_labs_name(tmp_path: Path) -> None:
    state = LimitedLab(None, tmp_path, FakeTarget()).enter("a", {})
    assert state.services.lab == "test.limited"
    assert state.services.get(ResourceLimits).vcpus == 1
    assert LabState().services == Services()


def test_an_undeclared_kind_is_refused(tmp_path: Path) -> None:
    lab = LimitedLab(None, tmp_path, FakeTarget())
    veth = VethPair(server_ns="s", server_iface="s0", client_ns="c", client_iface="c0",
                    address="10.0.0.1", port=5201)
    with pytest.raises(VirtbenchError, match=r"lab test.limited publishes VethPair but declares "
                                             r"it provides ResourceLimits"):
        lab.publish(veth)


def test_the_probe_labs_params_choose_what_it_provides(tmp_path: Path) -> None:
    def provided(**params: bool) -> tuple[type, ...]:
        return ProbeLab(ProbeLab.Params(**params), tmp_path, FakeTarget()).provided_services()

    assert provided(disk=True, network=True) == (ScratchDisk, VethPair) == ProbeLab.provides
    assert provided(disk=True) == (ScratchDisk,)
    assert provided(network=True) == (VethPair,)
    assert provided() == ()


def test_a_lab_state_of_string_keys_is_refused() -> None:
    with pytest.raises(VirtbenchError, match=r"must be typed services \(Lab.publish"):
        LabState(services={"fs": {"path": "/tmp"}})  # type: ignore[arg-type]
