"""`virtbench serve` refuses what it cannot serve before it binds anything."""

from __future__ import annotations

import signal
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from waits import finish, readline, sigint_default

from virtbench.model import RunFailed, VirtbenchError
from virtbench.serve.guard import allowed_host
from virtbench.serve.server import bind, check_host, check_port
from virtbench.store import Store


def _serve(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "virtbench.cli", "serve", *args],
                          capture_output=True, text=True, timeout=60)


def test_a_missing_store_is_a_clear_error_not_a_new_file(tmp_path: Path) -> None:
    missing = tmp_path / "nothing.db"
    result = _serve("--store", str(missing), "--port", "1")
    assert result.returncode == 2
    assert f"no store at {missing}" in " ".join(result.stderr.split())
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
                               str(db), "--host", "127.0.0.2", "--port", str(port),
                               "--allow-host", "bench.example"],
                              stderr=subprocess.PIPE, text=True, preexec_fn=sigint_default)
    lines: list[str] = []
    try:
        assert server.stderr is not None
        while not any("Ctrl-C" in line for line in lines):  # the announcement's last words
            line = readline(server, 60, server.stderr)
            assert line, f"serve ended: {lines}"
            lines.append(line)
        # the bind address and --allow-host names are served, other names are not
        url = f"http://127.0.0.2:{port}/runs"
        answers = {host: httpx.get(url, headers={"Host": host}, timeout=30).status_code
                   for host in (f"127.0.0.2:{port}", "bench.example", "attacker.example")}
        assert answers == {f"127.0.0.2:{port}": 200, "bench.example": 200,
                           "attacker.example": 400}
    finally:
        server.send_signal(signal.SIGINT)
        finish(server, 30)
    said = " ".join(" ".join(lines).split())
    assert said.startswith("warning: binding 127.0.0.2") and "no login" in said
    assert f"http://127.0.0.2:{port}/ (read-only" in said


def _one_clear_line(result: subprocess.CompletedProcess[str], code: int, *words: str) -> None:
    assert result.returncode == code, result.stderr
    lines = result.stderr.strip().splitlines()
    said = " ".join(" ".join(lines).split())
    assert said.startswith("error: ") and "Traceback" not in said, said
    assert "serving" not in said, said  # nothing announced before the failure
    for word in words:
        assert word in said, (word, said)


def test_a_port_out_of_range_is_bad_input(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    Store(str(db)).close()
    _one_clear_line(_serve("--store", str(db), "--port", "70000"), 2,
                    "'--port': 70000 is not a port number (1-65535)")
    for port in (0, -1, 65536):  # the same check, without a process each
        with pytest.raises(VirtbenchError, match=f"--port {port}: not a TCP port"):
            check_port(port)
    for name in ("*", "*.example", "host:80", "http://x/", ""):
        with pytest.raises(VirtbenchError, match="--allow-host"):
            allowed_host(name)


def test_a_busy_port_or_foreign_address_fails_before_announcing(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    Store(str(db)).close()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        _one_clear_line(_serve("--store", str(db), "--port", str(port)), 1, "in use", str(port))
        with pytest.raises(RunFailed, match="the port is in use"):
            bind("127.0.0.1", port)
    # an address of no interface here (TEST-NET-1): nothing is sent anywhere
    _one_clear_line(_serve("--store", str(db), "--host", "192.0.2.1"), 1, "192.0.2.1")


def test_a_malformed_address_is_bad_input_before_any_lookup(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    Store(str(db)).close()
    _one_clear_line(_serve("--store", str(db), "--host", "999.1.1.1"), 2, "--host '999.1.1.1'")
    for host in ("bad host", "a..b", "-x.example", "1.2.3", "::ffff:1.2.3.4.5", "x" * 300, ""):
        with pytest.raises(VirtbenchError, match="not an IP address or host name"):
            check_host(host)
    for host in ("127.0.0.1", "::1", "localhost", "bench-1.lab.example", "0.0.0.0"):
        assert check_host(host) == host
