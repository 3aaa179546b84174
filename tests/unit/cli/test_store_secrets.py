"""No store password in any output. A PostgreSQL role with a distinctive password on the tests'
server (its own first line in pg_hba.conf: scram-sha-256, where the server trusts everyone
else), then every command that takes --store, on the real app: what they print (stdout,
stderr, the process's own file descriptors, log records), the files they write (reports,
gate outputs, exports) and the pages `virtbench serve` serves, searched for the password, as
written in the URL (percent-encoded) and as decoded. Also the failures: a wrong password (in
the URL, in its query, in PGPASSWORD), an unreachable server, a missing database, a
malformed URL, a libpq connection string, with and without --debug's traceback; and the
documented ways to keep the password out of the URL (PGPASSWORD, a pgpass file) work.

The password is masked by one function, virtbench.store.redaction.shown
(tests/unit/store/test_redaction.py)."""

from __future__ import annotations

import contextlib
import fcntl
import gzip
import logging
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import typer
from sqlalchemy import create_engine
from sqlalchemy.engine import Engine, make_url
from typer.testing import CliRunner
from waits import finish, readline, sigint_default

from virtbench.cli.root import app
from virtbench.store import Store

TOKEN = secrets.token_hex(8)
"""In every form of the password (hex: the same percent-encoded or not)."""
PASSWORD = f"Vb/s3cr3t@{TOKEN}?x"  # "/", "@" and "?": it must be percent-encoded in a URL
WRONG_TOKEN = secrets.token_hex(8)
WRONG = f"wrong-{WRONG_TOKEN}"
SPEC = """\
name: secretive
baseline: a
variants: [{name: a}, {name: b}]
workloads: [{name: exec.command, params: {argv: ["true"]}}]
repetitions: 2
warmup: 0
"""
# Every command with a --store option (the walk below finds them: a new one fails
# test_every_store_command_is_run_here until it is run here too), and the kvm commands that
# keep their state in the store VIRTBENCH_STORE names.
STORE_COMMANDS = {"assess", "calibrate", "compare", "export", "history", "hosts runs",
                  "import", "report", "run", "runs", "serve"}


@dataclass
class Role:
    """The role, its database, and URLs to it (``postgresql://``, as a user writes them)."""

    name: str
    url: str
    """The password in the URL, percent-encoded."""
    query_url: str
    """The password as a ``?password=`` parameter."""
    bare_url: str
    """No password: PGPASSWORD or a pgpass file gives it."""
    admin: Engine

    def with_password(self, password: str) -> str:
        return make_url(self.url).set(password=password).render_as_string(hide_password=False)


@dataclass
class Seen:
    """Everything the commands said or wrote, by where it came from."""

    texts: list[tuple[str, str]] = field(default_factory=list)

    def add(self, where: str, text: str) -> None:
        self.texts.append((where, text))

    def leaks(self) -> list[str]:
        """Where the password (or the wrong one) shows; whitespace is taken out first, so a
        URL a console wrapped over two lines is found as well."""
        found = []
        for where, text in self.texts:
            joined = "".join(text.split())
            for token in (TOKEN, WRONG_TOKEN):
                if token in text or token in joined:
                    at = joined.find(token)
                    found.append(f"{where}: ...{joined[max(0, at - 80):at + 40]}...")
        return found

    def said(self) -> str:
        return "\n".join(text for _where, text in self.texts)


def _hba_edit(hba: Path, line: str, add: bool) -> None:
    """Add ``line`` first in pg_hba.conf, or take it out, under a lock: test processes of
    other pytest workers edit the same file for their own roles."""
    with open(f"{hba}.vb-lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        lines = hba.read_text().splitlines(keepends=True)
        kept = [old for old in lines if old != line]
        hba.write_text("".join([line, *kept] if add else kept))


def _refuses_wrong_password(role: Role) -> bool:
    engine = create_engine(role.with_password(WRONG).replace("postgresql://",
                                                             "postgresql+psycopg://", 1))
    try:
        with engine.connect():
            return False
    except Exception as exc:  # any failure to connect; which one is checked
        return "password authentication failed" in str(exc)
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def role(postgres_url: str) -> Iterator[Role]:
    base = make_url(postgres_url)
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    name = f"vbsecret_{secrets.token_hex(4)}"
    line = f"local {name} {name} scram-sha-256\n"
    with admin.connect() as conn:
        hba = Path(str(conn.exec_driver_sql("SHOW hba_file").scalar()))
        # exec_driver_sql: SQLAlchemy's text() would read ":x" in a literal as a parameter
        conn.exec_driver_sql(f"CREATE ROLE {name} LOGIN PASSWORD '{PASSWORD}'")
        conn.exec_driver_sql(f"CREATE DATABASE {name} OWNER {name}")
    user = base.set(drivername="postgresql", username=name, database=name)
    made = Role(name, user.set(password=PASSWORD).render_as_string(hide_password=False),
                user.update_query_dict({"password": PASSWORD}).render_as_string(
                    hide_password=False),
                user.render_as_string(hide_password=False), admin)
    try:
        _hba_edit(hba, line, add=True)
        with admin.connect() as conn:
            conn.exec_driver_sql("SELECT pg_reload_conf()")
        deadline = time.monotonic() + 60  # the server reloads its configuration at once
        while not _refuses_wrong_password(made):
            assert time.monotonic() < deadline, "the server never asked for the password"
            time.sleep(0.1)
        yield made
    finally:
        _hba_edit(hba, line, add=False)
        with admin.connect() as conn:
            conn.exec_driver_sql("SELECT pg_reload_conf()")
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            conn.exec_driver_sql(f"DROP ROLE IF EXISTS {name}")
        admin.dispose()


@pytest.fixture(scope="module")
def stored(role: Role, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Two runs of the experiment, made by `virtbench run` (the test and serve's read them)."""
    spec = tmp_path_factory.mktemp("stored") / "secretive.yaml"
    spec.write_text(SPEC)
    seen = Seen()
    for _ in range(2):
        result = CliRunner().invoke(app, ["run", str(spec), "--store", role.url, "--quiet"])
        assert result.exit_code == 0, result.stderr[-2000:]
        assert f"store postgresql://{role.name}:***@" in _flat(result.stderr)  # its last line
        seen.add("run", result.stdout + result.stderr)
    assert seen.leaks() == []
    return _run_ids(role.url)


@dataclass
class Invoked:
    code: int
    stdout: str
    stderr: str


class Commands:
    """The app run in this process, as the command line runs it; everything it prints kept."""

    def __init__(self, seen: Seen, capfd: pytest.CaptureFixture[str],
                 caplog: pytest.LogCaptureFixture) -> None:
        self.seen, self.capfd, self.caplog = seen, capfd, caplog

    def __call__(self, *args: str, env: dict[str, str] | None = None) -> Invoked:
        from virtbench.cli import consoles

        width = consoles.err.width
        consoles.err.width = consoles.console.width = 200
        try:
            result = CliRunner().invoke(app, list(args), env=env)
        finally:
            consoles.err.width = consoles.console.width = width
        where = " ".join(a[:40] for a in args)
        self.seen.add(f"{where} (stdout)", result.stdout)
        self.seen.add(f"{where} (stderr)", result.stderr)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            self.seen.add(f"{where} (exception)", repr(result.exception))
        out, err = self.capfd.readouterr()  # what reached the file descriptors themselves
        self.seen.add(f"{where} (fd 1)", out)
        self.seen.add(f"{where} (fd 2)", err)
        self.seen.add(f"{where} (log)", "\n".join(r.getMessage() for r in self.caplog.records))
        self.caplog.clear()
        return Invoked(result.exit_code, result.stdout, result.stderr)


@pytest.fixture
def commands(capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> Commands:
    caplog.set_level(logging.INFO)  # what a handler could print (none prints DEBUG)
    return Commands(Seen(), capfd, caplog)


def _run_ids(url: str) -> list[str]:
    """The store's runs of the experiment, oldest first."""
    store = Store(url)
    try:
        return [run.id for run in store.runs() if run.experiment == "secretive"]
    finally:
        store.close()


def _tables(seen: Seen, role: Role) -> int:
    """Every row of every table of the store into ``seen``, as text; how many tables."""
    engine = create_engine(role.admin.url.set(database=role.name))
    try:
        with engine.connect() as conn:
            tables = [str(name) for (name,) in conn.exec_driver_sql(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
            for table in tables:
                rows = conn.exec_driver_sql(f'SELECT t::text FROM "{table}" t').scalars()
                seen.add(f"table {table}", "\n".join(map(str, rows)))
    finally:
        engine.dispose()
    return len(tables)


def _files(seen: Seen, folder: Path) -> int:
    """Every file under ``folder`` into ``seen`` (gzip decompressed); how many."""
    count = 0
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
        seen.add(f"file {path.name}", data.decode(errors="replace"))
        count += 1
    return count


def _ok(result: Invoked, *words: str) -> None:
    assert result.code == 0, result.stderr[-2000:] + result.stdout[-2000:]
    for word in words:
        assert word in _flat(result.stdout + result.stderr), (word, result.stderr[-2000:])


def _flat(text: str) -> str:
    """Lines a console wrapped, joined again."""
    return " ".join(text.split())


def _walk(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, Any]]:
    for name in sorted(group.list_commands(None)):
        command = group.get_command(None, name)
        if hasattr(command, "real"):  # loaded on first use (virtbench.cli.lazy)
            command = command.real()
        if hasattr(command, "commands"):
            yield from _walk(command, (*path, name))
        else:
            yield " ".join((*path, name)), command


def test_every_store_command_is_run_here() -> None:
    with_store = {name for name, command in _walk(typer.main.get_command(app))
                  if any("--store" in p.opts for p in command.params)}
    assert with_store == STORE_COMMANDS


def test_no_command_shows_the_password(role: Role, stored: list[str], commands: Commands,
                                       tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "secretive.yaml"
    spec.write_text(SPEC)
    out = tmp_path / "out"
    out.mkdir()
    url, masked = role.url, f"{role.name}:***@"
    _ok(commands("run", str(spec), "--store", url, "--report", str(out / "run.html")), masked)
    _ok(commands("run", str(spec), "--store", role.query_url, "--quiet"), "password=***")
    refused = commands("run", str(spec), "--store", url, "--resume", "latest")
    assert refused.code == 2 and "no unfinished run of secretive in" in _flat(refused.stderr)
    base, new = stored[:2]
    _ok(commands("runs", "--store", url), base, new)
    _ok(commands("runs", env={"VIRTBENCH_STORE": url}), base, new)
    for fmt in ("table", "json", "csv", "markdown"):
        _ok(commands("report", new, "--store", url, "-f", fmt))
    _ok(commands("report", new, "--store", url, "-f", "html", "-o", str(out / "report.html")))
    _ok(commands("report", base, new, "--store", url, "-f", "json", "-o", str(out / "two.json")))
    for extra in ([], ["--json"], ["--fail-if-worse", "50", "--allow-unjudged"],
                  ["-f", "junit", "-o", str(out / "junit.xml")], ["-f", "markdown"],
                  ["-f", "gitlab", "-o", str(out / "metrics.txt")], ["-f", "github"]):
        assert commands("compare", base, new, "--store", url, *extra,
                        env={"GITHUB_STEP_SUMMARY": str(out / "summary.md")}).code in (0, 1)
    _ok(commands("history", "secretive", "--store", url, "--any-host"))
    _ok(commands("history", "secretive", "--store", url, "--json"))
    _ok(commands("history", "secretive", "--store", url, "-f", "html",
                 "-o", str(out / "history.html")))
    _ok(commands("export", base, "--store", url, "-o", str(out / "base.json.gz")))
    _ok(commands("import", str(out / "base.json.gz"), "--store", url, "--replace"))
    _ok(commands("calibrate", str(spec), "--store", url, "-k", "2", "--json"), masked)
    fleet = commands("run", str(spec), "--store", url, "--host", "ssh://nobody@127.0.0.1:1")
    assert fleet.code == 1 and f"store postgresql://{masked}" in _flat(fleet.stderr)
    fleet_id = _flat(fleet.stderr).split("fleet id ")[1].split()[0]
    _ok(commands("hosts", "runs", fleet_id, "--store", url))
    assessed = commands("assess", "--store", url, "--ssh", "nobody@127.0.0.1")
    assert assessed.code == 2 and masked in _flat(assessed.stderr)  # before --ssh is refused
    _ok(commands("kvm", "rollback", "--list", env={"VIRTBENCH_STORE": url}))
    assert _files(commands.seen, out) == 8
    assert _tables(commands.seen, role) >= 10  # runs, facts, fleet records (saved_state)...
    assert any(where == "table saved_state" and fleet_id in text  # the fleet's record is read
               for where, text in commands.seen.texts)
    assert commands.seen.leaks() == []


@pytest.mark.parametrize("debug", [[], ["--debug"]])
def test_no_failure_shows_the_password(role: Role, commands: Commands, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch, debug: list[str]) -> None:
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "secretive.yaml"
    spec.write_text(SPEC)
    wrong = role.with_password(WRONG)
    wrong_query = make_url(role.query_url).update_query_dict({"password": WRONG})
    host = make_url(role.url).set(host="127.0.0.1", port=1, query={})
    cases: dict[str, tuple[str, str]] = {
        "wrong password": (wrong, "password authentication failed"),
        "wrong ?password=": (wrong_query.render_as_string(hide_password=False),
                             "password authentication failed"),
        "unreachable": (host.render_as_string(hide_password=False), "Connection refused"),
        "no such database": (make_url(role.url).set(database="vbnone").render_as_string(
            hide_password=False), "does not exist"),
        "malformed port": (role.url.replace("@/", "@h:port/"), "invalid literal"),
        "conninfo": (f"host=/tmp user={role.name} password={PASSWORD} dbname={role.name}",
                     "libpq connection string"),
    }
    for case, (location, reason) in cases.items():
        for args in (["runs"], ["report"], ["export", "latest", "-o", "x.json.gz"],
                     ["compare", "a", "b"], ["history", "secretive"], ["serve", "--port", "1"],
                     ["hosts", "runs", "f"], ["run", str(spec), "--quiet"]):
            result = commands(*debug, *args, "--store", location)
            assert result.code == 2, (case, args, result.stderr[-1500:])
            assert reason in _flat(result.stderr) and "error:" in result.stderr, (case, args)
    wrong_env = commands(*debug, "runs", "--store", role.bare_url, env={"PGPASSWORD": WRONG})
    assert wrong_env.code == 2 and "password authentication failed" in _flat(wrong_env.stderr)
    assert list(tmp_path.iterdir()) == [spec]  # no SQLite file named after a conninfo
    assert commands.seen.leaks() == []


def test_pgpassword_and_a_pgpass_file_keep_it_out_of_the_url(role: Role, commands: Commands,
                                                             tmp_path: Path) -> None:
    """The documented ways (docs/experiments.md, "The store"): the URL names no password."""
    spec = tmp_path / "secretive.yaml"
    spec.write_text(SPEC)
    _ok(commands("run", str(spec), "--store", role.bare_url, "--quiet",
                 env={"PGPASSWORD": PASSWORD}), f"store {role.bare_url}")
    pgpass = tmp_path / "pgpass"
    escaped = PASSWORD.replace("\\", "\\\\").replace(":", "\\:")
    pgpass.write_text(f"*:*:*:{role.name}:{escaped}\n")
    pgpass.chmod(0o600)  # libpq ignores a file others may read
    _ok(commands("runs", "--store", role.bare_url, env={"PGPASSFILE": str(pgpass)}),
        "secretive")
    assert commands.seen.leaks() == []


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serve(location: str, port: int) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "virtbench.cli", "serve", "--store", location,
                             "--port", str(port)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=sigint_default)


def _stop(server: subprocess.Popen[str]) -> tuple[str, str]:
    with contextlib.suppress(ProcessLookupError):
        server.send_signal(signal.SIGINT)
    finish(server, 30)
    assert server.stdout is not None and server.stderr is not None
    return server.stdout.read(), server.stderr.read()


def _pages(base_url: str, paths: Sequence[str], seen: Seen) -> list[int]:
    statuses = []
    for path in paths:
        response = httpx.get(base_url + path, timeout=30, follow_redirects=True)
        seen.add(f"GET {path}", "\n".join(f"{k}: {v}" for k, v in response.headers.items())
                 + "\n" + response.text)
        statuses.append(response.status_code)
    return statuses


def test_serve_shows_no_password_in_its_banner_pages_or_error_pages(
        role: Role, stored: list[str], commands: Commands) -> None:
    ids, run_id = stored, stored[0]
    seen, port = commands.seen, _free_port()
    server = _serve(role.url, port)
    try:
        assert server.stderr is not None
        banner: list[str] = []
        while not any("Ctrl-C" in line for line in banner):
            line = readline(server, 60, server.stderr)
            assert line, f"serve ended: {banner}"
            banner.append(line)
        said = " ".join(" ".join(banner).split())
        assert f"serving postgresql://{role.name}:***@" in said, said
        seen.add("serve banner", said)
        base_url = f"http://127.0.0.1:{port}"
        paths = ["/", "/runs", "/runs.csv", "/runs.json", f"/runs/{run_id}",
                 f"/runs/{run_id}/body", f"/runs/{run_id}/progress",
                 f"/runs/{run_id}/download/csv", f"/runs/{run_id}/download/json",
                 f"/compare?run={ids[0]}&run={ids[1]}", f"/compare.json?run={ids[0]}&run={ids[1]}",
                 "/history?experiment=secretive", "/history.json?experiment=secretive",
                 "/runs/nosuchrun", "/nosuchpage"]
        assert _pages(base_url, paths, seen)[:-2] == [200] * (len(paths) - 2)
        # the server loses its connections and the password changes: its error pages say why
        with role.admin.connect() as conn:
            conn.exec_driver_sql(f"ALTER ROLE {role.name} PASSWORD '{WRONG}'")
            conn.exec_driver_sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                 f"WHERE usename = '{role.name}'")
        try:
            failed = _pages(base_url, ["/runs", "/runs", f"/runs/{run_id}"], seen)
        finally:
            with role.admin.connect() as conn:
                conn.exec_driver_sql(f"ALTER ROLE {role.name} PASSWORD '{PASSWORD}'")
        assert all(status >= 400 for status in failed), failed
    finally:
        stdout, stderr = _stop(server)
    seen.add("serve stdout", stdout)
    seen.add("serve stderr", stderr)
    assert "password authentication failed" in _flat(seen.said())  # a page or the log says it
    # serve refuses a wrong password before it binds (one process: the real banner path)
    refused = subprocess.run([sys.executable, "-m", "virtbench.cli", "serve", "--store",
                              role.with_password(WRONG), "--port", str(port)],
                             capture_output=True, text=True, timeout=60,
                             env={**os.environ, "VIRTBENCH_DEBUG": "1"})
    assert refused.returncode == 2 and "password authentication failed" in refused.stderr
    seen.add("serve refused", refused.stdout + refused.stderr)
    assert seen.leaks() == []
