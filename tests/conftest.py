"""Shared fixtures: result stores on SQLite and on a real PostgreSQL server.

Session guards: a skipped lab test fails the session (a skip there hides a failure: a lab
needs root, its tools, its kernel features, and CI must say when any of them is missing), and
so does a test that leaves a new file in the repository root (outputs belong in tmp_path).

How the suite is launched must not matter (docs/contributing.md): started in the background
from a script or by CI, pytest inherits SIGINT *ignored*, and an ignored signal stays ignored
in every child it execs. The Ctrl-C tests interrupt this process and the children they start,
so the session installs Python's Ctrl-C handler for its length (a handled signal is reset to
the default in exec'd children) and puts back what it found.

Every test has a time limit (pytest-timeout, signal method: the stuck test fails with every
thread's stack and the run goes on): the ini default for unit tests, and an explicit
``pytest.mark.timeout`` for each lab and end-to-end module, which start real services.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from virtbench.store import Store

REPO = Path(__file__).resolve().parent.parent
# Caches made in the root by design (tools; .cache: the lab tests' guest images; .hypothesis:
# the property tests' example database; all gitignored); anything else a test leaves there is
# a stray output.
_ROOT_CACHES = {".pytest_cache", "__pycache__", ".mypy_cache", ".ruff_cache", ".coverage",
                ".cache", ".hypothesis", ".import_linter_cache"}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--allow-lab-skips", action="store_true",
                     help="do not fail the session when a test marked 'lab' is skipped")


def pytest_configure(config: pytest.Config) -> None:
    _choose_fuzzing_examples()
    config.pluginmanager.register(SessionGuards(config), "virtbench-session-guards")
    config.stash[_SIGINT_FOUND] = signal.signal(signal.SIGINT, signal.default_int_handler)
    _build_each_cli_once()


def _choose_fuzzing_examples() -> None:
    """The property tests draw the same examples on every run unless VIRTBENCH_FUZZ=random:
    the gate every change passes must not turn red because a new random draw found an old
    bug. Exploring is a separate, deliberate run (docs/contributing.md); what it finds becomes
    a fix and, where it helps, an explicit @example."""
    from hypothesis import settings

    settings.register_profile("virtbench-suite", derandomize=True, print_blob=True)
    settings.register_profile("virtbench-explore", print_blob=True)
    random = os.environ.get("VIRTBENCH_FUZZ", "") == "random"
    settings.load_profile("virtbench-explore" if random else "virtbench-suite")


def _build_each_cli_once() -> None:
    """typer's CliRunner turns the app into click commands on every invoke: 0.1 s of CPU
    each, most of a unit test's time for the hundreds of in-process invocations. The commands
    an app turns into depend only on what it registered, so they are built once per state."""
    import typer.main
    import typer.testing

    build = typer.main.get_command
    built: dict[tuple[int, ...], Any] = {}

    def registered(app: typer.Typer) -> tuple[int, ...]:
        found = [id(app), len(app.registered_commands), len(app.registered_groups)]
        found += [id(c.callback) for c in app.registered_commands]
        for group in app.registered_groups:
            if group.typer_instance is not None:
                found += registered(group.typer_instance)
        return tuple(found)

    def get_command(app: typer.Typer) -> Any:
        key = registered(app)
        if key not in built:
            built[key] = build(app)
        return built[key]

    typer.testing._get_command = get_command  # type: ignore[attr-defined,assignment]


def pytest_unconfigure(config: pytest.Config) -> None:
    found = config.stash.get(_SIGINT_FOUND, None)
    if found is not None:
        signal.signal(signal.SIGINT, found)


_SIGINT_FOUND = pytest.StashKey[Any]()
# Tests that start real services declare their own limit; the unit default would be too tight.
_DECLARED_LIMIT = ("tests/lab/", "tests/e2e/")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    undeclared = [item.nodeid for item in items if item.nodeid.startswith(_DECLARED_LIMIT)
                  and item.get_closest_marker("timeout") is None]
    if undeclared:
        raise pytest.UsageError(
            "lab and end-to-end tests declare their time limit (pytestmark = "
            f"pytest.mark.timeout(SECONDS)); missing in: {', '.join(undeclared[:5])}"
            + (f" and {len(undeclared) - 5} more" if len(undeclared) > 5 else ""))


class SessionGuards:
    """Fails an otherwise green session on a skipped lab test or a file left in the repo root."""

    def __init__(self, config: pytest.Config) -> None:
        self.allow_lab_skips = bool(config.getoption("allow_lab_skips"))
        self.lab_skips: list[tuple[str, str]] = []
        self.root_before = self._root_entries()

    @staticmethod
    def _root_entries() -> set[str]:
        return {p.name for p in REPO.iterdir()} - _ROOT_CACHES

    def new_root_files(self) -> list[str]:
        return sorted(self._root_entries() - self.root_before)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.skipped and "lab" in report.keywords:
            self._lab_skip(report)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        # A module-level skip happens before its marks exist: tests/lab is lab by location.
        if report.skipped and report.nodeid.startswith("tests/lab/"):
            self._lab_skip(report)

    def _lab_skip(self, report: pytest.TestReport | pytest.CollectReport) -> None:
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        self.lab_skips.append((report.nodeid, reason.removeprefix("Skipped: ")))

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        failed = bool(self.new_root_files()) or (bool(self.lab_skips)
                                                 and not self.allow_lab_skips)
        if failed and exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.lab_skips:
            verdict = " (allowed by --allow-lab-skips)" if self.allow_lab_skips else (
                ": the session fails")
            terminalreporter.section(f"{len(self.lab_skips)} lab tests skipped{verdict}",
                                     red=not self.allow_lab_skips)
            for nodeid, reason in self.lab_skips:
                terminalreporter.line(f"SKIPPED {nodeid}: {reason}")
            if not self.allow_lab_skips:
                terminalreporter.line("Lab tests must run: as root (or scripts/test.sh as a "
                                      "user with sudo), with every tool the reasons name.")
        created = self.new_root_files()
        if created:
            terminalreporter.section("tests wrote files into the repository root", red=True)
            terminalreporter.line(", ".join(created) + ": write outputs under tmp_path instead")


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """VIRTBENCH_TEST_PG_URL (scripts/test.sh starts a server), else start one here."""
    url = os.environ.get("VIRTBENCH_TEST_PG_URL")
    if url:
        worker = os.environ.get("PYTEST_XDIST_WORKER")
        yield _database_of_worker(url, worker) if worker else url
        return
    if not list(Path("/usr/lib/postgresql").glob("*/bin/initdb")):
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    workdir = tempfile.mkdtemp(prefix="vb-pg.")
    script = str(REPO / "scripts" / "postgres.sh")
    url = subprocess.run(["bash", script, "start", workdir], check=True, capture_output=True,
                         text=True, timeout=300).stdout.strip()
    try:
        yield url
    finally:
        subprocess.run(["bash", script, "stop", workdir], check=False, timeout=300)
        shutil.rmtree(workdir, ignore_errors=True)


def _database_of_worker(url: str, worker: str) -> str:
    """A database of this pytest-xdist worker's own on the same server: the store fixture wipes
    its database before each test, which must never touch another worker's runs."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    base = make_url(url)
    name = f"{base.database}_{worker}"
    engine = create_engine(base, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            exists = conn.execute(text("SELECT 1 FROM pg_database WHERE datname = :name"),
                                  {"name": name}).first()
            if exists is None:
                conn.execute(text(f'CREATE DATABASE "{name}"'))
    finally:
        engine.dispose()
    return base.set(database=name).render_as_string(hide_password=False)


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        st = Store(str(tmp_path / "store.db"))
    else:
        st = Store(request.getfixturevalue("postgres_url"))
        _wipe(st)
    yield st
    st.close()


def _wipe(st: Store) -> None:
    for run in st.runs():
        st.delete_run(run.id)
    with st.engine.begin() as conn:
        from virtbench.store import schema

        conn.execute(schema.saved_state.delete())


@pytest.fixture
def no_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Starting a process fails the test (subprocess.Popen, which the targets' run and spawn
    use; os.posix_spawn, their timed run's; os.fork, a forked call's): for FakeTarget tests."""
    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("the test started a process")

    monkeypatch.setattr(subprocess.Popen, "__init__", refused)
    for name in ("posix_spawn", "posix_spawnp", "fork"):
        monkeypatch.setattr(os, name, refused)


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A private directory the nginx and varnish users can traverse (pytest's tmp is 0700)."""
    path = Path(tempfile.mkdtemp(prefix="vb-test-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


FlowKey = tuple[str, str, int, str, int]


def _tshark_flows(capture: Path, display_filter: str = "") -> dict[FlowKey, list[int]]:
    """Per 5-tuple [packets, bytes, first ns, last ns] from `tshark -T fields` (timestamps as
    printed, to the ns), optionally after a display filter (-Y)."""
    fields = ["frame.time_epoch", "frame.len", "ip.proto", "ipv6.nxt", "ip.src", "ipv6.src",
              "ip.dst", "ipv6.dst", "tcp.srcport", "udp.srcport", "tcp.dstport", "udp.dstport"]
    argv = ["tshark", "-n", "-r", str(capture), "-T", "fields", "-E", "occurrence=f"]
    argv += [a for f in fields for a in ("-e", f)] + (["-Y", display_filter] if display_filter
                                                        else [])
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=300).stdout
    names = {"6": "tcp", "17": "udp", "1": "icmp", "58": "icmpv6"}
    flows: dict[FlowKey, list[int]] = {}
    for line in out.splitlines():
        t, length, p4, p6, s4, s6, d4, d6, ts, us, td, ud = line.split("\t")
        whole, _, frac = t.partition(".")
        ns = int(whole) * 1_000_000_000 + int(frac.ljust(9, "0")[:9])
        key = (names.get(p4 or p6, p4 or p6), s4 or s6, int(ts or us or 0), d4 or d6,
               int(td or ud or 0))
        row = flows.setdefault(key, [0, 0, ns, ns])
        row[0] += 1
        row[1] += int(length)
        row[2], row[3] = min(row[2], ns), max(row[3], ns)
    return flows


@pytest.fixture
def tshark_flows() -> Any:
    if shutil.which("tshark") is None:
        pytest.skip("tshark is not installed (apt-get install tshark)")
    return _tshark_flows
