"""Interface packet counters read with ``ip -s -j link`` (no tap, so free during a transfer)."""

from __future__ import annotations

import json

from virtbench.model import VirtbenchError
from virtbench.targets.target_contract import Target

__all__ = ["link_counter", "tx_packets"]


def tx_packets(target: Target, iface: str) -> int:
    """Packets ``iface`` has transmitted so far (stats64.tx.packets) as seen in ``target``."""
    return link_counter(target, iface, "tx")


def link_counter(target: Target, iface: str, direction: str, field: str = "packets") -> int:
    """``iface``'s stats64 counter ``field`` (packets, dropped, …) of ``direction`` ("tx": sent,
    "rx": received) so far, as seen in ``target``."""
    res = target.run(["ip", "-s", "-j", "link", "show", "dev", iface], check=False)
    if res.returncode != 0:
        raise VirtbenchError(f"cannot read counters of interface {iface}: {res.stderr.strip()}")
    try:
        return int(json.loads(res.stdout)[0]["stats64"][direction][field])
    except (ValueError, LookupError, TypeError) as exc:
        raise VirtbenchError(f"interface {iface}: no stats64.{direction}.{field} in 'ip -s -j "
                             f"link' output ({exc})") from exc
