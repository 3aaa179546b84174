"""What virtbench has: `workloads` and `labs`, each with its metrics or knobs, parameters and
defaults, tools and packages (built-in plugins and those of installed packages)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import typer

from virtbench import safetext
from virtbench.cli import consoles
from virtbench.cli.options import JsonOpt
from virtbench.model import better_text, direction_text, parse_better

if TYPE_CHECKING:
    from pydantic import BaseModel

    from virtbench.contract import Knob, Tool

__all__ = ["app", "labs", "workloads"]

app = typer.Typer()


@app.command()
def workloads(as_json: JsonOpt = False) -> None:
    """Every workload: metrics (unit, better), parameters and defaults, tools and packages."""
    from virtbench.plugins import all_workloads

    described: list[dict[str, Any]] = []
    for name, cls in all_workloads().items():
        described.append({
            "name": name, "description": cls.description,
            "metrics": [{"name": m.name, "unit": m.unit, "better": better_text(m.better),
                         "domain": m.value_domain.value,
                         "primary": m.primary, "description": m.description}
                        for m in cls.metrics],
            "knobs": _knobs_of(cls.knobs), "params": _params_of(cls.Params),
            "tools": _tools_of(cls.tools),
            "python_modules": [{"module": m, "pip": p} for m, p in cls.python_modules],
        })
    if as_json:
        sys.stdout.write(safetext.dumps(described, indent=2) + "\n")
        return
    console = consoles.console
    for w in described:  # plugins' text (entry points too): shown as written
        console.print(f"[bold]{safetext.markup(w['name'])}[/] — "
                      f"{safetext.markup(w['description'])}")
        for m in w["metrics"]:
            star = " (primary)" if m["primary"] else ""
            direction = direction_text(parse_better(m["better"], m["name"]))
            console.print(safetext.text(f"  metric {m['name']} [{m['unit']}, {direction}]{star}: "
                                        f"{m['description']}"), highlight=False)
        _print_params_and_tools(w)


def _params_of(model: type[BaseModel]) -> dict[str, dict[str, Any]]:
    """Each parameter's description and default ("(required)" when it has none)."""
    properties: dict[str, dict[str, Any]] = model.model_json_schema().get("properties", {})
    params: dict[str, dict[str, Any]] = {}
    for key, field in model.model_fields.items():
        if field.is_required():
            default: Any = "(required)"
        elif field.default_factory is not None:  # absent from the JSON schema
            default = field.default_factory()  # type: ignore[call-arg]
        else:
            default = properties.get(key, {}).get("default", field.default)
        params[key] = {"default": default,
                       "description": properties.get(key, {}).get("description", "")}
    return params


def _knobs_of(knobs: Sequence[Knob]) -> dict[str, dict[str, str]]:
    return {k.name: {"meaning": k.meaning, "values": k.accepts} for k in knobs}


def _tools_of(tools: Sequence[Tool]) -> list[dict[str, str]]:
    return [{"binary": t.binary, "debian_package": t.package} for t in tools]


def _print_params_and_tools(entry: dict[str, Any]) -> None:
    lines = [f"  knob   {name} ({knob['values']}): {knob['meaning']}"
             for name, knob in entry["knobs"].items()]
    lines += [f"  param  {key} = {p['default']!r}: {p['description']}"
              for key, p in entry["params"].items()]
    lines += [f"  tool   {t['binary']} (Debian package {t['debian_package']})"
              for t in entry["tools"]]
    for line in lines:
        consoles.console.print(safetext.text(line), highlight=False)


@app.command()
def labs(as_json: JsonOpt = False) -> None:
    """Every lab: the variant knobs it understands, its parameters and defaults, its tools."""
    from virtbench.plugins import all_labs

    described: list[dict[str, Any]] = []
    for name, cls in all_labs().items():
        described.append({
            "name": name, "description": cls.description, "switch_cost": cls.switch_cost,
            "knobs": _knobs_of(cls.knobs), "params": _params_of(cls.Params),
            "tools": _tools_of(cls.tools),
        })
    if as_json:
        sys.stdout.write(safetext.dumps(described, indent=2) + "\n")
        return
    console = consoles.console
    for lab in described:
        console.print(f"[bold]{safetext.markup(lab['name'])}[/] — "
                      f"{safetext.markup(lab['description'])} "
                      f"(switch cost: {safetext.markup(lab['switch_cost'])})")
        _print_params_and_tools(lab)
