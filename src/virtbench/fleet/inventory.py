"""Hosts from an Ansible-style inventory (YAML or INI) or ``ssh://user@host:port`` URLs.

Read: hosts, groups (``children``), group and host variables, numeric ranges (``web[01:03]``),
and the connection variables ``ansible_host``, ``ansible_port``, ``ansible_user``,
``ansible_ssh_private_key_file``, ``ansible_ssh_common_args`` and ``ansible_ssh_extra_args``
(further ssh options, e.g. ``-o KexAlgorithms=...``; virtbench's own host-key options come first
and so win, as ssh takes an option's first value), plus ``virtbench_known_hosts`` (a known_hosts
file for these hosts). Variables apply from the outermost group to the innermost, host
variables last, as in Ansible. Passwords are not read: virtbench logs in with keys only and
stores no credential.
"""

from __future__ import annotations

import itertools
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ruamel.yaml.comments import CommentedMap

from virtbench.contract import not_an_option
from virtbench.inputs.ascii_numbers import DIGITS, parse_integer
from virtbench.inputs.yamlfile import YamlInputError, load_yaml, read_text_file
from virtbench.model import PORT_MAX, PORT_MIN, VirtbenchError

__all__ = ["MAX_HOSTS", "FleetHost", "InventoryError", "host_from_url", "load_inventory",
           "parse_inventory"]

_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")
_RANGE = re.compile(rf"\[({DIGITS}):({DIGITS})\]")
MAX_HOSTS = 10_000
"""Most hosts one inventory may name (ranges expanded): a fleet run opens an SSH connection and
a thread per host."""
MAX_GROUP_DEPTH = 64
"""Deepest chain of groups (children of children ...)."""
_SECRET_VARS = ("ansible_password", "ansible_ssh_pass", "ansible_become_password",
                "ansible_become_pass")


class InventoryError(VirtbenchError):
    """An inventory is invalid; the message names the file and line."""


@dataclass(frozen=True)
class FleetHost:
    """One machine of the fleet and how to reach it (no credential: key files by path)."""

    name: str
    address: str
    port: int = 22
    user: str | None = None
    key_file: str | None = None
    known_hosts: str | None = None
    ssh_args: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    variables: Mapping[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        return f"ssh://{self.user + '@' if self.user else ''}{self.address}:{self.port}"


def _shown(url: str) -> str:
    """The URL as a message says it: a password in it masked, as a store's (only on the way
    to an error: `run --check` imports no store module)."""
    from virtbench.store.redaction import shown

    return shown(url)


def host_from_url(url: str) -> FleetHost:
    """``ssh://[user@]host[:port]`` (the ``--host`` option); the name is the host part."""
    parts = urlsplit(url)
    if parts.scheme != "ssh" or not parts.hostname:
        raise InventoryError(f"--host {_shown(url)!r}: expected ssh://[user@]host[:port]")
    if parts.password:
        raise InventoryError(f"--host {_shown(url)!r}: no passwords in URLs; virtbench logs in "
                             "with keys (ssh-agent or an inventory's "
                             "ansible_ssh_private_key_file)")
    try:
        port = 22 if parts.port is None else parts.port
    except ValueError as exc:  # not a number, or beyond 65535
        raise InventoryError(f"--host {_shown(url)!r}: {exc}; a port is "
                             f"{PORT_MIN}-{PORT_MAX}") from None
    if not PORT_MIN <= port <= PORT_MAX:  # ssh://h:0 once meant port 22
        raise InventoryError(f"--host {_shown(url)!r}: port {port} is not "
                             f"{PORT_MIN}-{PORT_MAX}")
    try:
        not_an_option(parts.hostname, "host")
        not_an_option(parts.username or "", "user")
    except ValueError as exc:
        raise InventoryError(f"--host {_shown(url)!r}: {exc}") from None
    name = parts.hostname if port == 22 else f"{parts.hostname}:{port}"
    return FleetHost(name=name, address=parts.hostname, port=port, user=parts.username)


def expand_pattern(pattern: str, limit: int | None = None) -> list[str]:
    """``web[01:03]`` → web01, web02, web03 (zero padding kept); other names unchanged.

    The number of names is counted before any is made: more than ``limit`` (default
    MAX_HOSTS), or a range that runs backwards, is a ValueError naming the pattern.
    """
    limit = MAX_HOSTS if limit is None else limit
    count = 1
    for match in _RANGE.finditer(pattern):
        low, high = int(match.group(1)), int(match.group(2))
        if high < low:
            raise ValueError(f"host range {match.group(0)} in {pattern!r} runs backwards")
        count *= high - low + 1
        if count > limit:
            raise ValueError(f"host pattern {pattern!r} names more than {limit:,} hosts "
                             f"(an inventory holds at most {MAX_HOSTS:,})")
    return _expand(pattern)


def _expand(pattern: str) -> list[str]:
    pieces = _RANGE.split(pattern)  # text, low, high, text, low, high, ..., text
    choices: list[list[str]] = []
    for index in range(1, len(pieces), 3):
        low, high = pieces[index], pieces[index + 1]
        width = len(low) if low.startswith("0") else 0
        choices.append([str(n).zfill(width) for n in range(int(low), int(high) + 1)])
    texts = pieces[0::3]
    return ["".join(t + n for t, n in zip(texts, (*numbers, ""), strict=True))
            for numbers in itertools.product(*choices)]


class _Hosts:
    """Expands host patterns, counting every host the inventory names against MAX_HOSTS."""

    def __init__(self, source: str) -> None:
        self.source, self.named = source, 0

    def expand(self, pattern: str, line: int) -> list[str]:
        try:
            names = expand_pattern(pattern, MAX_HOSTS - self.named)
        except ValueError as exc:
            raise InventoryError(f"{self.source}:{line}: {exc}") from None
        self.named += len(names)
        for host in names:
            _check_name(host, self.source, line)
        return names


@dataclass
class _Group:
    name: str
    variables: dict[str, str] = field(default_factory=dict)
    hosts: dict[str, dict[str, str]] = field(default_factory=dict)
    children: list[str] = field(default_factory=list)
    lines: dict[str, int] = field(default_factory=dict)  # host -> line, for errors


def load_inventory(path: Path) -> list[FleetHost]:
    try:
        text = read_text_file(path, "inventory", "YAML or INI inventory")
    except YamlInputError as exc:
        raise InventoryError(str(exc)) from exc
    return parse_inventory(text, str(path))


def parse_inventory(text: str, source: str = "<inventory>") -> list[FleetHost]:
    """Every host of the inventory, in order of first appearance."""
    stripped = [ln.strip() for ln in text.splitlines()]
    first = next((ln for ln in stripped if ln and not ln.startswith(("#", ";"))), "")
    groups = (_parse_ini(text, source) if first.startswith("[") or "=" in first
              or (first and ":" not in first) else _parse_yaml(text, source))
    hosts = _resolve(groups, source)
    if not hosts:
        raise InventoryError(f"{source}: the inventory lists no hosts")
    return hosts


# ---- YAML ------------------------------------------------------------------------------------
def _parse_yaml(text: str, source: str) -> dict[str, _Group]:
    try:
        tree = load_yaml(text, source, "YAML inventory")
    except YamlInputError as exc:
        raise InventoryError(str(exc)) from exc
    if not isinstance(tree, CommentedMap):
        raise InventoryError(f"{source}: an inventory maps group names to groups "
                             "(e.g. all: {hosts: {...}})")
    groups: dict[str, _Group] = {}
    hosts = _Hosts(source)
    for name in tree:
        line = tree.lc.key(name)[0] + 1
        _yaml_group(_yaml_name(name, "group", source, line), tree[name], line, groups, source,
                    hosts)
    return groups


def _yaml_name(key: Any, what: str, source: str, line: int) -> str:
    """A group's or a host's name as a YAML key: text. ``~`` (null) would become a host
    named "None", ``1.10`` one named "1.1": both are refused, naming the line."""
    if key is None:
        raise InventoryError(f"{source}:{line}: a {what} without a name (YAML null, `~` or an "
                             f"empty key): write the {what}'s name")
    if not isinstance(key, str | int) or isinstance(key, bool):
        kind = ("a yes/no value" if isinstance(key, bool) else
                "a number" if isinstance(key, float) else f"a {type(key).__name__}")
        raise InventoryError(f"{source}:{line}: {what} {key!r} is {kind} in YAML, not a "
                             f"name: quote it ('{key}')")
    return str(key)


def _yaml_group(name: str, node: Any, line: int, groups: dict[str, _Group],
                source: str, hosts: _Hosts) -> None:
    group = groups.setdefault(name, _Group(name))
    if node is None:
        return
    if not isinstance(node, CommentedMap):
        raise InventoryError(f"{source}:{line}: group {name!r} must be a mapping with hosts, "
                             "vars or children")
    for key in node:
        key_line = node.lc.key(key)[0] + 1
        if key not in ("hosts", "vars", "children"):
            raise InventoryError(f"{source}:{key_line}: group {name!r}: unknown key {key!r} "
                                 "(expected hosts, vars or children)")
        value = node[key]
        if value is None:
            continue
        if not isinstance(value, CommentedMap):
            raise InventoryError(f"{source}:{key_line}: {name}.{key} must be a mapping")
        if key == "vars":
            group.variables.update(_variables(value, source, key_line, f"{name}.vars"))
        elif key == "hosts":
            for key in value:
                host_line = value.lc.key(key)[0] + 1
                pattern = _yaml_name(key, "host", source, host_line)
                variables = _variables(value[key] or {}, source, host_line, pattern)
                for host in hosts.expand(pattern, host_line):
                    group.hosts.setdefault(host, {}).update(variables)
                    group.lines[host] = host_line
        else:
            for child in value:
                child_line = value.lc.key(child)[0] + 1
                child_name = _yaml_name(child, "group", source, child_line)
                group.children.append(child_name)
                _yaml_group(child_name, value[child], child_line, groups, source, hosts)


def _variables(node: Any, source: str, line: int, where: str) -> dict[str, str]:
    if not isinstance(node, Mapping):
        raise InventoryError(f"{source}:{line}: {where}: variables must be a mapping")
    return {str(k): "" if v is None else str(v) for k, v in node.items()}


# ---- INI -------------------------------------------------------------------------------------
def _parse_ini(text: str, source: str) -> dict[str, _Group]:
    groups: dict[str, _Group] = {"all": _Group("all"), "ungrouped": _Group("ungrouped")}
    groups["all"].children.append("ungrouped")
    section, kind = "ungrouped", "hosts"
    hosts = _Hosts(source)
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section, kind = _ini_header(line, f"{source}:{number}", groups)
            continue
        group = groups[section]
        try:
            words = shlex.split(line, comments=True)
        except ValueError as exc:
            raise InventoryError(f"{source}:{number}: {exc}") from exc
        if kind == "children":
            group.children.append(words[0])
            groups.setdefault(words[0], _Group(words[0]))
        elif kind == "vars":
            key, sep, value = line.partition("=")
            if not sep:
                raise InventoryError(f"{source}:{number}: [{section}:vars] expects key=value")
            group.variables[key.strip()] = value.strip().strip("'\"")
        else:
            variables = _ini_host_variables(words, f"{source}:{number}")
            for host in hosts.expand(words[0], number):
                group.hosts.setdefault(host, {}).update(variables)
                group.lines[host] = number
    return groups


def _ini_header(line: str, where: str, groups: dict[str, _Group]) -> tuple[str, str]:
    """A section header's group (added to the groups, and to 'all') and its kind: hosts,
    vars or children."""
    if not line.endswith("]"):
        raise InventoryError(f"{where}: unclosed section header {line!r}")
    header = line[1:-1].strip()
    section, _, kind = header.partition(":")
    kind = kind or "hosts"
    if kind not in ("hosts", "vars", "children"):
        raise InventoryError(f"{where}: [{header}]: expected [group], "
                             "[group:vars] or [group:children]")
    groups.setdefault(section, _Group(section))
    if section != "all" and section not in groups["all"].children:
        groups["all"].children.append(section)
    return section, kind


def _ini_host_variables(words: list[str], where: str) -> dict[str, str]:
    """The key=value words after a host line's host pattern."""
    variables = {}
    for word in words[1:]:
        key, sep, value = word.partition("=")
        if not sep:
            raise InventoryError(f"{where}: host {words[0]!r}: expected key=value, "
                                 f"got {word!r}")
        variables[key] = value
    return variables


# ---- resolving variables -----------------------------------------------------------------------
def _check_name(host: str, source: str, line: int) -> None:
    if host.startswith("-"):
        raise InventoryError(f"{source}:{line}: {host!r} starts with '-': not a host name "
                             "(ssh would read it as an option)")
    if not _NAME.match(host):
        raise InventoryError(f"{source}:{line}: {host!r} is not a host name")


def _ancestry(groups: Mapping[str, _Group], source: str) -> dict[str, list[str]]:
    """Each group's chain of parents, outermost first (the order variables apply in).

    Memoised (a group reached by many paths is walked once) and bounded in depth; a cycle of
    groups is cut where it closes.
    """
    parents: dict[str, list[str]] = {name: [] for name in groups}
    for name, group in groups.items():
        for child in group.children:
            parents.setdefault(child, []).append(name)
    done: dict[str, list[str]] = {}

    def chain(name: str, seen: tuple[str, ...]) -> list[str]:
        if name in done:
            return done[name]
        if len(seen) >= MAX_GROUP_DEPTH:
            raise InventoryError(f"{source}: groups nested deeper than {MAX_GROUP_DEPTH} levels "
                                 f"(children of children ... of {name!r})")
        order: list[str] = []
        for parent in parents.get(name, []):
            if parent not in seen:
                order += [g for g in chain(parent, (*seen, name)) if g not in order]
        done[name] = [*order, name]
        return done[name]

    return {name: chain(name, ()) for name in groups}


def _resolve(groups: Mapping[str, _Group], source: str) -> list[FleetHost]:
    ancestry = _ancestry(groups, source)
    order: list[str] = []
    member_of: dict[str, list[str]] = {}
    host_vars: dict[str, dict[str, str]] = {}
    lines: dict[str, int] = {}
    for name, group in groups.items():
        for host, variables in group.hosts.items():
            if host not in order:
                order.append(host)
            member_of.setdefault(host, [])
            for g in ancestry[name]:
                if g not in member_of[host]:
                    member_of[host].append(g)
            host_vars.setdefault(host, {}).update(variables)
            lines.setdefault(host, group.lines[host])
    hosts = []
    for host in order:
        merged: dict[str, str] = {}
        for g in member_of[host]:
            merged.update(groups[g].variables if g in groups else {})
        merged.update(host_vars[host])
        hosts.append(_host(host, merged, tuple(g for g in member_of[host] if g != "all"),
                           source, lines[host]))
    return hosts


def _host(name: str, variables: dict[str, str], groups: tuple[str, ...], source: str,
          line: int) -> FleetHost:
    secrets = [k for k in _SECRET_VARS if k in variables]
    if secrets:
        raise InventoryError(f"{source}:{line}: host {name}: {', '.join(secrets)} is not "
                             "supported: virtbench logs in with keys only and never stores a "
                             "password (use ssh-agent or ansible_ssh_private_key_file)")
    port_text = variables.get("ansible_port", variables.get("ansible_ssh_port", "22"))
    try:
        port = parse_integer(port_text)
        if not PORT_MIN <= port <= PORT_MAX:
            raise ValueError
    except ValueError:
        raise InventoryError(f"{source}:{line}: host {name}: ansible_port {port_text!r} is "
                             "not a port number (1-65535)") from None
    key_file = variables.get("ansible_ssh_private_key_file") or None
    ssh_args: list[str] = []
    for var in ("ansible_ssh_common_args", "ansible_ssh_extra_args"):
        try:
            ssh_args += shlex.split(variables.get(var, ""))
        except ValueError as exc:
            raise InventoryError(f"{source}:{line}: host {name}: {var}: {exc}") from None
    address = variables.get("ansible_host") or variables.get("ansible_ssh_host") or name
    user = variables.get("ansible_user") or variables.get("ansible_ssh_user") or None
    try:
        not_an_option(address, "ansible_host")
        not_an_option(user or "", "ansible_user")
    except ValueError as exc:
        raise InventoryError(f"{source}:{line}: host {name}: {exc}") from None
    return FleetHost(
        name=name,
        address=address,
        port=port,
        user=user,
        key_file=str(Path(key_file).expanduser()) if key_file else None,
        known_hosts=variables.get("virtbench_known_hosts") or None,
        ssh_args=tuple(ssh_args),
        groups=groups,
        variables={k: v for k, v in variables.items() if not k.startswith("ansible_")},
    )


def select_hosts(hosts: Iterable[FleetHost], names: Iterable[str]) -> list[FleetHost]:
    """The hosts named (or members of the groups named), in inventory order."""
    wanted = set(names)
    chosen = [h for h in hosts if h.name in wanted or wanted & set(h.groups)]
    if not chosen:
        raise InventoryError(f"no host or group named {', '.join(sorted(wanted))}")
    return chosen
