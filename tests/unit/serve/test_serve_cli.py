"""`virtbench serve` refuses what it cannot serve before it binds anything."""

from __future__ import annotations

import signal
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

from waits import finish, readline, sigint_default

from virtbench.store import Store


def _serve(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "virtbench.cli", "serve", *args],
                          capture_output=True, text=True, timeout=60)


def test_a_missing_store_is_a_clear_error_not_a_new_file(tmp_path: Path) -> None:
    missing = tmp_path / "nothing.db"
    result = _serve("--store", str(missing), "--port", "1")
    assert result.returncode == 2
    assert f"no result store at {missing}" in " ".join(result.stderr.split())
    assert "Traceback" not in result.stderr
    assert not missing.exists()


def test_an_old_schema_is_refused_not_migrated(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    Store(str(db)).close()
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE schema_version SET version = 1")
    result = _serve("--store", str(db), "--port", "1")
    assert result.returncode == 2 and "schema version 1" in " ".join(result.stderr.split())
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(1,)]


def test_binding_beyond_127_0_0_1_warns(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    Store(str(db)).close()
    with socket.socket() as sock:  # a free port on another loopback address
        sock.bind(("127.0.0.2", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "virtbench.cli", "serve", "--store",
                               str(db), "--host", "127.0.0.2", "--port", str(port)],
                              stderr=subprocess.PIPE, text=True, preexec_fn=sigint_default)
    lines: list[str] = []
    try:
        assert server.stderr is not None
        while not any("Ctrl-C" in line for line in lines):  # the announcement's last words
            line = readline(server, 60, server.stderr)
            assert line, f"serve ended: {lines}"
            lines.append(line)
    finally:
        server.send_signal(signal.SIGINT)
        finish(server, 30)
    said = " ".join(" ".join(lines).split())
    assert said.startswith("warning: binding 127.0.0.2") and "no login" in said
    assert f"http://127.0.0.2:{port}/ (read-only" in said
