"""The base of the typed lab services and what a lab publishes of them: ``Service``, which
every kind subclasses, and ``Services``, one lab's services for one variant, found by kind.

Apart from the kinds themselves (virtbench.services, which re-exports these): the plugin
contracts and the runner's checks need only these, so a command that reads an experiment
(`run FILE --check`) does not build the dozen dataclasses of the kinds (about 10 ms of
start-up; docs/contributing.md, "The import budget").
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from virtbench.model import VirtbenchError

__all__ = ["Service", "Services", "kind_names"]


class Service:
    """Base of every service kind; a kind is a frozen dataclass subclassing it."""


S = TypeVar("S", bound=Service)


def kind_names(kinds: Iterable[type[Service]]) -> str:
    """``FilesystemService, ResourceLimits``, or ``nothing`` for none."""
    names = [kind.__name__ for kind in kinds]
    return ", ".join(names) if names else "nothing"


@dataclass(frozen=True)
class Services:
    """The services one lab published for one variant, found by kind."""

    lab: str = ""
    """The lab's name, for errors ("" when no lab published anything: a bare context)."""
    items: tuple[Service, ...] = ()

    def __post_init__(self) -> None:
        kinds = [type(item) for item in self.items]
        if len(set(kinds)) != len(kinds):
            raise VirtbenchError(f"lab {self.lab}: publishes one kind of service twice "
                                 f"({kind_names(tuple(kinds))})")

    def find(self, kind: type[S]) -> S | None:
        """The published ``kind``, or None when the lab has none."""
        for item in self.items:
            if isinstance(item, kind):
                return item
        return None

    def get(self, kind: type[S]) -> S:
        """The published ``kind``; a VirtbenchError naming the lab and the kind when missing."""
        item = self.find(kind)
        if item is not None:
            return item
        if not self.lab:
            raise VirtbenchError(f"no {kind.__name__}: no lab published services for this trial")
        raise VirtbenchError(f"lab {self.lab} provides no {kind.__name__} (it provides "
                             f"{kind_names(self.kinds())}); use a lab that provides it")

    def kinds(self) -> tuple[type[Service], ...]:
        return tuple(type(item) for item in self.items)

    def __iter__(self) -> Iterator[Service]:
        return iter(self.items)
