"""Copying a guest's kernel symbols for perf kvm, through its target (no process: FakeTarget)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from virtbench.profiling.guest_symbols import (
    KALLSYMS_MAX_BYTES,
    GuestSymbolsUnavailable,
    accelerator,
    fetch_guest_symbols,
    no_guest_frames_note,
)
from virtbench.services import FilesystemService, GuestMachine, Services
from virtbench.targets.fake import FakeTarget
from virtbench.targets.target_contract import ProcResult

# the first lines of a guest's /proc/kallsyms, as root reads them and as kptr_restrict hides them
KALLSYMS = ("ffffffff81000000 T _stext\nffffffff81000000 T _text\n"
            "ffffffff81a0c3d0 T blk_mq_submit_bio\n"
            "ffffffffc0123000 t virtblk_probe\t[virtio_blk]\n")
HIDDEN = "".join("0000000000000000 " + line.split(" ", 1)[1] + "\n"
                 for line in KALLSYMS.splitlines())
MODULES = "virtio_blk 24576 2 - Live 0xffffffffc0123000\n"


def _guest(kallsyms: str = KALLSYMS) -> FakeTarget:
    return FakeTarget().add("head", "-c", "*", "/proc/kallsyms", stdout=kallsyms).add(
        "head", "-c", "*", "/proc/modules", stdout=MODULES)


def test_the_copies_are_files_given_to_perf(tmp_path: Path) -> None:
    guest = _guest()
    copies = fetch_guest_symbols(guest, tmp_path)
    assert copies.kallsyms.read_text() == KALLSYMS and copies.modules.read_text() == MODULES
    assert copies.symbols == 4 and copies.notes == []
    assert copies.perf_options() == [f"--guestkallsyms={tmp_path / 'guest.kallsyms'}",
                                     f"--guestmodules={tmp_path / 'guest.modules'}"]
    # each read is bounded in the guest: one byte more than allowed tells a file too large
    assert guest.calls[0].argv == ("head", "-c", str(KALLSYMS_MAX_BYTES + 1), "/proc/kallsyms")
    assert all(call.timeout is not None for call in guest.calls)


def test_a_file_beyond_its_bound_is_refused(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("virtbench.profiling.guest_symbols.KALLSYMS_MAX_BYTES", 100)
    with pytest.raises(GuestSymbolsUnavailable, match=r"/proc/kallsyms is larger than"):
        fetch_guest_symbols(_guest(KALLSYMS * 2), tmp_path)
    assert not (tmp_path / "guest.kallsyms").exists()


class _KptrGuest(FakeTarget):
    """A guest whose kallsyms shows addresses only while kernel.kptr_restrict is 0."""

    def __init__(self, restrict: str, writable: bool = True) -> None:
        super().__init__()
        self.restrict, self.writable = restrict, writable

    def run(self, argv: Sequence[str], *, env: Mapping[str, str | None] | None = None,
            cwd: str | None = None, timeout: float | None = None, input: str | None = None,
            check: bool = True) -> ProcResult:
        super().run(argv, env=env, cwd=cwd, timeout=timeout, input=input, check=False)
        code, out = 0, ""
        if argv[-1] == "/proc/kallsyms":
            out = KALLSYMS if self.restrict == "0" else HIDDEN
        elif argv[-1] == "/proc/modules":
            code = 1  # a kernel without modules
        elif argv[0] == "cat":
            out = self.restrict + "\n"
        elif self.writable:  # sh -c 'echo "$1" > /proc/sys/kernel/kptr_restrict' sh VALUE
            self.restrict = argv[-1]
        else:
            code = 1
        return ProcResult(tuple(argv), code, out, "", 0.0)


def test_kptr_restrict_is_lowered_for_the_copy_then_put_back(tmp_path: Path) -> None:
    guest = _KptrGuest("2")
    copies = fetch_guest_symbols(guest, tmp_path)
    assert copies.kallsyms.read_text() == KALLSYMS and guest.restrict == "2"
    assert copies.notes[0] == ("kernel.kptr_restrict was 2 in the guest: set to 0 while its "
                               "/proc/kallsyms was copied, then put back")
    assert "no readable /proc/modules" in copies.notes[1] and copies.modules.read_text() == ""


def test_addresses_it_cannot_show_are_refused_naming_the_setting(tmp_path: Path) -> None:
    with pytest.raises(GuestSymbolsUnavailable,
                       match=r"shows no addresses \(kernel.kptr_restrict 1; reading them "
                             r"takes root in the guest\)"):
        fetch_guest_symbols(_KptrGuest("1", writable=False), tmp_path)


def test_the_accelerator_is_what_the_guests_lab_publishes() -> None:
    fs = FilesystemService(path="/mnt", kind="ext4", spec="ext4", mount={}, size_mib=1,
                           free_mib=1, cache_policy="", drop_caches=True)
    kvm = Services("guest", (fs, GuestMachine(domain="vbguest-1", virt_type="kvm")))
    assert accelerator(kvm, "vbguest-1") == "kvm"
    assert accelerator(kvm, "another-domain") is None  # said of another guest
    assert accelerator(Services("storage", (fs,)), "vbguest-1") is None
    assert accelerator(None, "vbguest-1") is None
    assert no_guest_frames_note("qemu").startswith("guest kernel frames need KVM: the guest "
                                                   "runs under qemu (TCG)")
    assert "does not say which accelerator" in no_guest_frames_note(None)
