"""Where the URL list comes from: the workload's params, a file, or the lab (validated)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from virtbench.loadgen.config import split_url
from virtbench.model import VirtbenchError
from virtbench.services import WebStack

__all__ = ["read_url_file", "resolve_urls"]


def read_url_file(path: Path, *, allow_remote: bool = False) -> list[str]:
    """One absolute http:// URL per line; blank lines and '#' comments are skipped."""
    from virtbench.inputs.yamlfile import read_text_file

    # bounded (16 MiB: ~150,000 URLs); a device or a FIFO without a writer: one line at once
    text = read_text_file(path, "web.load params.url_file", "URL list", max_bytes=16 << 20)
    urls = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            split_url(line, allow_remote=allow_remote)
        except ValueError as exc:
            raise VirtbenchError(f"web.load params.url_file {path}, line {number}: {exc}") from None
        urls.append(line)
    if not urls:
        raise VirtbenchError(f"web.load params.url_file {path}: no URL in the file")
    return urls


def resolve_urls(params: Any, web: WebStack | None) -> list[str]:
    """The URLs to load: params.urls, params.url_file, else the lab's pages through its cache
    (or, with ``via: origin``, the same pages from its origin)."""
    via = getattr(params, "via", "cache")
    if params.urls:
        for index, url in enumerate(params.urls):
            try:
                split_url(url, allow_remote=params.allow_remote)
            except ValueError as exc:
                raise VirtbenchError(f"web.load params.urls[{index}]: {exc}") from None
        urls = list(params.urls)
    elif params.url_file is not None:
        urls = read_url_file(params.url_file, allow_remote=params.allow_remote)
    elif web is not None:
        urls = list(web.origin_urls if via == "origin" else web.urls)
    elif via == "origin":
        raise VirtbenchError("web.load: via origin needs the 'web' lab (its origin's URLs); "
                             "with your own URLs give the origin's as params.urls")
    else:
        raise VirtbenchError(
            "web.load: no URLs: give params.urls or params.url_file, or run it in the 'web' lab")
    if params.max_urls is not None:
        urls = urls[: params.max_urls]
    return urls
