"""A Python call in a forked copy of this process, reporting back over a pipe.

A fleet runs each host's runner in a process of its own (forked: nothing is imported again), so
parsing and storing a host's samples never waits for another host's under one interpreter lock
(docs/fleet.md). The child sends JSON messages through ``send`` and ends with ``os._exit``:
it never runs the parent's exit handlers nor closes the parent's connections.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import traceback
from collections.abc import Callable
from typing import Any

__all__ = ["ForkedCall", "Send"]

Send = Callable[[dict[str, Any]], None]


class ForkedCall:
    """``call(send)`` in a child process of its own process group (Ctrl-C in the terminal
    reaches only the parent, which passes it on once with ``interrupt``). ``listen`` hands each
    message to ``on_message`` in the parent; the last message of a child that raised is
    ``{"error": ...}``. Fork every child before listening: a child gets a copy of the parent's
    locks, and a reader thread could hold one at the moment of a later fork.
    """

    def __init__(self, call: Callable[[Send], None]) -> None:
        self._read_fd, write_fd = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the child: never returns
            os.close(self._read_fd)
            os.setpgid(0, 0)
            # ``interrupt`` is how the parent stops it, whatever SIGINT was when we started
            # (ignored, in a background job): the child always takes it as Ctrl-C.
            signal.signal(signal.SIGINT, signal.default_int_handler)
            _child(call, write_fd)
        os.close(write_fd)
        self._reader: threading.Thread | None = None
        self.returncode: int | None = None

    def listen(self, on_message: Callable[[dict[str, Any]], None]) -> None:
        self._reader = threading.Thread(target=self._read, args=(self._read_fd, on_message),
                                        daemon=True, name=f"forked-{self.pid}")
        self._reader.start()

    def interrupt(self) -> None:
        """Ctrl-C for the child: it stops as an interrupted run does and still reports."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGINT)

    def wait(self) -> int:
        """The child's exit code, once every message it sent was handed on."""
        if self.returncode is None:
            self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        if self._reader is not None:
            self._reader.join()
        return self.returncode

    @staticmethod
    def _read(fd: int, on_message: Callable[[dict[str, Any]], None]) -> None:
        with os.fdopen(fd, "rb") as stream:
            for line in stream:
                on_message(json.loads(line))


def _child(call: Callable[[Send], None], fd: int) -> None:
    code = 0
    try:
        stream = os.fdopen(fd, "wb")
        lock = threading.Lock()

        def send(message: dict[str, Any]) -> None:
            with lock:
                stream.write((json.dumps(message) + "\n").encode())
                stream.flush()

        try:
            call(send)
        except BaseException as exc:  # reported, never propagated into the parent's code
            code = 1
            send({"error": f"{type(exc).__name__}: {exc}",
                  "traceback": traceback.format_exc()})
        stream.close()
    finally:
        os._exit(code)
