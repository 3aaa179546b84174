"""Opening a file a user names, and reading it within a stated bound: one rule for every file
input (tool outputs for ``parse``, captures, experiment files, inventories, result files to
import), so that none of them hangs or fills memory.

What is not a file is refused at once with one line, before it is read: a directory, a socket,
a character or block device (``/dev/zero``, ``/dev/urandom``, a disk). A FIFO or a pipe
(``<(zcat f)``) is read as a stream: it is opened without waiting for a writer, and a FIFO that
no process writes to is refused at once instead of blocking forever. Standard input (``-``) is
read the same way; a terminal on it is read (a pasted output), /dev/null is empty input,
another device is refused, and closed standard input (``<&-``) is an error. Every read stops
one byte past its bound: an endless pipe is cut there with an error, a regular file larger than
the bound is refused by its size before any of it is read.
"""

from __future__ import annotations

import errno
import fcntl
import io
import os
import stat
import sys
from pathlib import Path
from typing import Any, BinaryIO

from virtbench.errors import StreamClosed, VirtbenchError

__all__ = ["InputFileError", "describe_size", "not_a_file", "open_input", "read_input",
           "read_opened"]

_STEP = 64 << 10
"""Bytes read from a FIFO to learn whether a process writes to it (a pipe's buffer)."""


class InputFileError(VirtbenchError):
    """A file the user named cannot be read as one (exit 2): the message names it and why."""


def describe_size(count: int) -> str:
    """``256 MiB``, ``1 MiB``, ``512 KiB`` or ``100 bytes``: how a bound is stated."""
    if count >= 1 << 20 and count % (1 << 20) == 0:
        return f"{count >> 20} MiB"
    if count >= 1 << 10 and count % (1 << 10) == 0:
        return f"{count >> 10} KiB"
    return f"{count} bytes"


def not_a_file(mode: int) -> str | None:
    """What a file of ``st_mode`` is when it cannot be read as a file (``a directory``), or
    None for a regular file, a FIFO or a pipe."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISREG(mode) or stat.S_ISFIFO(mode):
        return None
    return "not a regular file"


def _article(kind: str) -> str:
    return f"{'an' if kind[:1].lower() in 'aeiou' else 'a'} {kind}"


def _refusal(path: Path | str, kind: str, what: str) -> InputFileError:
    return InputFileError(f"{path}: not {_article(kind)} ({what}, not a file)")


class _Prefixed(io.RawIOBase):
    """A FIFO whose first bytes were read to learn whether anyone writes to it."""

    def __init__(self, fd: int, head: bytes) -> None:
        super().__init__()
        self._file = io.FileIO(fd, "rb")
        self._head = head

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._file.fileno()

    def readinto(self, buffer: Any) -> int:
        if self._head:
            count = min(len(buffer), len(self._head))
            buffer[:count] = self._head[:count]
            self._head = self._head[count:]
            return count
        return self._file.readinto(buffer)

    def close(self) -> None:
        self._file.close()
        super().close()


def _fifo(fd: int, path: Path, kind: str) -> io.BufferedReader:
    """The FIFO ``fd`` (opened without blocking) as a stream, if a process writes to it: a
    read without blocking returns data, or EAGAIN (a writer, no data yet), or end of file at
    once when no process has it open for writing — then it is refused, not waited on."""
    try:
        head = os.read(fd, _STEP)
    except BlockingIOError:
        head = b""
    else:
        if not head:
            raise InputFileError(f"{path}: a FIFO that no process is writing to (nothing "
                                 f"to read as {_article(kind)}); start its writer first")
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    return io.BufferedReader(_Prefixed(fd, head))


def _cannot(path: Path | str, what: str, exc: OSError) -> InputFileError:
    prefix = f"cannot read {what} " if what else "cannot read "
    return InputFileError(f"{prefix}{path}: {exc.strerror or exc}")


def open_input(path: Path, kind: str, what: str = "") -> io.BufferedReader:
    """``path`` opened for reading (binary, buffered), if it is a regular file, a FIFO or a
    pipe; else an :class:`InputFileError` ``PATH: not a KIND (a directory, not a file)``.
    A FIFO is opened without waiting for a writer (without one it is refused). An
    ``OSError`` is ``cannot read [WHAT ]PATH: REASON``."""
    try:
        mode = os.stat(path).st_mode  # before opening: opening a device can act on it
    except OSError as exc:
        raise _cannot(path, what, exc) from exc
    reason = not_a_file(mode)
    if reason is not None:
        raise _refusal(path, kind, reason)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # replaced by a socket since the stat
            raise _refusal(path, kind, "a socket") from exc
        raise _cannot(path, what, exc) from exc
    try:
        mode = os.fstat(fd).st_mode
        reason = not_a_file(mode)
        if reason is not None:  # replaced since the stat
            raise _refusal(path, kind, reason)
        if stat.S_ISFIFO(mode):
            return _fifo(fd, path, kind)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _read_stream(stream: BinaryIO, limit: int) -> bytes:
    """At most ``limit`` + 1 bytes of ``stream`` (one past the bound shows it was passed): one
    buffered read, which reads on until then or the end (the buffer's pages are only used as
    they fill, so an ordinary input costs what it holds, not the bound)."""
    return stream.read(limit + 1)


def _is_dev_null(fd: int) -> bool:
    try:
        return os.fstat(fd).st_rdev == os.stat(os.devnull).st_rdev
    except OSError:
        return False


def _stdin(kind: str) -> BinaryIO:
    try:
        mode = os.fstat(0).st_mode
    except OSError:
        mode = None
    # None: Python found descriptor 0 closed at start-up (the console script then gives it
    # /dev/null, so that no file opened later takes its number: virtbench.cli.entry)
    if mode is None or sys.stdin is None:
        raise StreamClosed(f"standard input is closed; give the {kind} as a file or "
                           "pipe it in")
    # A terminal is read (a pasted output), and /dev/null (a run with no standard input: CI,
    # cron) is empty input; another device is refused.
    if stat.S_ISCHR(mode) and not os.isatty(0) and not _is_dev_null(0):
        raise _refusal("standard input", kind, "a character device")
    reason = None if stat.S_ISCHR(mode) else not_a_file(mode)
    if reason is not None:
        raise _refusal("standard input", kind, reason)
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is not None:
        return buffer  # type: ignore[no-any-return]
    return os.fdopen(0, "rb", closefd=False)


def read_input(path: Path | str, kind: str, limit: int, what: str = "") -> bytes:
    """The bytes of ``path`` (``-``: standard input), at most ``limit`` of them: a larger input
    is an :class:`InputFileError` ``PATH: more than LIMIT, larger than any KIND virtbench
    reads``, raised before reading a regular file (by its size) or once a stream passes the
    bound. What is not a file is refused as :func:`open_input` does."""
    if str(path) == "-":
        return read_opened(_stdin(kind), "standard input", kind, limit)
    path = Path(path)
    with open_input(path, kind, what) as stream:
        return read_opened(stream, path, kind, limit, what)


def read_opened(stream: BinaryIO, source: Path | str, kind: str, limit: int, what: str = ""
                ) -> bytes:
    """:func:`read_input` of a stream already open (from :func:`open_input`)."""
    try:
        size = os.fstat(stream.fileno())
    except (OSError, ValueError):  # a stream without a descriptor
        size = None
    if size is not None and stat.S_ISREG(size.st_mode) and size.st_size > limit:
        raise _too_large(source, kind, limit)  # unread
    try:
        data = _read_stream(stream, limit)
    except OSError as exc:
        raise _cannot(source, what, exc) from exc
    if len(data) > limit:
        raise _too_large(source, kind, limit)
    return data


def _too_large(source: Path | str, kind: str, limit: int) -> InputFileError:
    return InputFileError(f"{source}: more than {describe_size(limit)}, larger than any {kind} "
                          "virtbench reads; is it the right file?")
