"""The cache's state at the start of a web.load trial: as the last trial left it, cold (the
lab restarts Varnish with empty storage) or warm (every URL fetched once beforehand)."""

from __future__ import annotations

import http.client

from virtbench.loadgen.config import split_url
from virtbench.model import VirtbenchError
from virtbench.services import WebStack

__all__ = ["prepare_cache"]

WARM_TIMEOUT_S = 60.0
"""Per request while warming: a first fetch goes to the origin."""


def prepare_cache(state: str, via: str, urls: list[str], web: WebStack | None
                  ) -> dict[str, str]:
    """Bring the lab's cache to ``state`` ('as-is', 'cold', 'warm'); notes on what was done."""
    if state == "as-is":
        return {}
    if via == "origin":
        raise VirtbenchError(f"web.load: cache_state {state} with via origin: the origin has "
                             "no cache to empty or fill (use cache_state: as-is)")
    if state == "cold":
        if web is None:
            raise VirtbenchError("web.load: cache_state cold needs the web lab (it restarts "
                                 "Varnish with empty storage before each trial)")
        return web.empty_cache()
    return warm(urls, web.host_header if web is not None else None)


def warm(urls: list[str], host_header: str | None) -> dict[str, str]:
    """Fetch each distinct URL once, so every page is in the cache when the load starts."""
    distinct = list(dict.fromkeys(urls))
    failed = []
    for url in distinct:
        origin, path = split_url(url)
        conn = http.client.HTTPConnection(origin.host, origin.port, timeout=WARM_TIMEOUT_S)
        try:
            conn.request("GET", path, headers={"Host": host_header} if host_header else {})
            response = conn.getresponse()
            response.read()
            if response.status >= 400:
                failed.append(f"{path}: HTTP {response.status}")
        except OSError as exc:
            failed.append(f"{path}: {exc}")
        finally:
            conn.close()
    if failed:
        raise VirtbenchError(f"web.load: warming the cache failed for {len(failed)} of "
                             f"{len(distinct)} URLs, first: {failed[0]}")
    return {"cache_warmed": f"{len(distinct)} URLs fetched once before the trial"}
