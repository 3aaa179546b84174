"""A store location as every output shows it: its passwords masked.

A PostgreSQL URL may carry a password: ``postgresql://user:PASSWORD@host/db``, or a query
parameter ``?password=`` (``sslpassword=``, any key naming a password). Whatever virtbench
prints, logs, stores or puts in an error names a store through :func:`shown`
(``postgresql://user:***@host/db``, the password as SQLAlchemy's
``URL.render_as_string(hide_password=True)`` masks it, the query's passwords too), and passes a
database driver's message through :func:`scrubbed`, which masks every password of the location
wherever it appears. :func:`check_location` refuses the locations that would hand a password
to something that prints it. Nothing here imports SQLAlchemy: the SQLite read path must not
(store/sqlite_reader.py).

The password of a URL runs from the ``:`` after the user name (SQLAlchemy's user name: up to
the first ``:`` or ``/``) to the last ``@``. SQLAlchemy ends it at the first ``@``: a password
written with an unencoded ``@`` would be split, its rest taken for the host and printed by the
driver's error (``could not translate host name``), so such a URL is refused, and shown masked
up to the last ``@``.

A libpq connection string (``host=h user=u password=p dbname=d``) is no store location: it
would be opened as a SQLite file of that name, the password in the file's name. It is refused;
its ``password=`` values are masked like a URL's.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, unquote_plus

from virtbench.errors import VirtbenchError

__all__ = ["MASK", "check_location", "scrubbed", "shown"]

MASK = "***"

_SCHEME = re.compile(r"[A-Za-z][\w+.-]*:/*")
_USER = re.compile(r"[^:/]*")
_PARAMETER = re.compile(r"(?<=[?&])([^=&?]*)=([^&]*)")
_CONNINFO_PAIR = re.compile(r"\s*(\w+)\s*=\s*('(?:[^'\\]|\\.)*'|[^\s']*)\s*")
_CONNINFO_PASSWORD = re.compile(r"(\w*password\s*=\s*)('(?:[^'\\]|\\.)*'?|\S*)", re.IGNORECASE)
# libpq's connection keywords (PostgreSQL 15, "Parameter Key Words"): a location made only of
# KEY=VALUE pairs of these is a connection string, not a file name.
_LIBPQ_KEYWORDS = frozenset((
    "host", "hostaddr", "port", "dbname", "user", "password", "passfile", "require_auth",
    "channel_binding", "connect_timeout", "client_encoding", "options", "application_name",
    "fallback_application_name", "keepalives", "keepalives_idle", "keepalives_interval",
    "keepalives_count", "tcp_user_timeout", "replication", "gssencmode", "sslmode", "requiressl",
    "sslcompression", "sslcert", "sslkey", "sslpassword", "sslcertmode", "sslrootcert", "sslcrl",
    "sslcrldir", "sslsni", "requirepeer", "ssl_min_protocol_version", "ssl_max_protocol_version",
    "krbsrvname", "gsslib", "gssdelegation", "service", "target_session_attrs",
    "load_balance_hosts",
))
_FIX = "give postgresql://user@host[:port]/dbname, the password in PGPASSWORD or ~/.pgpass"


def _is_url(location: str) -> bool:
    return "://" in location or location[:8].lower() == "postgres"


def _password_span(location: str) -> tuple[int, int] | None:
    """Where a URL's password is (start, end: the last ``@``), or None when it has none."""
    scheme = _SCHEME.match(location)
    if scheme is None or not _is_url(location):
        return None
    user = _USER.match(location, scheme.end())
    assert user is not None  # the pattern matches the empty string
    at = location.rfind("@")
    if location[user.end():user.end() + 1] != ":" or at <= user.end():
        return None
    return user.end() + 1, at


def _url_spans(location: str) -> list[tuple[int, int]]:
    """The URL's passwords (start, end), in order: the user's, then the values of the password
    parameters (``?password=``, ``&sslpassword=``, the key percent-encoded or not) wherever a
    ``?`` or ``&`` after it starts one."""
    span = _password_span(location)
    return ([span] if span else []) + [
        match.span(2) for match in _PARAMETER.finditer(location, span[1] if span else 0)
        if "password" in unquote_plus(match.group(1)).lower()]


def shown(location: str) -> str:
    """``location`` as any output may show it: every password in it replaced by ``***``."""
    if not _is_url(location):
        return _CONNINFO_PASSWORD.sub(lambda m: m.group(1) + MASK, location)
    for begin, end in reversed(_url_spans(location)):
        location = location[:begin] + MASK + location[end:]
    return location


def _secrets(location: str) -> set[str]:
    """Every password the location holds, as written and as decoded."""
    found: set[str] = set()
    if _is_url(location):
        for begin, end in _url_spans(location):
            found |= {location[begin:end], unquote(location[begin:end]),
                      unquote_plus(location[begin:end])}
    else:
        for match in _CONNINFO_PASSWORD.finditer(location):
            value = match.group(2)
            found |= {value, re.sub(r"\\(.)", r"\1", value.strip("'"))}
    return {secret for secret in found if secret}


def scrubbed(text: str, location: str) -> str:
    """``text`` (a driver's message about ``location``) with each of its passwords masked."""
    for secret in sorted(_secrets(location), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def check_location(location: str) -> None:
    """Refuse a location whose password something would print: a libpq connection string, a
    ``postgres…`` location that is no URL, a password holding an unencoded ``@``."""
    if _is_conninfo(location):
        raise VirtbenchError(f"cannot open result store {shown(location)!r}: a libpq "
                             f"connection string is not a store location; {_FIX}")
    if location[:8].lower() == "postgres" and "://" not in location:
        raise VirtbenchError(f"cannot open result store {shown(location)!r}: not a URL; {_FIX}")
    span = _password_span(location)
    if span is not None and "@" in location[span[0]:span[1]]:
        raise VirtbenchError(f"cannot open result store {shown(location)!r}: more than one '@' "
                             "after the user name (write an '@' of the password or the query as "
                             f"%40); better, {_FIX}")


def _is_conninfo(location: str) -> bool:
    """Only ``KEY=VALUE`` pairs, every key one of libpq's (a file name is left alone)."""
    pairs, position = [], 0
    while position < len(location):
        match = _CONNINFO_PAIR.match(location, position)
        if match is None or match.end() == position:
            return False
        pairs.append(match.group(1).lower())
        position = match.end()
    return bool(pairs) and all(key in _LIBPQ_KEYWORDS for key in pairs)
