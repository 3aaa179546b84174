"""A tuning plan: the edited XML, its diff, and every reason it must not be applied."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from virtbench.kvm.cloud import cloudstack_properties, nova_conf
from virtbench.kvm.cpumodels import ModelCatalog, known_features
from virtbench.kvm.domxml import CpuChange, CpuConfig, edit_cpu, read_cpu, unified_diff
from virtbench.kvm.flags import canonical
from virtbench.kvm.hostcpu import HostCpu
from virtbench.model import VirtbenchError

__all__ = ["TunePlan", "make_plan", "normalise_change"]


@dataclass
class TunePlan:
    domain: str
    change: CpuChange
    before_xml: str
    after_xml: str
    cpu: CpuConfig
    """The tuned ``<cpu>`` as libvirt will read it."""
    warnings: list[str] = field(default_factory=list)

    @property
    def diff(self) -> str:
        return unified_diff(self.before_xml, self.after_xml, self.domain)

    def cloudstack(self) -> str:
        return cloudstack_properties(self.cpu)

    def nova(self) -> str:
        return nova_conf(self.cpu)


def normalise_change(change: CpuChange) -> CpuChange:
    """Spell every flag the libvirt way and reject names libvirt does not know."""
    known = known_features()
    unknown: list[str] = []

    def fix(flags: tuple[str, ...]) -> tuple[str, ...]:
        out = []
        for flag in flags:
            name = canonical(flag, known)
            name = known.get(name, name)
            if known and name not in known:
                hint = difflib.get_close_matches(name, list(known), n=2)
                unknown.append(f"{flag}" + (f" (did you mean {' or '.join(hint)}?)" if hint
                                            else ""))
            out.append(name)
        return tuple(dict.fromkeys(out))

    require, disable = fix(change.require), fix(change.disable)
    if unknown:
        raise VirtbenchError("unknown CPU flag(s): " + ", ".join(unknown))
    both = sorted(set(require) & set(disable))
    if both:
        raise VirtbenchError(f"flag(s) both required and disabled: {', '.join(both)}")
    return CpuChange(mode=change.mode, model=change.model, require=require, disable=disable)


def make_plan(domain: str, xml: str, change: CpuChange, host: HostCpu,
              catalog: ModelCatalog | None) -> TunePlan:
    """Edit ``xml`` and check the result against the host; raise when it must be refused."""
    change = normalise_change(change)
    errors: list[str] = []
    warnings: list[str] = []
    lacking = [f for f in change.require if host.flags and f not in host.flags]
    if lacking:
        errors.append(
            f"the host ({host.uri}) lacks required flag(s): {', '.join(lacking)}; "
            "a guest cannot use what the CPU does not have"
        )
    if change.model:
        names = catalog.names() if catalog else []
        if names and change.model not in names:
            hint = difflib.get_close_matches(change.model, names, n=3)
            errors.append(f"unknown CPU model '{change.model}'"
                          + (f" (did you mean {', '.join(hint)}?)" if hint else ""))
        elif host.model_usable.get(change.model) is False:
            errors.append(f"CPU model '{change.model}' is not usable on this host for virttype "
                          f"{host.virttype} (libvirt domain capabilities say usable='no')")
    if change.mode == "host-passthrough" and host.passthrough_supported is False:
        errors.append(f"mode host-passthrough is not supported for virttype {host.virttype} "
                      "(e.g. QEMU TCG); use host-model or maximum")
    if host.host_model is not None:
        dropped = [f for f in change.require if f in host.host_model.disabled()]
        if dropped:
            warnings.append(f"virttype {host.virttype} cannot offer {', '.join(dropped)} "
                            "(its host-model disables them); QEMU may drop them at start")
    if errors:
        raise VirtbenchError(f"refusing to tune domain '{domain}': " + "; ".join(errors))
    after = edit_cpu(xml, change)
    return TunePlan(domain, change, xml, after, read_cpu(after), warnings)
