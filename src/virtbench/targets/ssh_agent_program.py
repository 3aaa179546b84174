"""virtbench's agent on an SSH host: runs commands on request over one ssh channel.

This file is sent as the ``-c`` program of ``python3`` on the host (standard library only,
Python >= 3.8), once per host: each command then costs one process on the host instead of an
ssh session plus the login shell (a .bashrc that starts pyenv costs ~0.1 s of CPU per command).

Protocol: one JSON object per line. The agent first writes ``{"hello": 1, "python": PATH}``;
each request ``{"id": N, "op": ...}`` gets one reply line with the same id, in the order the
commands end (each request is served in a thread of its own). ``op`` is ``run`` (argv, env
changes, cwd, timeout, input; ``timed``: stdout discarded and the time taken from just before
the spawn to the exit, as hyperfine -N), ``batch`` (short commands one after the other),
``gather`` (files read, binaries probed, paths stat'ed by the agent itself, then a batch),
``which`` or ``kill`` (the process group of a running request); a background process (a capture) is
``start``ed (argv, env changes, cwd, stdout/stderr files on the host; replies its pid),
then ``signal``led, ``poll``ed or ``wait``ed for by pid. End of input (the controller went away)
kills every command and background process still running, then the agent exits.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

_write_lock = threading.Lock()
_running: dict[int, int] = {}  # request id -> pid leading the command's own session
_running_lock = threading.Lock()
_background: dict[int, subprocess.Popen[bytes]] = {}  # pid -> a process of op "start"
_KILLED_READ_S = 10.0  # after a time limit's kill: how long the command's output may still come
_DEFAULTED = (signal.SIGPIPE, signal.SIGXFSZ)  # Python ignores these; commands get defaults


def _send(message: dict[str, Any]) -> None:
    data = (json.dumps(message) + "\n").encode()
    with _write_lock:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()


def _kill_group(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)


def _environment(changes: dict[str, str | None] | None) -> dict[str, str]:
    env = dict(os.environ)
    for key, value in (changes or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def _exit_code(status: int) -> int:
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _not_started(argv: list[str], reason: str, code: int = 127) -> dict[str, Any]:
    return {"rc": code, "stdout": "", "stderr": f"{argv[0]}: {reason}\n", "duration": 0.0,
            "timed_out": False}


def _captured(rid: int, argv: list[str], env: dict[str, str], cwd: str | None,
              timeout: float | None, text: str | None) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        proc = subprocess.Popen(argv, env=env, cwd=cwd, start_new_session=True,
                                stdin=subprocess.DEVNULL if text is None else subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except FileNotFoundError as exc:
        return _not_started(argv, str(exc))
    except OSError as exc:
        return _not_started(argv, str(exc), 126)
    with _running_lock:
        _running[rid] = proc.pid
    timed_out = False
    try:
        try:
            out, err = proc.communicate(None if text is None else text.encode(), timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc.pid)
            out, err = _rest(proc)
    finally:
        with _running_lock:
            _running.pop(rid, None)
    return {"rc": proc.returncode, "stdout": out.decode(errors="replace"),
            "stderr": err.decode(errors="replace"), "timed_out": timed_out,
            "duration": time.perf_counter() - started}


def _rest(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """The output of a command killed with its group. A process that left the group (its own
    session) may still hold the pipes: after _KILLED_READ_S what came is kept, and the note
    says why the rest is missing."""
    try:
        return proc.communicate(timeout=_KILLED_READ_S)
    except subprocess.TimeoutExpired as exc:
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(_KILLED_READ_S)
        note = ("\n(output cut: a process outside the command's group still held its pipes "
                f"{_KILLED_READ_S:g} s after the kill)\n").encode()
        return (getattr(exc, "output", None) or b"",
                (getattr(exc, "stderr", None) or b"") + note)


def _timed(rid: int, argv: list[str], env: dict[str, str],
           timeout: float | None) -> dict[str, Any]:
    program = shutil.which(argv[0], path=env.get("PATH", os.defpath))
    if program is None:
        return _not_started(argv, "command not found")
    expired: list[bool] = []
    with tempfile.TemporaryFile() as err, open(os.devnull, "r+b") as null:
        actions = [(os.POSIX_SPAWN_DUP2, null.fileno(), 0),
                   (os.POSIX_SPAWN_DUP2, null.fileno(), 1),
                   (os.POSIX_SPAWN_DUP2, err.fileno(), 2)]
        started = time.perf_counter()
        pid = os.posix_spawn(program, argv, env, file_actions=actions, setsid=True,
                             setsigdef=_DEFAULTED)
        with _running_lock:
            _running[rid] = pid
        def expire() -> None:
            expired.append(True)
            _kill_group(pid)

        timer = None
        if timeout is not None:
            timer = threading.Timer(timeout, expire)
            timer.start()
        try:
            status = os.waitpid(pid, 0)[1]
            duration = time.perf_counter() - started
        finally:
            if timer is not None:
                timer.cancel()
            with _running_lock:
                _running.pop(rid, None)
        code = _exit_code(status)
        stderr = ""
        if code != 0:
            err.seek(0)
            stderr = err.read().decode(errors="replace")
    return {"rc": code, "stdout": "", "stderr": stderr, "duration": duration,
            "timed_out": bool(expired)}


def _run(request: dict[str, Any]) -> dict[str, Any]:
    argv = list(request["argv"])
    env = _environment(request.get("env"))
    if request.get("timed"):
        return _timed(request["id"], argv, env, request.get("timeout"))
    return _captured(request["id"], argv, env, request.get("cwd"), request.get("timeout"),
                     request.get("input"))


def _batch(request: dict[str, Any]) -> dict[str, Any]:
    env = _environment(None)
    results = []
    for argv in request["argvs"]:
        result = _captured(request["id"], list(argv), env, None, request.get("timeout"), None)
        if result.pop("timed_out"):
            result["rc"] = 124  # as timeout(1) reports it: a batch never raises
        results.append(result)
    return {"results": results}


def read_text(path: str) -> str | None:
    try:
        with open(path, "rb") as file:
            return file.read().decode(errors="replace")
    except OSError:
        return None


def probe_binary(binary: str, path: str | None = None) -> str | None:
    """As targets.target_contract.BINARY_PROBE prints it: path (``binary`` looked up on the
    PATH unless given), `stat -L` identity, first two bytes."""
    path = path or shutil.which(binary)
    if path is None:
        return None
    try:
        info = os.stat(path)
        with open(path, "rb") as file:
            head = file.read(2).decode(errors="replace")
    except OSError:
        return None
    return (f"{path}\n{info.st_dev} {info.st_ino} {info.st_size} {int(info.st_mtime)} "
            f"{int(info.st_ctime)}\n{head}")


def stat_identity(path: str) -> str | None:
    """As targets.target_contract.PATH_STAT prints it (`stat -L`, times to the nanosecond)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    times = [f"{ns // 10**9}.{ns % 10**9:09d}" for ns in (info.st_mtime_ns, info.st_ctime_ns)]
    return f"{info.st_dev} {info.st_ino} {info.st_size} {times[0]} {times[1]}"


def _gather(request: dict[str, Any]) -> dict[str, Any]:
    """Files read, binaries probed and paths stat'ed here, in this process (each would
    otherwise cost a process or three on the host), then the commands, as a batch."""
    return {"files": [read_text(path) for path in request["files"]],
            "binaries": [probe_binary(binary) for binary in request["binaries"]],
            "stats": [stat_identity(path) for path in request.get("paths", [])],
            **_batch(request)}


def _which(request: dict[str, Any]) -> dict[str, Any]:
    return {"path": shutil.which(request["binary"])}


def _start(request: dict[str, Any]) -> dict[str, Any]:
    """A process that runs past its request, in a session (process group) of its own."""
    argv = list(request["argv"])
    with contextlib.ExitStack() as files:
        out, err = (files.enter_context(open(request[name], "ab")) if request.get(name)
                    else subprocess.DEVNULL for name in ("stdout", "stderr"))
        proc = subprocess.Popen(argv, env=_environment(request.get("env")),
                                cwd=request.get("cwd"), start_new_session=True,
                                stdin=subprocess.DEVNULL, stdout=out, stderr=err)
    with _running_lock:
        _background[proc.pid] = proc
    return {"pid": proc.pid}


def _started(request: dict[str, Any]) -> subprocess.Popen[bytes]:
    with _running_lock:
        proc = _background.get(request["pid"])
    if proc is None:  # never any other process of the host's
        raise LookupError(f"no process {request['pid']} started by this agent")
    return proc


def _signal(request: dict[str, Any]) -> dict[str, Any]:
    proc = _started(request)
    if proc.poll() is None:
        proc.send_signal(request["signal"])
    return {"rc": proc.returncode}


def _wait(request: dict[str, Any]) -> dict[str, Any]:
    """The exit code, or None while it runs after ``timeout`` (0: a poll)."""
    proc = _started(request)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(request.get("timeout"))
    return {"rc": proc.returncode}


_OPS = {"run": _run, "batch": _batch, "gather": _gather, "which": _which, "start": _start,
        "signal": _signal, "wait": _wait}


def _serve(request: dict[str, Any]) -> None:
    try:
        reply = _OPS[request["op"]](request)
    except Exception as exc:  # a reply always comes back: the controller waits for it
        reply = {"error": f"{type(exc).__name__}: {exc}"}
    reply["id"] = request["id"]
    _send(reply)


def main() -> None:
    # the host's Python, not ours: posix_spawn's setsid; the controller falls back to ssh
    if sys.version_info < (3, 8):  # noqa: UP036
        sys.exit(3)
    # Started with SIGINT ignored (a controller run in the background, without ssh between),
    # every process it starts would inherit that and a capture could not be stopped with
    # SIGINT: Python's own handler is reset to the default in each child at exec.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    _send({"hello": 1, "python": sys.executable})
    for line in sys.stdin.buffer:
        request = json.loads(line)
        if request["op"] == "kill":
            with _running_lock:
                pid = _running.get(request["target"])
            if pid is not None:
                _kill_group(pid)
            continue
        threading.Thread(target=_serve, args=(request,), daemon=True).start()
    with _running_lock:  # the controller is gone: nothing it started may outlive it
        for pid in _running.values():
            _kill_group(pid)
        for proc in _background.values():
            if proc.poll() is None:
                _kill_group(proc.pid)
    os._exit(0)


if __name__ == "__main__":
    main()
