"""The query values the pages take, checked: a bad one is a 400 naming its parameter.

Starlette reads ``?page=-1`` or ``?any_spec=no`` as whatever the code makes of it (page 1, yes);
the pages read their parameters through these instead. Parameters a page does not take are
left alone (a redirect keeps them as they were).
"""

from __future__ import annotations

import re

from starlette.datastructures import QueryParams

from virtbench.model import VirtbenchError

__all__ = ["QueryError", "flag", "once", "page_number"]

_DIGITS = re.compile(r"[0-9]{1,9}")


class QueryError(VirtbenchError):
    """A query value a page cannot take; the message names the parameter."""


def once(query: QueryParams, *names: str) -> None:
    """Each of ``names`` given at most once (``?page=1&page=2`` means neither)."""
    for name in names:
        count = len(query.getlist(name))
        if count > 1:
            raise QueryError(f"{name}: given {count} times; give it once")


def flag(query: QueryParams, name: str) -> bool:
    """A checkbox: ``1`` is on, ``0`` or no value is off; anything else is refused."""
    once(query, name)
    value = query.get(name, "")
    if value not in ("", "0", "1"):
        raise QueryError(f"{name}: {value[:40]!r} is not 1 (on) or 0 (off)")
    return value == "1"


def page_number(query: QueryParams, pages: int) -> int:
    """``page``: a whole number from 1 to ``pages`` (1 when not given)."""
    once(query, "page")
    value = query.get("page", "1")
    if not _DIGITS.fullmatch(value) or not 1 <= int(value) <= pages:
        raise QueryError(f"page: {value[:40]!r} is not a page number; this list has "
                         f"{pages} page{'s' if pages != 1 else ''} (1-{pages})")
    return int(value)
