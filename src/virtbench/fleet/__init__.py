"""Fleet: one experiment on many hosts at once, into one store, compared host by host."""

from virtbench.fleet.drive import FleetOutcome, FleetRunner, HostOutcome
from virtbench.fleet.inventory import FleetHost, host_from_url, load_inventory, parse_inventory

__all__ = ["FleetHost", "FleetOutcome", "FleetRunner", "HostOutcome", "host_from_url",
           "load_inventory", "parse_inventory"]
