"""``virtbench kvm sandbox up | down | status`` (mounted by ``kvm.cli``)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Annotated, cast

import typer

from virtbench import safetext
from virtbench.inputs.values import port_number
from virtbench.kvm.sandbox import (
    DEFAULT_DIR,
    DEFAULT_DOMAIN,
    DEFAULT_PORT,
    Sandbox,
    SandboxInfo,
    VirtType,
)
from virtbench.model import VirtbenchError

__all__ = ["app"]

app = typer.Typer(help="A throwaway Debian guest in a private libvirtd, to try `kvm` and "
                       "`assess --domain` on.", no_args_is_help=True)

DirOpt = Annotated[Path, typer.Option(
    "--dir", help="sandbox directory (image cache, keys, daemon state)")]


def _show(info: SandboxInfo, as_json: bool) -> None:
    if as_json:
        typer.echo(safetext.dumps(asdict(info), indent=1))
        return
    typer.echo(f"domain {info.domain} ({info.virt_type}) answers over ssh {info.ssh}\n"
               f"  known_hosts {info.known_hosts}\n  identity    {info.identity}\n"
               f"  console     {info.console_log}\n"
               f"export LIBVIRT_DEFAULT_URI='{info.uri}'")


@app.command()
def up(
    directory: DirOpt = DEFAULT_DIR,
    domain: Annotated[str, typer.Option(help="domain name")] = DEFAULT_DOMAIN,
    port: Annotated[int, typer.Option(parser=port_number, metavar="PORT",
                                      help="SSH port on 127.0.0.1")] = DEFAULT_PORT,
    virt_type: Annotated[str, typer.Option(
        help="auto (KVM when /dev/kvm boots it, else TCG) | kvm | qemu (TCG)")] = "auto",
    memory: Annotated[int, typer.Option(min=64, max=1 << 20, help="guest memory, MiB")] = 768,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Build (once) and boot the guest; prints its SSH access and libvirt URI."""
    if virt_type not in ("auto", "kvm", "qemu"):
        raise VirtbenchError("--virt-type must be auto, kvm or qemu")
    info = Sandbox(directory).up(domain=domain, port=port,
                                 virt_type=cast(VirtType, virt_type), memory_mib=memory)
    _show(info, as_json)


@app.command()
def down(directory: DirOpt = DEFAULT_DIR) -> None:
    """Remove the guest, its private libvirtd and its keys (the image stays cached)."""
    typer.echo("sandbox removed" if Sandbox(directory).down() else "no sandbox was running")


@app.command()
def status(directory: DirOpt = DEFAULT_DIR,
           as_json: Annotated[bool, typer.Option("--json")] = False,
           uri: Annotated[bool, typer.Option(
               "--uri", help="print only the libvirt URI (for LIBVIRT_DEFAULT_URI)")] = False,
           ) -> None:
    """The running sandbox's access, or exit 1 when none runs."""
    info = Sandbox(directory).info()
    if info is None:
        typer.echo("no sandbox running", err=True)
        raise typer.Exit(1)
    if uri:
        typer.echo(info.uri)
        return
    _show(info, as_json)
