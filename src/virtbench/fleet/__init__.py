"""Fleet: one experiment on many hosts at once, into one store, compared host by host."""

from typing import TYPE_CHECKING, Any

from virtbench.fleet.inventory import FleetHost, host_from_url, load_inventory, parse_inventory

if TYPE_CHECKING:
    from virtbench.fleet.drive import FleetOutcome, FleetRunner, HostOutcome

__all__ = ["FleetHost", "FleetOutcome", "FleetRunner", "HostOutcome", "host_from_url",
           "load_inventory", "parse_inventory"]

_DRIVE = ("FleetOutcome", "FleetRunner", "HostOutcome")


def __getattr__(name: str) -> Any:
    # The runner behind the fleet (scipy, the store) loads when it is used, not when the
    # command line registers the fleet's commands.
    if name in _DRIVE:
        from virtbench.fleet import drive
        return getattr(drive, name)
    raise AttributeError(f"module 'virtbench.fleet' has no attribute {name!r}")
