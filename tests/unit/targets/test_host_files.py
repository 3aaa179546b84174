"""HostFiles: this machine's files directly, another target's through its commands (the data
on the command's stdin, base64 for bytes); and the shell launcher of private mounts that a
host without virtbench runs."""

from __future__ import annotations

import base64
import shlex
from pathlib import Path

import pytest

from virtbench.model import VirtbenchError
from virtbench.targets.fake import FakeTarget
from virtbench.targets.host_files import HostFiles
from virtbench.targets.local import LocalTarget
from virtbench.targets.private_mounts import shell_launcher_argv


def test_local_files_are_this_machines(tmp_path: Path) -> None:
    files = HostFiles(LocalTarget())
    files.mkdir(tmp_path / "a" / "b")
    files.write_text(tmp_path / "a" / "t", "text\n")
    files.write_bytes(tmp_path / "a" / "b" / "bin", b"\x00\xff")
    files.concatenate([tmp_path / "a" / "t", tmp_path / "a" / "b" / "bin"], tmp_path / "cat")
    assert (tmp_path / "cat").read_bytes() == b"text\n\x00\xff"
    assert files.read_text(tmp_path / "a" / "t") == "text\n" and files.is_dir(tmp_path / "a")
    files.remove_tree(tmp_path / "a")
    assert not files.exists(tmp_path / "a")


def test_a_hosts_files_are_written_by_its_commands() -> None:
    host = FakeTarget().add("cat", stdout="root:x:0:0::/root:/bin/sh\n").add("mkdir") \
        .add("sh").add("test", "-e", "/there").add("test", returncode=1)
    files = HostFiles(host)
    files.mkdir(Path("/h/a"), Path("/h/b"))
    files.write_bytes(Path("/h/a/keys.cpio"), b"\x00\xffkeys")
    files.concatenate([Path("/img"), Path("/h/a/keys.cpio")], Path("/h/a/initrd"))
    assert files.read_text(Path("/etc/passwd")).startswith("root:")
    assert files.exists(Path("/there")) and not files.exists(Path("/nowhere"))
    mkdir, write, concatenate, cat = host.calls[:4]
    assert mkdir.argv == ("mkdir", "-p", "--", "/h/a", "/h/b")
    assert write.argv[-1] == "/h/a/keys.cpio" and write.input is not None
    assert base64.b64decode(write.input) == b"\x00\xffkeys"
    assert concatenate.argv[-3:] == ("/h/a/initrd", "/img", "/h/a/keys.cpio")
    assert cat.argv == ("cat", "--", "/etc/passwd")


def test_a_failed_write_names_the_host_and_the_file() -> None:
    files = HostFiles(FakeTarget().add("sh", returncode=1, stderr="No space left on device"))
    with pytest.raises(VirtbenchError, match=r"fake: cannot write /h/f: No space left"):
        files.write_text(Path("/h/f"), "x")


def test_the_shell_launcher_applies_the_mounts_in_order_then_becomes_the_program() -> None:
    argv = shell_launcher_argv([["tmpfs", "/run"], ["overlay", "/var", "/b/u", "/b/w", "/var"],
                                ["bind", "/b/etc", "/etc/libvirt"], ["mkdir", "/run/libvirt"]],
                               ["/usr/sbin/libvirtd", "--config", "/b/etc/libvirtd.conf"])
    assert argv[:7] == ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c"]
    commands = [shlex.split(c) for c in argv[7].split(" && ")]
    assert commands == [
        ["mount", "--make-rprivate", "/"], ["mount", "-t", "tmpfs", "vb-private", "/run"],
        ["mount", "-t", "overlay", "vb-private", "-o",
         "lowerdir=/var,upperdir=/b/u,workdir=/b/w", "/var"],
        ["mount", "--bind", "/b/etc", "/etc/libvirt"], ["mkdir", "-p", "/run/libvirt"],
        ["exec", "/usr/sbin/libvirtd", "--config", "/b/etc/libvirtd.conf"]]
    with pytest.raises(ValueError, match="unknown mount step 'nfs'"):
        shell_launcher_argv([["nfs", "/x"]], ["true"])
