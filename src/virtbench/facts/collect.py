"""System facts of a target: CPU, hypervisor, kernel, memory, tool versions.

Collected through the Target with ordinary commands, so the same code describes the local host,
an SSH machine or a guest. Missing commands leave their fact out rather than failing a run.
"""

from __future__ import annotations

import json
import re
import weakref
from typing import Any

from virtbench.facts.python_packages import PROBE, Remembered, parse_probe
from virtbench.facts.version_cache import load_boot, load_versions, save_boot, save_versions
from virtbench.targets.target_contract import Gathered, ProcResult, Target

__all__ = ["TOOL_VERSION_COMMANDS", "collect_facts", "parse_cpuinfo", "parse_meminfo"]

# tool -> argv printing its version (first line kept): the programs the labs and workloads run.
# Not tshark: virtbench reads captures itself (tshark is the tests' reference only), and
# `tshark --version` loads every dissector, 0.3 s of CPU per run, while the capture workload's
# own tools answer at once.
TOOL_VERSION_COMMANDS: dict[str, list[str]] = {
    "python3": ["python3", "--version"],
    "openssl": ["openssl", "version"],
    "ffmpeg": ["ffmpeg", "-hide_banner", "-version"],
    "qemu": ["qemu-system-x86_64", "--version"],
    "libvirt": ["virsh", "--version"],
    "ovs": ["ovs-vswitchd", "--version"],
    "iperf3": ["iperf3", "--version"],
    "irtt": ["irtt", "version"],
    "tcpdump": ["tcpdump", "--version"],
    "dumpcap": ["dumpcap", "--version"],
    "fio": ["fio", "--version"],
    "stress-ng": ["stress-ng", "--version"],
    "varnishd": ["varnishd", "-V"],
    "nginx": ["nginx", "-v"],
}


# The time limit is generous: a Python start-up in an emulated (TCG) guest on a busy host
# takes seconds.
_TIMEOUT_S = 30


def _outputs(results: list[ProcResult]) -> list[str | None]:
    """Each command's output (None: it failed); some tools (nginx -v) print versions on
    stderr."""
    return [(r.stdout or r.stderr) if r.returncode == 0 else None for r in results]


def _batch(target: Target, argvs: list[list[str]]) -> list[str | None]:
    """Each command's output (None: it failed); one round trip on a remote target."""
    try:
        return _outputs(target.run_batch(argvs, timeout=_TIMEOUT_S))
    except Exception:  # a timeout, a lost connection: a fact is never worth a crash
        return [None] * len(argvs)


def _gather(target: Target, files: list[str], binaries: list[str], argvs: list[list[str]],
            paths: list[str]) -> Gathered:
    try:
        return target.gather(files, binaries, argvs, paths=paths, timeout=_TIMEOUT_S)
    except Exception:  # a fact is never worth a crash
        return Gathered([None] * len(files), [None] * len(binaries), [], [None] * len(paths))


# Commands whose answers hold for one boot of a host (the kernel, the hypervisor under it).
BOOT_COMMANDS = (("lscpu", "--json"), ("systemd-detect-virt",), ("uname", "-srvm"))
BOOT_ID = "/proc/sys/kernel/random/boot_id"


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


_DMI = ("sys_vendor", "product_name", "bios_vendor")


def _hypervisor(cpu_flags: list[str], lscpu: str | None, detect: str | None,
                dmi: dict[str, str | None]) -> dict[str, Any]:
    info: dict[str, Any] = {"cpuid_hypervisor_bit": "hypervisor" in cpu_flags}
    if lscpu:
        try:
            fields = {f["field"].rstrip(":"): f.get("data") for f in json.loads(lscpu)["lscpu"]}
            # lscpu reads the CPUID hypervisor leaf (0x40000000) for the vendor.
            info["cpuid_vendor"] = fields.get("Hypervisor vendor")
            info["virtualization_type"] = fields.get("Virtualization type")
        except (ValueError, KeyError, TypeError):
            pass
    if detect is not None:
        info["systemd_detect_virt"] = detect.strip()
    for name, value in dmi.items():
        if value is not None:
            info[f"dmi_{name}"] = value.strip()
    info["in_vm"] = bool(info["cpuid_hypervisor_bit"] or info.get("cpuid_vendor")
                         or info.get("systemd_detect_virt") not in (None, "none", ""))
    return info


# target -> tool -> (identity of its binary, version line): the "after" facts of a run reuse
# the "before" versions of binaries that did not change (`tshark --version` alone costs ~0.2 s
# of CPU on the host, twice per run and host); they also come from and go to the cache of
# earlier runs (version_cache) where probing a binary costs no process (this machine, an SSH
# host's agent): asking every tool, the boot's commands and the packages' Python cost 0.4 s
# of CPU per run here.
_VERSIONS: weakref.WeakKeyDictionary[Target, dict[str, tuple[str, str]]] = (
    weakref.WeakKeyDictionary())


def _present_tools(target: Target, probes: list[str | None]) -> dict[str, str | None]:
    """The tools whose binary is on the target, each with its binary's identity (None: not
    known, or a script: its version is asked again every time)."""
    if not target.cheap_probes:
        return {tool: None for tool, argv in TOOL_VERSION_COMMANDS.items()
                if target.which(argv[0]) is not None}
    present: dict[str, str | None] = {}
    for tool, probe in zip(TOOL_VERSION_COMMANDS, probes, strict=True):
        lines = (probe or "").split("\n")
        if not lines[0].startswith("/"):
            continue
        script = len(lines) < 3 or lines[2].startswith("#!")
        present[tool] = None if script else "\n".join(lines[:2])
    return present


def _tool_versions(target: Target, present: dict[str, str | None]) -> dict[str, str]:
    """Each present tool's version line; asked on the target unless its binary is the very file
    whose version this target reported before."""
    known = _VERSIONS.get(target)
    if known is None:
        known = _VERSIONS[target] = (load_versions(target.machine()) if target.cheap_probes
                                     else {})
    ask = [tool for tool, identity in present.items()
           if identity is None or known.get(tool, ("", ""))[0] != identity]
    outputs = dict(zip(ask, _batch(target, [TOOL_VERSION_COMMANDS[tool] for tool in ask]),
                       strict=True))
    versions: dict[str, str] = {}
    learnt = False
    for tool, identity in present.items():
        if tool in outputs:
            output = outputs[tool]
            if not output:
                continue
            versions[tool] = output.strip().splitlines()[0][:200]
            if identity is not None:
                known[tool] = (identity, versions[tool])
                learnt = True
        else:
            versions[tool] = known[tool][1]
    if learnt and target.cheap_probes:
        save_versions(target.machine(), known)
    return versions


def _boot_outputs(target: Target, boot: dict[str, Any], boot_id: str | None,
                  asked: list[str | None]) -> list[str | None]:
    """BOOT_COMMANDS' outputs: those remembered for this boot of the host, else those just
    ``asked`` (or asked now), remembered for the boot."""
    if boot and boot_id is not None and boot["boot_id"] == boot_id:
        return list(boot["outputs"])
    outputs = asked or _batch(target, [list(argv) for argv in BOOT_COMMANDS])
    if target.cheap_probes and boot_id is not None and outputs[-1] is not None:
        save_boot(target.machine(), boot_id, outputs)
    return outputs


def collect_facts(target: Target) -> dict[str, Any]:
    """Every fact in at most two round trips on a remote target (a fleet of 50 hosts would
    otherwise spend its start in ~40 sequential ssh commands per host): files, binaries and
    the Python path's identities (read, probed and stat'ed by virtbench's agent itself there)
    with the commands not remembered for this boot or Python, then the versions of the tools
    whose binaries changed since asked."""
    facts: dict[str, Any] = {"target": target.describe()}
    files = ["/proc/cpuinfo", *[f"/sys/class/dmi/id/{name}" for name in _DMI],
             "/proc/meminfo", "/etc/os-release"]
    tools = [argv[0] for argv in TOOL_VERSION_COMMANDS.values()] if target.cheap_probes else []
    python = [*target.python(), "-c", PROBE]
    # a host's packages are asked again only when its Python or their directories
    # changed, the boot's commands only after a reboot; both are checked in the same round trip
    before = Remembered(target.machine(), python) if target.cheap_probes else None
    paths = before.paths if before is not None else []
    boot = load_boot(target.machine()) if target.cheap_probes else {}
    if len(boot.get("outputs", [])) != len(BOOT_COMMANDS):
        boot = {}
    commands = [] if boot else [list(argv) for argv in BOOT_COMMANDS]
    boot_file = [BOOT_ID] if target.cheap_probes else []  # (else a `cat` for nothing)
    found = _gather(target, files + boot_file, tools,
                    commands + ([] if paths else [python]), paths)
    cpuinfo, *dmi_texts, meminfo, os_release = found.files[:len(files)]
    boot_text = found.files[-1] if boot_file else None
    boot_id = boot_text.strip() if boot_text else None
    dmi = dict(zip(_DMI, dmi_texts, strict=True))
    outputs = _outputs(found.results) or [None] * (len(commands) + (0 if paths else 1))
    asked = outputs[len(commands):]
    lscpu, detect, uname = _boot_outputs(target, boot, boot_id, outputs[:len(commands)])
    cpu = parse_cpuinfo(cpuinfo) if cpuinfo else {"flags": []}
    facts["cpu"] = cpu
    facts["hypervisor"] = _hypervisor(cpu["flags"], lscpu, detect, dmi)
    facts["kernel"] = uname.strip() if uname else ""
    facts["memory"] = parse_meminfo(meminfo) if meminfo else {}
    if os_release:
        pretty = re.search(r'^PRETTY_NAME="?([^"\n]*)', os_release, re.M)
        facts["os"] = pretty.group(1) if pretty else ""
    facts["tools"] = _tool_versions(target, _present_tools(target, found.binaries))
    if before is not None and paths and before.holds(found.stats):
        facts["python_packages"] = before.packages
        return facts
    answer = parse_probe(asked[0] if asked else _batch(target, [python])[0])
    if answer is not None:
        facts["python_packages"] = answer[0]
        if before is not None:
            before.learn(*answer)
    return facts
