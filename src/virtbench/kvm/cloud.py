"""The same CPU configuration written as CloudStack and OpenStack settings.

Cloud-managed guests get a fresh domain XML at every start, so a hand-edited ``<cpu>`` does not
survive; these are the per-host settings that make the cloud generate it.
"""

from __future__ import annotations

from virtbench.kvm.domxml import DEFAULT_MODEL, CpuConfig

__all__ = ["cloudstack_properties", "nova_conf"]


def cloudstack_properties(cpu: CpuConfig) -> str:
    """Lines for /etc/cloudstack/agent/agent.properties (restart cloudstack-agent after)."""
    mode = "custom" if cpu.mode == "default" else cpu.mode
    lines = [f"guest.cpu.mode={mode}"]
    if mode == "custom":
        lines.append(f"guest.cpu.model={cpu.model or DEFAULT_MODEL}")
    # Space-separated; a leading '-' asks the agent for policy='disable'.
    features = [*cpu.required(), *(f"-{f}" for f in cpu.disabled())]
    if features:
        lines.append("guest.cpu.features=" + " ".join(features))
    return "\n".join(lines)


def nova_conf(cpu: CpuConfig) -> str:
    """The ``[libvirt]`` section for nova.conf on each compute node (restart nova-compute)."""
    mode = "custom" if cpu.mode == "default" else cpu.mode
    lines = ["[libvirt]", f"cpu_mode = {mode}"]
    if mode == "custom":
        lines.append(f"cpu_models = {cpu.model or DEFAULT_MODEL}")
    flags = [*cpu.required(), *(f"-{f}" for f in cpu.disabled())]
    if flags:
        lines.append("cpu_model_extra_flags = " + ", ".join(flags))
    return "\n".join(lines)
