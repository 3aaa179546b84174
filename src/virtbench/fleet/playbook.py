"""`virtbench hosts playbook`: an Ansible playbook installing what an experiment needs."""

from __future__ import annotations

import io
from typing import Any

from ruamel.yaml import YAML

from virtbench.contract import Tool
from virtbench.plugins import get_lab, get_workload
from virtbench.spec.models import Experiment

__all__ = ["needed_tools", "playbook_yaml"]


def needed_tools(exp: Experiment) -> list[Tool]:
    """The tools of the experiment's lab and workloads, each binary once, in file order."""
    tools: dict[str, Tool] = {}
    for tool in get_lab(exp.lab.kind).tools:
        tools.setdefault(tool.binary, tool)
    for spec in exp.workloads:
        for tool in get_workload(spec.name).tools:
            tools.setdefault(tool.binary, tool)
    return list(tools.values())


def playbook_yaml(exp: Experiment, hosts: str = "all") -> str:
    """A playbook: the Debian packages, then a check that every tool binary is on PATH, so a
    run of it proves the hosts are ready.

    Packages go through ``apt-get install`` (idempotent: "0 newly installed" is no change)
    rather than the apt module, which needs python3-apt on every host.
    """
    tools = needed_tools(exp)
    packages = sorted({t.package for t in tools})
    tasks: list[dict[str, Any]] = []
    if packages:
        tasks.append({"name": f"Debian packages {exp.name} needs",
                      "ansible.builtin.command": {"argv": [
                          "apt-get", "-o", "DPkg::Lock::Timeout=300", "install", "-y", "-q",
                          "--no-install-recommends", *packages]},
                      "environment": {"DEBIAN_FRONTEND": "noninteractive"},
                      "register": "apt_result",
                      "changed_when": "' 0 newly installed' not in apt_result.stdout"})
    for tool in tools:
        tasks.append({"name": f"{tool.binary} is on PATH (from {tool.package})",
                      "ansible.builtin.command": {"argv": ["sh", "-c", 'command -v "$1"',
                                                           "sh", tool.binary]},
                      "changed_when": False})
    play = [{"name": f"hosts ready for virtbench experiment {exp.name}", "hosts": hosts,
             "become": True, "gather_facts": False, "tasks": tasks}]
    out = io.StringIO()
    out.write(f"# Written by `virtbench hosts playbook` for experiment {exp.name}.\n"
              "# ansible-playbook -i INVENTORY THIS_FILE\n")
    yaml = YAML()
    yaml.default_flow_style = False
    yaml.dump(play, out)
    return out.getvalue()
