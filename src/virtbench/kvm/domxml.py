"""Read and edit the ``<cpu>`` element of a libvirt domain XML, leaving every other byte alone.

The new ``<cpu>`` is built with xml.etree, serialised the way libvirt writes XML (single quotes,
two-space indent) and spliced into the original text in place of the old one, so the unified
diff a user reviews shows only CPU lines. A final check re-parses both documents and proves that
everything outside ``<cpu>`` is unchanged.
"""

from __future__ import annotations

import difflib
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from xml.sax.saxutils import escape

from virtbench.model import VirtbenchError

__all__ = [
    "CPU_MODES",
    "CpuChange",
    "CpuConfig",
    "cpu_diff",
    "domain_name",
    "domain_type",
    "edit_cpu",
    "read_cpu",
    "render_element",
    "unified_diff",
]

CPU_MODES = ("custom", "host-model", "host-passthrough", "maximum")
DEFAULT_MODEL = "qemu64"
"""QEMU's x86-64 default CPU model, used when a domain has no ``<cpu>`` model at all."""


@dataclass
class CpuConfig:
    """A domain's ``<cpu>`` as libvirt would interpret it.

    ``mode`` is ``default`` when the domain names no CPU at all (QEMU then uses qemu64).
    ``features`` maps a libvirt flag name to its policy (require, disable, force, forbid, optional).
    """

    mode: str = "default"
    model: str | None = None
    match: str | None = None
    check: str | None = None
    fallback: str | None = None
    features: dict[str, str] = field(default_factory=dict)

    def required(self) -> list[str]:
        return [f for f, p in self.features.items() if p in ("require", "force")]

    def disabled(self) -> list[str]:
        return [f for f, p in self.features.items() if p in ("disable", "forbid")]

    def summary(self) -> str:
        parts = [f"mode={self.mode}"]
        if self.model:
            parts.append(f"model={self.model}")
        if self.required():
            parts.append("require=" + ",".join(self.required()))
        if self.disabled():
            parts.append("disable=" + ",".join(self.disabled()))
        return " ".join(parts)


@dataclass(frozen=True)
class CpuChange:
    """What to change in ``<cpu>``; None/empty keeps the current value.

    Changing ``mode`` drops the features of the old configuration (they were chosen for it);
    keeping the mode keeps them and adds/overrides the requested ones.
    """

    mode: str | None = None
    model: str | None = None
    require: tuple[str, ...] = ()
    disable: tuple[str, ...] = ()

    def is_empty(self) -> bool:
        return not (self.mode or self.model or self.require or self.disable)


def _parse(xml: str) -> ET.Element:
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as exc:
        raise VirtbenchError(f"domain XML does not parse: {exc}") from exc
    if root.tag != "domain":
        raise VirtbenchError(f"expected a <domain> document, got <{root.tag}>")
    return root


def domain_name(xml: str) -> str:
    return _parse(xml).findtext("name") or ""


def domain_type(xml: str) -> str:
    """``kvm``, ``qemu`` (TCG), ``test``...: the ``type`` attribute of ``<domain>``."""
    return _parse(xml).get("type", "")


def _config_from_element(cpu: ET.Element | None) -> CpuConfig:
    if cpu is None:
        return CpuConfig()
    model_el = cpu.find("model")
    model = (model_el.text or "").strip() or None if model_el is not None else None
    mode = cpu.get("mode") or ("custom" if model else "default")
    features = {f.get("name", ""): f.get("policy", "require") for f in cpu.findall("feature")}
    return CpuConfig(
        mode=mode,
        model=model,
        match=cpu.get("match"),
        check=cpu.get("check"),
        fallback=model_el.get("fallback") if model_el is not None else None,
        features=features,
    )


def read_cpu(xml: str) -> CpuConfig:
    """The ``<cpu>`` configuration of a domain XML."""
    return _config_from_element(_parse(xml).find("cpu"))


def _new_cpu_element(old: ET.Element | None, change: CpuChange) -> ET.Element:
    current = _config_from_element(old)
    mode = _new_mode(current, change)
    mode_changed = mode != (current.mode if current.mode != "default" else "custom")
    cpu = ET.Element("cpu")
    _set_cpu_attributes(cpu, mode, current, mode_changed)
    if mode == "custom":
        model = ET.SubElement(cpu, "model")
        model.set("fallback", current.fallback or "allow")
        model.text = change.model or current.model or DEFAULT_MODEL
    elif mode == "host-model":
        ET.SubElement(cpu, "model").set("fallback", "allow")
    # Keep everything else the old <cpu> had (topology, cache, numa, vendor for custom).
    for child in old if old is not None else ():
        if child.tag not in ("model", "feature") and (child.tag != "vendor" or mode == "custom"):
            cpu.append(child)
    features: dict[str, str] = {} if mode_changed else dict(current.features)
    features |= dict.fromkeys(change.disable, "disable")
    features |= dict.fromkeys(change.require, "require")
    _add_features(cpu, features)
    return cpu


def _new_mode(current: CpuConfig, change: CpuChange) -> str:
    """The mode of the changed ``<cpu>`` (the hypervisor's default becomes 'custom')."""
    mode = change.mode or current.mode
    if mode not in (*CPU_MODES, "default"):
        raise VirtbenchError(f"cpu mode '{mode}' is not one of {', '.join(CPU_MODES)}")
    if mode == "default":
        # Features need a model; the hypervisor's default model makes the intent explicit.
        mode = "custom"
    if change.model and mode != "custom":
        raise VirtbenchError(f"--model/cpu_model needs mode 'custom', not '{mode}'")
    return mode


def _set_cpu_attributes(cpu: ET.Element, mode: str, current: CpuConfig,
                        mode_changed: bool) -> None:
    """``mode``, ``match`` (custom) and ``check`` (the old one while the mode stays)."""
    cpu.set("mode", mode)
    if mode == "custom":
        cpu.set("match", current.match or "exact")
    if current.check and not mode_changed:
        cpu.set("check", current.check)
    elif mode in ("custom", "host-model"):
        # 'full' makes libvirt refuse CPUs the hypervisor adjusts (e.g. TCG's extra flags).
        cpu.set("check", "partial" if mode == "host-model" else "none")
    elif mode == "host-passthrough":
        cpu.set("check", "none")


def _add_features(cpu: ET.Element, features: dict[str, str]) -> None:
    """A ``<feature>`` per flag and policy, before ``<numa>`` as libvirt lists them (a readable
    diff)."""
    for flag, policy in features.items():
        el = ET.Element("feature", {"policy": policy, "name": flag})
        numa = cpu.find("numa")
        if numa is not None:
            cpu.insert(list(cpu).index(numa), el)
        else:
            cpu.append(el)


def render_element(el: ET.Element, indent: str, step: str = "  ") -> str:
    """Serialise like libvirt does: single-quoted attributes, one element per line."""
    attrs = "".join(
        f" {k}='{escape(v, {chr(39): '&apos;'})}'" for k, v in el.attrib.items()
    )
    text = (el.text or "").strip()
    children = list(el)
    if not children and not text:
        return f"{indent}<{el.tag}{attrs}/>"
    if not children:
        return f"{indent}<{el.tag}{attrs}>{escape(text)}</{el.tag}>"
    inner = "\n".join(render_element(c, indent + step, step) for c in children)
    return f"{indent}<{el.tag}{attrs}>\n{inner}\n{indent}</{el.tag}>"


_CPU_START = re.compile(r"<cpu(?=[\s/>])")


def _cpu_span(xml: str) -> tuple[int, int] | None:
    """(start, end) offsets of the domain-level ``<cpu>...</cpu>`` element in ``xml``."""
    match = _CPU_START.search(xml)
    if match is None:
        return None
    start = match.start()
    tag_end = xml.index(">", start)
    if xml[tag_end - 1] == "/":
        return start, tag_end + 1
    close = xml.index("</cpu>", tag_end)
    return start, close + len("</cpu>")


def _without_cpu(root: ET.Element) -> bytes:
    for cpu in root.findall("cpu"):
        root.remove(cpu)
    for el in root.iter():
        # Whitespace-only text is layout, not content.
        if el.text is not None and not el.text.strip():
            el.text = None
        if el.tail is not None and not el.tail.strip():
            el.tail = None
    return ET.tostring(root)


def edit_cpu(xml: str, change: CpuChange) -> str:
    """Return ``xml`` with its ``<cpu>`` changed as ``change`` says; nothing else differs."""
    root = _parse(xml)
    new_cpu = _new_cpu_element(root.find("cpu"), change)
    span = _cpu_span(xml)
    if span is not None:
        start, end = span
        line_start = xml.rfind("\n", 0, start) + 1
        indent = xml[line_start:start] if not xml[line_start:start].strip() else "  "
        rendered = render_element(new_cpu, indent).lstrip()
        result = xml[:start] + rendered + xml[end:]
    else:
        anchor = re.search(r"^([ \t]*)<(clock|on_poweroff|devices)[\s>]", xml, re.M)
        if anchor is None:
            anchor = re.search(r"^([ \t]*)</domain>", xml, re.M)
            if anchor is None:
                raise VirtbenchError("domain XML has no </domain> end tag")
            indent = anchor.group(1) + "  "
        else:
            indent = anchor.group(1)
        result = (xml[: anchor.start()] + render_element(new_cpu, indent) + "\n"
                  + xml[anchor.start():])
    if _without_cpu(_parse(result)) != _without_cpu(_parse(xml)):
        raise VirtbenchError("internal error: editing <cpu> changed other parts of the XML")
    return result


def unified_diff(before: str, after: str, name: str) -> str:
    """A unified diff of two domain XMLs, labelled with the domain's name."""
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"{name} (current)",
            tofile=f"{name} (tuned)",
        )
    )


def cpu_diff(a: str, b: str) -> bool:
    """True when two domain XMLs configure different CPUs."""
    x, y = read_cpu(a), read_cpu(b)
    return (x.mode, x.model, x.features) != (y.mode, y.model, y.features)
