"""``virtbench assess`` (registered by the main CLI)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from virtbench.model import VirtbenchError
from virtbench.safetext import visible

if TYPE_CHECKING:
    from virtbench.assess.assessment import Assessment

__all__ = ["assess", "parse_budget"]

_BUDGET = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|min|h)?\s*$")


def parse_budget(text: str) -> float:
    """Seconds in ``90``, ``90s``, ``5m``, ``1h``; ``0`` is the rules alone, nothing
    measured (docs/assess.md)."""
    match = _BUDGET.match(text)
    if not match:
        raise VirtbenchError(f"--budget {text!r}: write a duration like 90s, 5m or 1h")
    from virtbench.contract import MAX_SECONDS  # pydantic: not for `virtbench --help`

    factor = {None: 1, "s": 1, "m": 60, "min": 60, "h": 3600}[match.group(2)]
    seconds = float(match.group(1)) * factor
    if not 0 <= seconds <= MAX_SECONDS:  # 10**20 h overflows the timers
        raise VirtbenchError(f"--budget {text!r}: give at most {MAX_SECONDS / 86400:g} days "
                             "(0: the checks alone, nothing measured)")
    return seconds


def assess(
    domain: Annotated[str | None, typer.Option(help="a libvirt domain to assess (default: "
                                                    "this machine)")] = None,
    connect: Annotated[str | None, typer.Option(
        "--connect", "-c", help="libvirt URI (default $LIBVIRT_DEFAULT_URI or "
                                "qemu:///system)")] = None,
    budget: Annotated[str, typer.Option(help="time for the whole assessment, e.g. 2m, 5m "
                                             "(measurements use what the checks leave)")] = "5m",
    store: Annotated[str, typer.Option(
        "--store", "-s", envvar="VIRTBENCH_STORE",
        help="SQLite file or postgresql:// URL; the measurements are a normal run")]
    = "virtbench.db",
    ssh: Annotated[str | None, typer.Option(
        help="with --domain: read the guest's /proc and /sys over SSH "
             "(user@host or user@host:port)")]
    = None,
    known_hosts: Annotated[str | None, typer.Option(help="known_hosts file for --ssh")] = None,
    identity: Annotated[str | None, typer.Option(help="private key for --ssh")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
    report: Annotated[Path | None, typer.Option(
        help="also write the HTML report (findings on top) here")] = None,
) -> None:
    """What is misconfigured here (or in DOMAIN), what fixing it buys — measured where
    possible, with CIs — and the exact change."""
    seconds = parse_budget(budget)
    # Imported here, not with the module: every other command's start-up would pay for the
    # assessment's statistics (scipy), store and runner.
    from virtbench.assess.assessment import assess_domain, assess_machine
    from virtbench.assess.assessment_output import findings_section, render_json, render_text
    from virtbench.kvm.access import parse_ssh_spec
    from virtbench.runner.engine import ProgressHook
    from virtbench.store import Store
    from virtbench.targets.ssh import SSHTarget

    st = Store(store)
    progress = ProgressHook()
    if not as_json:  # a JSON reader gets one document on stdout and nothing else
        typer.echo(visible(f"assessing {'domain ' + domain if domain else 'this machine'} "
                           f"within {seconds:g} s (measurements are stored in {st.shown})"),
                   err=True)
    if ssh and not domain:
        raise VirtbenchError("--ssh reads a domain's guest: give --domain too (without it, "
                             "virtbench assesses the machine it runs on)")
    guest = None
    if ssh:
        user, host, port = parse_ssh_spec(ssh)
        guest = SSHTarget(host, user=user, port=port, known_hosts=known_hosts,
                          identity_file=identity)
    try:
        result: Assessment = (
            assess_domain(st, domain, connect, seconds, progress, guest) if domain
            else assess_machine(st, seconds, progress=progress))
    finally:
        if guest is not None:
            guest.close()
    typer.echo(render_json(result) if as_json else render_text(result), nl=False)
    if report is not None:
        if result.run_id is None:
            raise VirtbenchError("nothing was measured, so there is no run to report on; "
                                 "the findings are printed above")
        from virtbench.analysis import analyse
        from virtbench.plugins import build_sections
        from virtbench.report.html import render_html

        analysis = analyse(st, [result.run_id])
        report.write_text(render_html(analysis, lead=[findings_section(result)],
                                      sections=build_sections(analysis)))
        typer.echo(f"wrote {report}", err=True)
