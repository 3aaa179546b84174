"""A guest reached over SSH batches as an SSH host does: facts in one round trip."""

from __future__ import annotations

from pathlib import Path

from virtbench.targets.libvirt_guest import LibvirtGuestTarget
from virtbench.targets.ssh import SSHTarget


def test_facts_of_a_guest_over_ssh_are_one_ssh_call(tmp_path: Path) -> None:
    # A stand-in for ssh that logs each call and runs the remote command here.
    log = tmp_path / "ssh.log"
    fake = tmp_path / "ssh"
    fake.write_text(f'#!/bin/sh\necho call >> {log}\n'
                    'while [ "$1" != "--" ]; do shift; done\nshift 2\nexec sh -c "$*"\n')
    fake.chmod(0o755)
    (tmp_path / "a.txt").write_text("alpha\n")
    guest = LibvirtGuestTarget(None, "vbtest-dom", ssh=SSHTarget(
        "127.0.0.1", multiplex=False, ssh_binary=str(fake)))
    assert guest.batches
    got = guest.gather([str(tmp_path / "a.txt"), str(tmp_path / "missing")], [],
                       [["echo", "hi"], ["sh", "-c", "exit 3"]])
    assert got.files == ["alpha\n", None]
    assert [(r.returncode, r.stdout) for r in got.results] == [(0, "hi\n"), (3, "")]
    assert [r.returncode for r in guest.run_batch([["true"], ["false"]])] == [0, 1]
    assert len(log.read_text().splitlines()) == 2  # one for the gather, one for the batch
    # Through the guest agent (no SSH) there is no batch: commands go one by one.
    assert not LibvirtGuestTarget(None, "vbtest-dom").batches
