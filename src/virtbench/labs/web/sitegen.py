"""Generate the static multisite origin: N sites × M pages of an exact size, from a seed.

The same (seed, sites, pages, size) always gives byte-identical pages. Each page is distinct
(its own title and a page-specific rotation of a seeded filler block), so every URL is its own
cache object, and generation writes 300 × 2 MB in about a second.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["generate_site", "page_paths"]


def page_paths(sites: int, pages_per_site: int) -> list[str]:
    """URL paths of every page, site-major: /site1/page1.html ..."""
    return [f"/site{s}/page{p}.html" for s in range(1, sites + 1)
            for p in range(1, pages_per_site + 1)]


def _page(seed: int, site: int, page: int, size: int, block: bytes) -> bytes:
    head = (f"<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>site {site} page "
            f"{page} (seed {seed})</title></head>\n<body><h1>Site {site}, page {page}</h1>\n<p>"
            ).encode()
    tail = b"</p>\n</body></html>\n"
    room = size - len(head) - len(tail)
    if room < 0:
        return (head + tail)[:size]
    offset = (site * 7919 + page * 104729) % len(block)
    filler = (block[offset:] + block[:offset]) * (room // len(block) + 1)
    return head + filler[:room] + tail


def generate_site(root: Path, *, seed: int, sites: int, pages_per_site: int,
                  page_bytes: int) -> list[str]:
    """Write the pages under ``root`` (creating it) and return their URL paths."""
    rng = np.random.default_rng(seed)
    # Printable filler (letters, digits, spaces) so the pages are valid text/html.
    alphabet = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz0123456789     ", dtype=np.uint8)
    block = alphabet[rng.integers(0, len(alphabet), size=min(page_bytes, 1 << 20))].tobytes()
    if not block:
        block = b" "
    paths = page_paths(sites, pages_per_site)
    for s in range(1, sites + 1):
        (root / f"site{s}").mkdir(parents=True, exist_ok=True)
        for p in range(1, pages_per_site + 1):
            (root / f"site{s}" / f"page{p}.html").write_bytes(
                _page(seed, s, p, page_bytes, block))
    index = "".join(f'<a href="{p}">{p}</a>\n' for p in paths[:1000])
    (root / "index.html").write_text(f"<!doctype html><html><body>\n{index}</body></html>\n")
    return paths
