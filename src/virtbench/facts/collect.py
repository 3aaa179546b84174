"""System facts of a target: CPU, hypervisor, kernel, memory, tool versions.

Collected through the Target with ordinary commands, so the same code describes the local host,
an SSH machine or a guest. Missing commands leave their fact out rather than failing a run.
"""

from __future__ import annotations

import contextlib
import json
import re
from typing import Any

from virtbench.targets.base import CommandFailed, Target

__all__ = ["TOOL_VERSION_COMMANDS", "collect_facts", "parse_cpuinfo", "parse_meminfo"]

# tool -> argv printing its version (first line kept)
TOOL_VERSION_COMMANDS: dict[str, list[str]] = {
    "python3": ["python3", "--version"],
    "openssl": ["openssl", "version"],
    "ffmpeg": ["ffmpeg", "-hide_banner", "-version"],
    "qemu": ["qemu-system-x86_64", "--version"],
    "libvirt": ["virsh", "--version"],
    "ovs": ["ovs-vswitchd", "--version"],
    "iperf3": ["iperf3", "--version"],
    "irtt": ["irtt", "version"],
    "tshark": ["tshark", "--version"],
    "fio": ["fio", "--version"],
    "stress-ng": ["stress-ng", "--version"],
    "varnishd": ["varnishd", "-V"],
    "nginx": ["nginx", "-v"],
}


def _run(target: Target, argv: list[str], timeout: float = 10) -> str | None:
    try:
        result = target.run(argv, timeout=timeout, check=False)
    except (CommandFailed, OSError, TimeoutError):
        return None
    except Exception:  # subprocess.TimeoutExpired and friends: a fact is never worth a crash
        return None
    if result.returncode != 0:
        return None
    return result.stdout or result.stderr  # some tools (nginx -v) print versions on stderr


def parse_cpuinfo(text: str) -> dict[str, Any]:
    first: dict[str, str] = {}
    processors = 0
    for line in text.splitlines():
        if ":" not in line:
            continue
        key, value = (part.strip() for part in line.split(":", 1))
        if key == "processor":
            processors += 1
        first.setdefault(key, value)
    return {
        "model": first.get("model name", ""),
        "vendor": first.get("vendor_id", ""),
        "logical_cpus": processors,
        "flags": sorted(first.get("flags", "").split()),
        "microcode": first.get("microcode", ""),
    }


def parse_meminfo(text: str) -> dict[str, int]:
    out = {}
    for line in text.splitlines():
        match = re.match(r"(\w+):\s+(\d+) kB", line)
        if match and match.group(1) in ("MemTotal", "MemAvailable", "HugePages_Total"):
            out[match.group(1)] = int(match.group(2)) * 1024
    return out


def _hypervisor(target: Target, cpu_flags: list[str]) -> dict[str, Any]:
    info: dict[str, Any] = {"cpuid_hypervisor_bit": "hypervisor" in cpu_flags}
    lscpu = _run(target, ["lscpu", "--json"])
    if lscpu:
        try:
            fields = {f["field"].rstrip(":"): f.get("data") for f in json.loads(lscpu)["lscpu"]}
            # lscpu reads the CPUID hypervisor leaf (0x40000000) for the vendor.
            info["cpuid_vendor"] = fields.get("Hypervisor vendor")
            info["virtualization_type"] = fields.get("Virtualization type")
        except (ValueError, KeyError, TypeError):
            pass
    detect = _run(target, ["systemd-detect-virt"])
    if detect is not None:
        info["systemd_detect_virt"] = detect.strip()
    for name in ("sys_vendor", "product_name", "bios_vendor"):
        value = _run(target, ["cat", f"/sys/class/dmi/id/{name}"])
        if value is not None:
            info[f"dmi_{name}"] = value.strip()
    info["in_vm"] = bool(info["cpuid_hypervisor_bit"] or info.get("cpuid_vendor")
                         or info.get("systemd_detect_virt") not in (None, "none", ""))
    return info


def collect_facts(target: Target) -> dict[str, Any]:
    facts: dict[str, Any] = {"target": target.describe()}
    cpuinfo = _run(target, ["cat", "/proc/cpuinfo"])
    cpu = parse_cpuinfo(cpuinfo) if cpuinfo else {"flags": []}
    facts["cpu"] = cpu
    facts["hypervisor"] = _hypervisor(target, cpu["flags"])
    uname = _run(target, ["uname", "-srvm"])
    facts["kernel"] = uname.strip() if uname else ""
    meminfo = _run(target, ["cat", "/proc/meminfo"])
    facts["memory"] = parse_meminfo(meminfo) if meminfo else {}
    os_release = _run(target, ["cat", "/etc/os-release"])
    if os_release:
        pretty = re.search(r'^PRETTY_NAME="?([^"\n]*)', os_release, re.M)
        facts["os"] = pretty.group(1) if pretty else ""
    tools = {}
    for tool, argv in TOOL_VERSION_COMMANDS.items():
        if target.which(argv[0]) is None:
            continue
        output = _run(target, argv)
        if output:
            tools[tool] = output.strip().splitlines()[0][:200]
    facts["tools"] = tools
    python_packages = _run(target, [*target.python(), "-c",
                                    "import importlib.metadata as m, json; print(json.dumps("
                                    "{p: m.version(p) for p in ('crc32c', 'cryptography') "
                                    "if __import__('importlib.util').util.find_spec(p)}))"])
    if python_packages:
        with contextlib.suppress(ValueError, IndexError):
            facts["python_packages"] = json.loads(python_packages.strip().splitlines()[-1])
    return facts
