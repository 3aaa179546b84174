"""``virtbench kvm inventory | tune | rollback`` (mounted by the main CLI)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from virtbench import safetext
from virtbench.contract import MAX_SECONDS
from virtbench.inputs.values import number_parser
from virtbench.kvm.access import GuestAccess
from virtbench.kvm.apply import DomainTuner, state_key
from virtbench.kvm.cpumodels import ModelCatalog
from virtbench.kvm.domxml import CpuChange, domain_type
from virtbench.kvm.flag_inventory import (
    GuestCpu,
    MissingFlag,
    migration_note,
    missing_flags,
    read_guest_cpu,
)
from virtbench.kvm.flag_probes import serial_log_path
from virtbench.kvm.flags import parse_flag_list
from virtbench.kvm.hostcpu import HostCpu, read_host_cpu
from virtbench.kvm.sandbox_cli import app as sandbox_app
from virtbench.kvm.state import default_state
from virtbench.kvm.tuning_plan import make_plan
from virtbench.model import VirtbenchError
from virtbench.targets.libvirt_connection import libvirt_module, open_connection

__all__ = ["app"]

app = typer.Typer(help="Guest CPU flags of libvirt/KVM domains: inventory, tune, rollback.",
                  no_args_is_help=True)
app.add_typer(sandbox_app, name="sandbox")

ConnectOpt = Annotated[str | None, typer.Option(
    "--connect", "-c", help="libvirt URI (default $LIBVIRT_DEFAULT_URI or qemu:///system)")]
ShutdownOpt = Annotated[float, typer.Option(
    parser=number_parser(0, MAX_SECONDS), metavar="SECONDS",
    help="seconds of ACPI shutdown before destroy (0: destroy at once)")]


def _echo(message: str, err: bool = False) -> None:
    """A line of libvirt's, the guest's or the user's text, shown as written: control
    characters in a domain name, a CPU model or an XML diff appear as escapes (safetext)."""
    typer.echo(safetext.visible(message), err=err)


def _fail(exc: Exception) -> typer.Exit:
    _echo(f"error: {exc}", err=True)
    return typer.Exit(2)


def _lookup(conn: Any, name: str) -> Any:
    libvirt = libvirt_module()
    try:
        return conn.lookupByName(name)
    except libvirt.libvirtError as exc:
        raise VirtbenchError(f"no domain named '{name}' on {conn.getURI()}") from exc


@app.command()
def inventory(
    connect: ConnectOpt = None,
    domain: Annotated[str | None, typer.Option(help="domain whose guest CPU to resolve")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
) -> None:
    """Host CPU flags, a guest's effective flags, and what the guest is missing."""
    try:
        conn = open_connection(connect)
        dom = _lookup(conn, domain) if domain else None
        virttype = domain_type(dom.XMLDesc(0)) if dom is not None else None
        host = read_host_cpu(conn, virttype if virttype in ("kvm", "qemu") else None)
        catalog = ModelCatalog(conn, host.arch or "x86_64")
        guest = read_guest_cpu(dom, host, catalog) if dom is not None else None
    except VirtbenchError as exc:
        raise _fail(exc) from exc
    missing = missing_flags(host.flags, guest.flags) if guest else []
    if as_json:
        typer.echo(safetext.dumps(_inventory_document(host, guest, missing), indent=1))
        return
    _echo_host(host)
    if guest is None:
        _echo("\nhost flags: " + " ".join(sorted(host.flags)))
        return
    _echo(f"\nguest {guest.domain}: {guest.config.summary()} (resolved from {guest.source}"
          f" XML), {len(guest.flags)} flags")
    for note in guest.notes:
        _echo(f"note: {note}")
    _echo(f"\nflags the host has and {guest.domain} lacks ({len(missing)}):")
    for item in missing:
        _echo(f"  {item.flag:<16} {item.use}" if item.use else f"  {item.flag}")
    _echo(f"\nmigration: {migration_note(guest.config)}")


def _inventory_document(host: HostCpu, guest: GuestCpu | None,
                        missing: list[MissingFlag]) -> dict[str, Any]:
    """`kvm inventory --json`."""
    data: dict[str, Any] = {
        "uri": host.uri, "host": {
            "arch": host.arch, "model": host.model, "vendor": host.vendor,
            "flags": sorted(host.flags),
            "cpuinfo_flags": sorted(host.cpuinfo) if host.cpuinfo is not None else None,
            "virttype": host.virttype,
            "host_model": host.host_model.summary() if host.host_model else None,
            "host_model_flags": sorted(host.host_model_flags),
            "host_passthrough_supported": host.passthrough_supported,
            "notes": host.notes},
        "this_machine_is_a_guest": host.runs_in_guest,
    }
    if guest:
        data["guest"] = {"domain": guest.domain, "cpu": guest.config.summary(),
                         "source": guest.source, "flags": sorted(guest.flags),
                         "notes": guest.notes,
                         "missing": [m.__dict__ for m in missing],
                         "migration_note": migration_note(guest.config)}
    return data


def _echo_host(host: HostCpu) -> None:
    """The host CPU as libvirt and /proc/cpuinfo see it, for the terminal."""
    _echo(f"libvirt: {host.uri}")
    _echo(f"host CPU: {host.vendor or '?'} {host.model or '?'} ({host.arch}), "
          f"{len(host.flags)} flags (libvirt capabilities)")
    if host.cpuinfo is not None:
        _echo(f"/proc/cpuinfo of this machine: {len(host.cpuinfo)} flags"
              + ("; this machine is itself a guest (hypervisor flag)"
                 if host.runs_in_guest else ""))
    if host.host_model:
        _echo(f"host-model for {host.virttype}: {host.host_model.summary()}")
    if host.passthrough_supported is not None:
        _echo(f"host-passthrough for {host.virttype}: "
              f"{'supported' if host.passthrough_supported else 'NOT supported'}")
    for note in host.notes:
        _echo(f"note: {note}")
    if host.runs_in_guest and host.cpuinfo is not None:
        hidden = sorted(host.caps_flags - host.cpuinfo) if host.model else []
        _echo("flags visible to virtbench here: " + " ".join(sorted(host.cpuinfo)))
        if hidden:
            _echo("in libvirt's host view but not in /proc/cpuinfo: " + " ".join(hidden))


@app.command()
def tune(
    domain: Annotated[str, typer.Argument(
        help="the libvirt domain to tune (only this one is touched)")],
    require: Annotated[str | None, typer.Option(help="flags to require, e.g. aes,sse4.2")] = None,
    disable: Annotated[str | None, typer.Option(help="flags to hide from the guest")] = None,
    mode: Annotated[str | None, typer.Option(
        help="custom | host-model | host-passthrough | maximum")] = None,
    model: Annotated[str | None, typer.Option(help="named CPU model (mode custom)")] = None,
    apply: Annotated[bool, typer.Option("--apply", help="apply it (default: dry run)")] = False,
    persistent: Annotated[bool, typer.Option(
        "--persistent", help="define the tuned XML + restart (default: transient create)")]
    = False,
    ssh: Annotated[str | None, typer.Option(help="verify over SSH: [user@]host[:port]")] = None,
    known_hosts: Annotated[str | None, typer.Option(help="known_hosts file for --ssh")] = None,
    identity: Annotated[str | None, typer.Option(help="private key for --ssh")] = None,
    agent: Annotated[bool, typer.Option("--agent", help="verify through the QEMU guest agent")]
    = False,
    console_log: Annotated[Path | None, typer.Option(
        help="verify from a serial log file where the guest prints /proc/cpuinfo")] = None,
    no_verify: Annotated[bool, typer.Option(
        "--no-verify", help="apply without checking inside the guest")] = False,
    shutdown_timeout: ShutdownOpt = 60.0,
    boot_timeout: Annotated[float, typer.Option(
        parser=number_parser(0, MAX_SECONDS, low_open=True), metavar="SECONDS",
        help="seconds to wait for the guest")] = 300.0,
    connect: ConnectOpt = None,
) -> None:
    """Show (and with --apply, apply and verify) a tuned <cpu> for DOMAIN."""
    change = CpuChange(mode=mode, model=model, require=tuple(parse_flag_list(require)),
                       disable=tuple(parse_flag_list(disable)))
    if change.is_empty():
        raise _fail(VirtbenchError("nothing to change: give --require, --disable, --mode "
                                   "or --model"))
    try:
        conn = open_connection(connect)
        dom = _lookup(conn, domain)
        state = default_state()
        tuner = DomainTuner(conn, domain, state, shutdown_timeout=shutdown_timeout,
                            boot_timeout=boot_timeout, log=lambda line: _echo(f"> {line}"))
        saved = tuner.original()
        # Tune from the saved original, so repeated tunes never stack on each other.
        base = str(saved["live_xml"] or saved["inactive_xml"]) if saved else (
            dom.XMLDesc(libvirt_module().VIR_DOMAIN_XML_MIGRATABLE) if dom.isActive()
            else dom.XMLDesc(libvirt_module().VIR_DOMAIN_XML_INACTIVE))
        virttype = domain_type(base)
        host = read_host_cpu(conn, virttype if virttype in ("kvm", "qemu") else None)
        plan = make_plan(domain, base, change, host, ModelCatalog(conn, host.arch or "x86_64"))
    except VirtbenchError as exc:
        raise _fail(exc) from exc
    _echo(plan.diff or "(no change to the XML)")
    for warning in plan.warnings:
        _echo(f"warning: {warning}")
    _echo("\nCloudStack (/etc/cloudstack/agent/agent.properties on each KVM host):")
    _echo(plan.cloudstack())
    _echo("\nOpenStack (nova.conf on each compute node):")
    _echo(plan.nova())
    _echo(f"\nmigration: {migration_note(plan.cpu)}")
    if not apply:
        _echo("\ndry run: nothing changed (add --apply)")
        return
    access = GuestAccess(ssh=ssh, known_hosts=known_hosts, identity_file=identity, agent=agent,
                         console_log=console_log)
    if access.describe() == "none" and not no_verify:
        log = serial_log_path(base)
        raise _fail(VirtbenchError(
            "cannot verify inside the guest: give --ssh USER@ADDRESS, --agent (qemu-guest-agent "
            "in the guest) or --console-log"
            + (f" (the domain logs its serial port to {log})" if log else "")
            + ", or --no-verify"))
    try:
        result = tuner.apply(plan.after_xml, persistent=persistent,
                             probe=access.probe(conn, domain),
                             expect_present=plan.change.require,
                             expect_absent=plan.change.disable)
    except VirtbenchError as exc:
        raise _fail(exc) from exc
    _echo(f"applied ({result.mode}); verified by {result.verified_by}. "
               f"Undo with: virtbench kvm rollback {domain}"
               + (f" --connect {connect}" if connect else ""))


@app.command()
def rollback(
    domain: Annotated[str | None, typer.Argument(help="domain to restore")] = None,
    list_saved: Annotated[bool, typer.Option("--list", help="list saved originals")] = False,
    shutdown_timeout: ShutdownOpt = 60.0,
    connect: ConnectOpt = None,
) -> None:
    """Restore DOMAIN's original XML saved by `tune --apply` (and start it if it ran)."""
    state = default_state()
    if list_saved or domain is None:
        for key in state.keys("kvm-original:"):
            saved = state.load(key) or {}
            _echo(f"{saved.get('domain')}  {saved.get('uri')}  saved {saved.get('saved_at')}"
                       f"  phase {saved.get('phase')}")
        return
    try:
        conn = open_connection(connect)
        tuner = DomainTuner(conn, domain, state, shutdown_timeout=shutdown_timeout,
                            log=lambda line: _echo(f"> {line}"))
        if not tuner.rollback():
            raise VirtbenchError(f"no saved original for '{domain}' on {conn.getURI()} "
                                 f"(key {state_key(conn.getURI(), tuner.uuid)})")
    except VirtbenchError as exc:
        raise _fail(exc) from exc

