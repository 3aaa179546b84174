"""Web lab: nginx / WordPress origins behind Varnish with storage variants."""

from virtbench.labs.web.lab import WebLab

LABS = (WebLab,)

__all__ = ["LABS", "WebLab"]
