"""The guest kernel's symbols for a profile recorded from a KVM host.

With KVM a guest's code runs on the host's CPUs in guest mode, and a sample taken there carries
the guest's instruction pointer: ``perf kvm --host --guest --guestkallsyms=K --guestmodules=M
record`` keeps such samples (perf_guest on) and ``perf script --guestkallsyms=K
--guestmodules=M`` names them from copies of the guest's ``/proc/kallsyms`` and
``/proc/modules`` (DSO ``[guest.kernel.kallsyms]``: folded frames ``NAME_[g]``). The copies
are read through the guest's target at the trial's start, bounded in size, and handed to perf
only as files: nothing here trusts their content beyond looking for one non-zero address.

Under TCG there are no guest-mode samples: QEMU translates the guest's code and runs it in its
vCPU threads, so the guest kernel's functions cannot be named from the host (the profile's
note says so). Which accelerator a guest has is what its lab publishes
(:class:`virtbench.services.GuestMachine`). docs/explain.md, "Guest kernel frames".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from virtbench.services import GuestMachine, Services
from virtbench.targets.target_contract import Target

__all__ = ["KALLSYMS_MAX_BYTES", "MODULES_MAX_BYTES", "GuestSymbols", "GuestSymbolsUnavailable",
           "accelerator", "fetch_guest_symbols", "no_guest_frames_note"]

KALLSYMS_MAX_BYTES = 64 << 20
"""The largest guest /proc/kallsyms copied (bytes): a distribution kernel's is about 10 MB."""
MODULES_MAX_BYTES = 1 << 20
"""The largest guest /proc/modules copied (bytes): a few hundred modules take ~20 kB."""
FETCH_TIMEOUT_S = 120.0
"""Time limit of each command in the guest that reads or sets what the copy needs (s)."""
KPTR_RESTRICT = "/proc/sys/kernel/kptr_restrict"
_SET_KPTR = 'echo "$1" > /proc/sys/kernel/kptr_restrict'
_ADDRESS = re.compile(r"^([0-9a-fA-F]{8,16})\s")
_LINES_LOOKED_AT = 1000


class GuestSymbolsUnavailable(Exception):
    """The guest's symbols could not be copied; the message says why (a profile note)."""


class _TooLarge(GuestSymbolsUnavailable):
    """A file of the guest beyond its bound."""


@dataclass(frozen=True)
class GuestSymbols:
    """The copies of the guest's kallsyms and modules, in the trial's perf folder."""

    kallsyms: Path
    modules: Path
    symbols: int
    """Lines of the kallsyms copy (one symbol each)."""
    notes: list[str] = field(default_factory=list)

    def perf_options(self) -> list[str]:
        """What ``perf kvm`` and ``perf script`` are given to name the guest's frames."""
        return [f"--guestkallsyms={self.kallsyms}", f"--guestmodules={self.modules}"]


def accelerator(services: Services | None, domain: str) -> str | None:
    """The accelerator the lab says guest ``domain`` runs under (``kvm``, ``qemu``), None when
    no lab says so for that domain."""
    machine = services.find(GuestMachine) if services is not None else None
    if machine is None or machine.domain != domain:
        return None
    return machine.virt_type


def no_guest_frames_note(virt_type: str | None) -> str:
    """Why a guest's profile holds no frame of the guest's kernel."""
    if virt_type is None:
        return ("guest kernel frames need KVM: the lab does not say which accelerator the guest "
                "runs under (services.GuestMachine), so it was recorded without the guest's "
                "symbols")
    return (f"guest kernel frames need KVM: the guest runs under {virt_type} (TCG), whose "
            "code QEMU translates and runs in its vCPU threads ([jit] frames), so no sample "
            "is in guest mode")


def _read_bounded(guest: Target, path: str, limit: int) -> str:
    result = guest.run(["head", "-c", str(limit + 1), path], timeout=FETCH_TIMEOUT_S,
                       check=False)
    if result.returncode != 0:
        why = (result.stderr.strip().splitlines() or [f"exit {result.returncode}"])[-1]
        raise GuestSymbolsUnavailable(f"the guest's {path} not read: {why[:200]}")
    if len(result.stdout.encode(errors="replace")) > limit:
        raise _TooLarge(f"the guest's {path} is larger than {limit >> 20} MiB: not copied")
    return result.stdout


def _addresses_shown(kallsyms: str) -> bool:
    """Whether the copy has real addresses (kptr_restrict hides them as zeros)."""
    for line in kallsyms.splitlines()[:_LINES_LOOKED_AT]:
        found = _ADDRESS.match(line)
        if found is not None and int(found[1], 16) != 0:
            return True
    return False


def _kptr_restrict(guest: Target) -> str | None:
    result = guest.run(["cat", KPTR_RESTRICT], timeout=FETCH_TIMEOUT_S, check=False)
    value = result.stdout.strip()
    return value if result.returncode == 0 and value.isdigit() and len(value) < 3 else None


def _set_kptr_restrict(guest: Target, value: str) -> bool:
    return guest.run(["sh", "-c", _SET_KPTR, "sh", value], timeout=FETCH_TIMEOUT_S,
                     check=False).returncode == 0


def _read_kallsyms(guest: Target, notes: list[str]) -> str:
    """The guest's kallsyms with its addresses: when kernel.kptr_restrict hides them, it is
    set to 0 for the copy and put back afterwards (root in the guest), and a note says so."""
    kallsyms = _read_bounded(guest, "/proc/kallsyms", KALLSYMS_MAX_BYTES)
    if _addresses_shown(kallsyms):
        return kallsyms
    old = _kptr_restrict(guest)
    if old is not None and old != "0" and _set_kptr_restrict(guest, "0"):
        try:
            kallsyms = _read_bounded(guest, "/proc/kallsyms", KALLSYMS_MAX_BYTES)
        finally:
            put_back = _set_kptr_restrict(guest, old)
        again = "put back" if put_back else "NOT put back (it could not be written)"
        notes.append(f"kernel.kptr_restrict was {old} in the guest: set to 0 while its "
                     f"/proc/kallsyms was copied, then {again}")
    if not _addresses_shown(kallsyms):
        raise GuestSymbolsUnavailable(
            f"the guest's /proc/kallsyms shows no addresses (kernel.kptr_restrict "
            f"{old if old is not None else 'unknown'}; reading them takes root in the guest)")
    return kallsyms


def fetch_guest_symbols(guest: Target, folder: Path) -> GuestSymbols:
    """Copy the guest's /proc/kallsyms and /proc/modules into ``folder`` (bounded: at most
    :data:`KALLSYMS_MAX_BYTES` and :data:`MODULES_MAX_BYTES`); GuestSymbolsUnavailable says
    why not."""
    notes: list[str] = []
    kallsyms = _read_kallsyms(guest, notes)
    try:
        modules = _read_bounded(guest, "/proc/modules", MODULES_MAX_BYTES)
    except _TooLarge:
        raise
    except GuestSymbolsUnavailable:
        modules = ""  # a kernel built without modules has no /proc/modules
        notes.append("the guest has no readable /proc/modules: perf is given an empty copy "
                     "(its kernel's own frames are named all the same)")
    copies = GuestSymbols(folder / "guest.kallsyms", folder / "guest.modules",
                          kallsyms.count("\n"), notes)
    copies.kallsyms.write_text(kallsyms, errors="replace")
    copies.modules.write_text(modules, errors="replace")
    return copies
