"""What is not a file, where a file is expected, is one clear line at once; every file input is
read within its bound (virtbench.inputs.files, issue 36 item 2): each class through the helper,
through the loaders that use it, and through the real CLI."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from virtbench.fleet.inventory import InventoryError, load_inventory
from virtbench.inputs.files import InputFileError, read_input
from virtbench.inputs.yamlfile import YamlInputError, read_text_file
from virtbench.model import VirtbenchError
from virtbench.spec.loader import SpecError, load_experiment
from virtbench.workloads.web.urls import read_url_file

DATA = Path(__file__).resolve().parents[2] / "data"
IPERF3 = DATA / "iperf3" / "iperf3.12-tcp-loopback.json"
PCAP = DATA / "pcap" / "two_flows_us.pcap"


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


@pytest.fixture
def unix_socket(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    yield path
    server.close()


def _not_files(tmp_path: Path, unix_socket: Path, fifo: Path) -> list[tuple[Path, str]]:
    return [(Path("/dev/zero"), "a character device"), (Path("/dev/urandom"),
            "a character device"), (tmp_path, "a directory"), (unix_socket, "a socket"),
            (fifo, "a FIFO that no process is writing to")]


def test_what_is_not_a_file_is_refused_at_once(tmp_path: Path, unix_socket: Path,
                                               fifo: Path) -> None:
    for path, what in _not_files(tmp_path, unix_socket, fifo):
        with pytest.raises(InputFileError, match=what) as caught:
            read_input(path, "iperf3 output", 1 << 20)
        assert str(caught.value).startswith(f"{path}: ")
        assert "\n" not in str(caught.value)


def test_loaders_refuse_the_same_classes(tmp_path: Path, unix_socket: Path, fifo: Path) -> None:
    for path, what in _not_files(tmp_path, unix_socket, fifo):
        with pytest.raises(SpecError, match=what):
            load_experiment(path)
        with pytest.raises(InventoryError, match=what):
            load_inventory(path)
        with pytest.raises(YamlInputError, match=what):
            read_text_file(path, "experiment file")
        with pytest.raises(VirtbenchError, match=what):
            read_url_file(path)


def _writer(fifo: Path, data: bytes, stop: threading.Event | None = None
            ) -> threading.Thread:
    """A writer on ``fifo`` that exists before the reader opens it (opened read-write, so the
    open does not wait for a reader), then writes ``data`` — again and again until ``stop``
    is set, if given — and closes."""
    fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)

    def write() -> None:
        pending = data
        try:
            while pending or (stop is not None and not stop.is_set()):
                try:
                    pending = pending[os.write(fd, pending):]
                except BlockingIOError:  # the pipe is full: poll, the reader may have left
                    if stop is not None and stop.wait(0.01):
                        break
                if not pending and stop is not None:
                    pending = data
        finally:
            os.close(fd)

    return threading.Thread(target=write, daemon=True)


def test_fifo_with_a_writer_is_read_whole(fifo: Path) -> None:
    """The writer is there before the reader opens: the FIFO is read to its end (no writer:
    refused, above)."""
    data = IPERF3.read_bytes()
    thread = _writer(fifo, data)
    result: list[bytes | BaseException] = []

    def read() -> None:
        try:
            result.append(read_input(fifo, "iperf3 output", 1 << 20))
        except BaseException as exc:
            result.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    thread.start()
    thread.join(60)
    reader.join(60)
    assert result == [data]


def test_endless_fifo_is_cut_at_the_bound(fifo: Path) -> None:
    stop = threading.Event()
    thread = _writer(fifo, b"x" * 65536, stop)
    thread.start()
    try:
        with pytest.raises(InputFileError,
                           match=r"more than 1 MiB, larger than any iperf3 output"):
            read_input(fifo, "iperf3 output", 1 << 20)
    finally:
        stop.set()
        thread.join(60)
    assert not thread.is_alive()


def test_regular_file_over_the_bound_is_refused_unread(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as f:
        f.truncate(300 << 20)  # sparse: 300 MiB that cost nothing to make
    with pytest.raises(InputFileError, match=r"big.json: more than 256 MiB"):
        read_input(big, "iperf3 output", 256 << 20)
    exact = tmp_path / "exact"
    exact.write_bytes(b"y" * 1000)
    assert read_input(exact, "x", 1000) == b"y" * 1000
    with pytest.raises(InputFileError, match="more than 999 bytes"):
        read_input(exact, "x", 999)


def _cli(*args: str, stdin: int | None = None, shell: str | None = None
         ) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "virtbench", *args]
    if shell is not None:  # a shell pipeline or redirection around the command
        return subprocess.run(["sh", "-c", shell.replace("VIRTBENCH", " ".join(argv))],
                              capture_output=True, text=True, timeout=120)
    return subprocess.run(argv, stdin=stdin, capture_output=True, text=True, timeout=120)


def _one_error_line(result: subprocess.CompletedProcess[str], expected: str,
                    exit_code: int = 2) -> None:
    assert result.returncode == exit_code, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], lines
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("command", [["parse", "iperf3"], ["parse", "pcap"], ["run"],
                                     ["import"]], ids=" ".join)
def test_cli_not_a_file_is_one_line(command: list[str], tmp_path: Path, unix_socket: Path,
                                    fifo: Path) -> None:
    store = ["--store", str(tmp_path / "s.db")] if command == ["import"] else []
    for path, what in _not_files(tmp_path, unix_socket, fifo):
        _one_error_line(_cli(*command, str(path), *store), what)
    assert not (tmp_path / "s.db").exists()


def test_cli_endless_stdin_is_cut_at_the_bound() -> None:
    _one_error_line(_cli("parse", "iperf3", "-", shell="cat /dev/zero | VIRTBENCH"),
                    "standard input: more than 256 MiB, larger than any iperf3 output")


def test_cli_device_and_closed_stdin() -> None:
    _one_error_line(_cli("parse", "iperf3", "-", shell="VIRTBENCH < /dev/zero"),
                    "standard input: not an iperf3 output (a character device")
    # closed: the environment's doing, not the arguments' (exit 1)
    _one_error_line(_cli("parse", "iperf3", "-", shell="VIRTBENCH <&-"),
                    "standard input is closed", 1)
    _one_error_line(_cli("parse", "pcap", "-", shell="VIRTBENCH <&-"),
                    "standard input is closed", 1)


def test_cli_streams_still_read() -> None:
    with IPERF3.open("rb") as stdin:
        assert _cli("parse", "iperf3", "-", "--json", stdin=stdin.fileno()).returncode == 0
    piped = _cli("parse", "pcap", "-", "--json", shell=f"cat {PCAP} | VIRTBENCH")
    assert piped.returncode == 0 and '"metric": "packets"' in piped.stdout
