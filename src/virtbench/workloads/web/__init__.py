"""Web workloads: HTTP load through the web lab's Varnish."""

from virtbench.workloads.web.load import WebLoad

WORKLOADS = (WebLoad,)

__all__ = ["WORKLOADS", "WebLoad"]
