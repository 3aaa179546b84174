"""Build a Target from an experiment's ``target:`` section."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import Field, ValidationError

from virtbench.contract import NoParams, Params, Port, SshWord
from virtbench.model import VirtbenchError
from virtbench.targets.local import LocalTarget, NetnsTarget
from virtbench.targets.target_contract import Target

__all__ = ["TARGET_KINDS", "TARGET_PARAMS", "make_target"]


class NetnsParams(Params):
    namespace: str = Field(min_length=1, description="network namespace the workloads run in")


class SshParams(Params):
    host: SshWord = Field(min_length=1, description="host name or address")
    user: SshWord | None = Field(None, description="login (default: ssh's)")
    port: Port = 22
    identity_file: str | None = Field(None, description="private key file")
    known_hosts: str | None = Field(None, description="known_hosts file for the host's key")
    connect_timeout_s: int = Field(10, ge=1, le=3600, description="ssh ConnectTimeout, s")


class LibvirtGuestParams(Params):
    domain: str = Field(min_length=1, description="the libvirt domain")
    connect: str | None = Field(None, description="libvirt URI")
    ssh_host: SshWord | None = Field(None, description="guest address: run commands over ssh")
    ssh_user: SshWord | None = None
    ssh_port: Port = 22
    identity_file: str | None = None
    known_hosts: str | None = None


TARGET_PARAMS: dict[str, type[Params]] = {
    "local": NoParams, "netns": NetnsParams, "ssh": SshParams,
    "libvirt-guest": LibvirtGuestParams,
}
"""Each target kind's parameters (an experiment's ``target: {kind, params}``)."""


def _ssh(**params: Any) -> Target:
    from virtbench.targets.ssh import from_params

    return from_params(**params)


def _libvirt_guest(**params: Any) -> Target:
    # libvirt-python is imported here: a host without it still runs every other target kind
    from virtbench.targets.libvirt_guest import from_params

    return from_params(**params)


TARGET_KINDS: dict[str, Callable[..., Target]] = {"ssh": _ssh, "libvirt-guest": _libvirt_guest}
"""Each remote kind's factory, taking the spec's params as keyword arguments."""


def make_target(spec: Any) -> Target:
    kind = spec.kind
    if kind not in TARGET_PARAMS:
        raise VirtbenchError(f"target.kind '{kind}' is unknown; known kinds: "
                             f"{', '.join(TARGET_PARAMS)}")
    try:
        params = TARGET_PARAMS[kind].model_validate(dict(spec.params)).model_dump()
    except ValidationError as exc:  # the experiment loader names the file line; this, the field
        raise VirtbenchError(f"target ({kind}) params: " + "; ".join(
            f"{'.'.join(map(str, e['loc'])) or '(top level)'}: {e['msg']}" for e in exc.errors())
                             ) from exc
    if kind == "local":
        return LocalTarget()
    if kind == "netns":
        return NetnsTarget(params["namespace"])
    try:
        target = TARGET_KINDS[kind](**params)
    except ImportError as exc:
        raise VirtbenchError(f"target kind '{kind}' is not available: {exc}") from exc
    except TypeError as exc:  # a parameter the factory does not take, or a missing one
        raise VirtbenchError(f"target ({kind}) params: {exc}") from exc
    return target
