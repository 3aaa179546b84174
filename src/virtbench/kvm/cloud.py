"""The same CPU configuration written as CloudStack and OpenStack settings.

Cloud-managed guests get a fresh domain XML at every start, so a hand-edited ``<cpu>`` does not
survive; these are the per-host settings that make the cloud generate it.
"""

from __future__ import annotations

from virtbench.kvm.domxml import DEFAULT_MODEL, CpuConfig

__all__ = ["cloudstack_properties", "nova_conf"]


def _cloud_cpu(cpu: CpuConfig) -> tuple[str, str | None, list[str]]:
    """(mode, model or None, flags) as both clouds take them: a domain without ``<cpu>`` is
    custom QEMU64, a disabled flag is written with a leading '-'."""
    mode = "custom" if cpu.mode == "default" else cpu.mode
    model = (cpu.model or DEFAULT_MODEL) if mode == "custom" else None
    return mode, model, [*cpu.required(), *(f"-{f}" for f in cpu.disabled())]


def cloudstack_properties(cpu: CpuConfig) -> str:
    """Lines for /etc/cloudstack/agent/agent.properties (restart cloudstack-agent after)."""
    mode, model, features = _cloud_cpu(cpu)
    lines = [f"guest.cpu.mode={mode}"]
    if model:
        lines.append(f"guest.cpu.model={model}")
    if features:  # space-separated; '-' asks the agent for policy='disable'
        lines.append("guest.cpu.features=" + " ".join(features))
    return "\n".join(lines)


def nova_conf(cpu: CpuConfig) -> str:
    """The ``[libvirt]`` section for nova.conf on each compute node (restart nova-compute)."""
    mode, model, flags = _cloud_cpu(cpu)
    lines = ["[libvirt]", f"cpu_mode = {mode}"]
    if model:
        lines.append(f"cpu_models = {model}")
    if flags:
        lines.append("cpu_model_extra_flags = " + ", ".join(flags))
    return "\n".join(lines)
