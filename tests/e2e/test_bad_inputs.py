"""Every expected failure of every command: one clear message, the documented exit code
(docs/cli.md), no Python traceback. Drives the real CLI: in-process through typer's CliRunner
with the real app, and a subset as a real `virtbench` process (stderr as a user sees it)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url
from typer.testing import CliRunner

from virtbench.cli.root import app
from virtbench.store import Store

# A bound for a hang, not a speed: generous for a loaded 2-core machine.
pytestmark = pytest.mark.timeout(600)

DATA = Path(__file__).resolve().parent.parent / "data"

GOOD = """\
name: good
variants: [{name: a}]
workloads: [{name: exec.noop}]
repetitions: 2
warmup: 0
"""
EXPERIMENTS = {
    "invalid-yaml.yaml": "name: [unclosed\n",
    "a-list.yaml": "- name: x\n",
    "unknown-workload.yaml": "name: x\nvariants: [{name: a}]\nworkloads: [{name: no.such}]\n",
    "bad-params.yaml": ("name: x\nvariants: [{name: a}]\n"
                        "workloads:\n  - {name: exec.command, params: {argv: 5}}\n"),
    "unknown-lab.yaml": ("name: x\nlab: {kind: moon}\nvariants: [{name: a}]\n"
                         "workloads: [{name: exec.noop}]\n"),
    "bad-baseline.yaml": ("name: x\nbaseline: zz\nvariants: [{name: a}]\n"
                          "workloads: [{name: exec.noop}]\n"),
    "bad-timeout.yaml": ("name: x\nvariants: [{name: a}]\n"
                         "workloads:\n  - {name: exec.noop, timeout_s: -1}\n"),
    "unknown-target.yaml": ("name: x\ntarget: {kind: mars}\nvariants: [{name: a}]\n"
                            "workloads: [{name: exec.noop}]\n"),
    "bad-target-params.yaml": ("name: x\ntarget: {kind: ssh, params: {hots: x}}\n"
                               "variants: [{name: a}]\nworkloads: [{name: exec.noop}]\n"),
    # Port 1 on loopback: nothing listens there, the connection is refused at once.
    "unreachable-ssh.yaml": ("name: x\ntarget: {kind: ssh, params: {host: 127.0.0.1, port: 1}}\n"
                             "variants: [{name: a}]\nworkloads: [{name: exec.noop}]\n"),
    "missing-netns.yaml": ("name: x\ntarget: {kind: netns, params: {namespace: vb-no-such-ns}}\n"
                           "variants: [{name: a}]\nworkloads: [{name: exec.noop}]\n"),
    "netns-no-name.yaml": ("name: x\ntarget: {kind: netns}\nvariants: [{name: a}]\n"
                           "workloads: [{name: exec.noop}]\n"),
    "needs-fio.yaml": "name: x\nvariants: [{name: a}]\nworkloads: [{name: storage.fio}]\n",
    "good.yaml": GOOD,
    "empty.yaml": "",
}


@dataclass(frozen=True)
class Case:
    args: list[str]
    exit_code: int
    message: str
    env: dict[str, str] | None = None
    process: bool = False
    """Also run as a real process (stderr exactly as a user sees it)."""
    report: bool = False
    """The message is the command's report on stdout (`run --check`), not an error."""


CASES: dict[str, Case] = {
    # experiment files
    "run: missing file": Case(["run", "missing.yaml"], 2,
                              "cannot read experiment file missing.yaml", process=True),
    "run: a directory": Case(["run", "."], 2,
                             ".: not a YAML experiment file (a directory, not a file)"),
    "run: a binary file": Case(["run", "binary.bin"], 2,
                               "binary.bin: not a YAML experiment file"),
    "run: an empty file": Case(["run", "empty.yaml"], 2,
                               "empty.yaml:1: an experiment file must be a mapping"),
    "run: invalid YAML": Case(["run", "invalid-yaml.yaml"], 2, "invalid-yaml.yaml:2: invalid YAML"),
    "run: not a mapping": Case(["run", "a-list.yaml"], 2, "must be a mapping"),
    "run: unknown workload": Case(["run", "unknown-workload.yaml"], 2,
                                  "unknown workload 'no.such'"),
    "run: bad workload params": Case(["run", "bad-params.yaml"], 2,
                                     "bad-params.yaml:4: workloads[0].params.argv"),
    "run: unknown lab": Case(["run", "unknown-lab.yaml"], 2, "unknown lab 'moon'"),
    "run: baseline not a variant": Case(["run", "bad-baseline.yaml"], 2,
                                        "baseline 'zz' is not a variant"),
    "run: bad time limit": Case(["run", "bad-timeout.yaml"], 2,
                                "workloads[0].timeout_s: Input should be greater than 0"),
    "run: unknown target kind": Case(["run", "unknown-target.yaml"], 2,
                                     "target.kind: unknown target 'mars'"),
    "run: bad target params": Case(["run", "bad-target-params.yaml"], 2,
                                   "target.params.hots: Extra inputs are not permitted; did "
                                   "you mean 'host'?"),
    # runs that cannot start
    "run: unknown run to resume": Case(["run", "good.yaml", "--resume", "nosuch", "--store",
                                        "good.db"], 2, "no run matches 'nosuch'"),
    "run: nothing to resume": Case(["run", "good.yaml", "--resume", "latest", "--store",
                                    "good.db"], 2, "no unfinished run of good"),
    "check: unreachable SSH target": Case(["run", "unreachable-ssh.yaml", "--check"], 1,
                                          "cannot reach ssh:127.0.0.1:1: ssh: connect to host "
                                          "127.0.0.1 port 1: Connection refused", report=True),
    "run: unreachable SSH target": Case(["run", "unreachable-ssh.yaml", "--store", "x.db"], 1,
                                        "cannot reach ssh:127.0.0.1:1", process=True),
    "check: missing network namespace": Case(
        ["run", "missing-netns.yaml", "--check"], 1,
        'cannot enter netns:vb-no-such-ns: Cannot open network namespace "vb-no-such-ns"',
        report=True),
    "run: netns target without a name": Case(["run", "netns-no-name.yaml"], 2,
                                             "target.params.namespace: Field required"),
    "check: missing tool": Case(["run", "needs-fio.yaml", "--check"], 1,
                                "'fio' not found on local; install the Debian package 'fio' "
                                "(apt-get install fio)", env={"PATH": "/nonexistent"},
                                report=True),
    "run: missing tool": Case(["run", "needs-fio.yaml", "--store", "x.db"], 1,
                              "cannot run; fix these first", env={"PATH": "/nonexistent"},
                              process=True),
    # stores
    "runs: not a database": Case(["runs", "--store", "notdb.db"], 2,
                                 "cannot open result store 'notdb.db': file is not a database",
                                 process=True),
    "report: not a database": Case(["report", "--store", "notdb.db"], 2,
                                   "file is not a database"),
    "runs: PostgreSQL unreachable": Case(["runs", "--store", "postgresql://u@127.0.0.1:1/x"], 2,
                                         "Connection refused"),
    "runs: malformed PostgreSQL URL": Case(
        ["runs", "--store", "postgresql://u@127.0.0.1:notaport/x"], 2,
        "give a SQLite file path or postgresql://user@host[:port]/dbname"),
    "runs: foreign database URL": Case(["runs", "--store", "mysql://u@127.0.0.1/x"], 2,
                                       "cannot open result store 'mysql://u@127.0.0.1/x'"),
    "runs: store in a missing directory": Case(["runs", "--store", "no/such/dir/x.db"], 2,
                                               "no store at no/such/dir/x.db"),
    "report: empty store": Case(["report", "--store", "empty.db"], 2, "holds no runs yet"),
    # run ids and outputs
    "report: unknown run": Case(["report", "nosuch", "--store", "good.db"], 2,
                                "no run matches 'nosuch'"),
    "report: unknown format": Case(["report", "-f", "pdf", "--store", "good.db"], 2,
                                   "--format must be one of"),
    "report: output directory missing": Case(
        ["report", "-f", "html", "-o", "no/such/r.html", "--store", "good.db"], 2,
        "no/such/r.html: No such file or directory"),
    "export: unknown run": Case(["export", "nosuch", "-o", "x.json", "--store", "good.db"], 2,
                                "no run matches 'nosuch'"),
    "report: unknown baseline": Case(["report", "--baseline", "zz", "--store", "good.db"], 2,
                                     "baseline 'zz' is not a variant of the analysed runs"),
    "report: unknown compare-by knob": Case(["report", "--compare-by", "zz", "--store",
                                             "good.db"], 2, "has no knob 'zz'"),
    "compare: one run": Case(["compare", "good", "--store", "good.db"], 2,
                             "compare needs two runs (BASE NEW)"),
    # import files
    "import: a directory": Case(["import", ".", "--store", "x.db"], 2,
                                ".: not a virtbench result file (a directory, not a file)"),
    "import: missing file": Case(["import", "missing.json.gz", "--store", "x.db"], 2,
                                 "cannot read missing.json.gz"),
    "import: truncated export": Case(["import", "truncated.json.gz", "--store", "x.db"], 2,
                                     "truncated.json.gz: truncated or damaged", process=True),
    "import: an iperf3 output": Case(["import", "iperf3.json", "--store", "x.db"], 2,
                                     "iperf3.json: not a virtbench result file"),
    "import: a text file": Case(["import", "text.txt", "--store", "x.db"], 2,
                                "text.txt: not a virtbench result file"),
    "import: tables missing": Case(["import", "no-tables.json", "--store", "x.db"], 2,
                                   "damaged result file: table 'runs' is missing"),
    "import: a column missing": Case(["import", "no-column.json", "--store", "x.db"], 2,
                                     "no-column.json: runs[0].experiment: missing; nothing "
                                     "imported"),
    "import: newer format": Case(["import", "newer.json", "--store", "x.db"], 2,
                                 "result format 99 is newer than this virtbench reads"),
    "import: run already there": Case(["import", "good.json.gz", "--store", "good.db"], 2,
                                      "is already in the store; use --replace"),
    # tool outputs
    "parse: unknown tool": Case(["parse", "nosuch", "text.txt"], 2, "no parser for 'nosuch'"),
    "parse: iperf3 error field": Case(["parse", "iperf3", "iperf3-error.json"], 2,
                                      "iperf3-error.json: not readable as iperf3 output",
                                      process=True),
    "parse: malformed fio JSON": Case(["parse", "fio", "fio-truncated.json"], 2,
                                      "fio-truncated.json: not readable as fio output"),
    "parse: not bonnie++ output": Case(["parse", "bonnie++", "text.txt"], 2,
                                       "text.txt: not readable as bonnie++ output"),
    "parse: not irtt output": Case(["parse", "irtt", "text.txt"], 2,
                                   "text.txt: not readable as irtt output"),
    "parse: not varnishstat output": Case(["parse", "varnishstat", "text.txt"], 2,
                                          "text.txt: not readable as varnishstat output"),
    "parse: output of another tool": Case(["parse", "fio", "iperf3.json"], 2,
                                          "iperf3.json: not readable as fio output"),
    "parse: empty stdin": Case(["parse", "iperf3", "-"], 2, "-: not readable as iperf3 output"),
    "parse: missing file": Case(["parse", "fio", "missing.json"], 2, "cannot read missing.json"),
    "parse: binary file": Case(["parse", "fio", "binary.bin"], 2,
                               "binary.bin: not readable as fio output"),
    "parse: zstd output": Case(["parse", "iperf3", "out.json.zst"], 2,
                               "out.json.zst: not readable as iperf3 output: "
                               "zstd-compressed input is"),
    "parse: truncated gzip": Case(["parse", "iperf3", "truncated.json.gz"], 2,
                                  "truncated.json.gz: not readable as iperf3 output: "
                                  "gzip-compressed input is damaged"),
    # labs and usage
    "lab clean: damaged manifest": Case(["lab", "clean"], 2, "damaged lab manifest",
                                        env={"VIRTBENCH_LAB_ROOT": "labroot"}),
    "usage: unknown command": Case(["nosuch"], 2, "No such command 'nosuch'"),
    "usage: unknown option": Case(["runs", "--bogus"], 2, "No such option: --bogus"),
}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Every bad input, beside a store holding one good run and its export."""
    d = tmp_path_factory.mktemp("bad-inputs")
    for name, text in EXPERIMENTS.items():
        (d / name).write_text(text)
    cwd = Path.cwd()
    os.chdir(d)
    try:
        _invoke(["run", "good.yaml", "--store", "good.db", "-q"], expect=0)
        _invoke(["export", "good", "-o", "good.json.gz", "--store", "good.db"], expect=0)
        Store("empty.db").close()  # a store with no runs (reading commands create none)
        _bad_files(d)
        yield d
    finally:
        os.chdir(cwd)


def _bad_files(d: Path) -> None:
    export = (d / "good.json.gz").read_bytes()
    (d / "truncated.json.gz").write_bytes(export[: len(export) // 2])
    document = json.loads(gzip.decompress(export))
    (d / "no-tables.json").write_text(json.dumps({**document, "tables": {"runs": "x"}}))
    no_column = json.loads(json.dumps(document))
    del no_column["tables"]["runs"][0]["experiment"]
    (d / "no-column.json").write_text(json.dumps(no_column))
    (d / "newer.json").write_text(json.dumps({**document, "version": 99}))
    shutil.copy(DATA / "iperf3" / "tcp_20M_veth.json", d / "iperf3.json")
    iperf3 = json.loads((DATA / "iperf3" / "tcp_20M_veth.json").read_text())
    # What iperf3 -J writes when it cannot reach its server: an error and no results (a run
    # cut short with valid end sums plus an error is a partial result, not bad input).
    (d / "iperf3-error.json").write_text(json.dumps(
        {"start": iperf3["start"], "intervals": [], "end": {},
         "error": "unable to connect to server: Connection refused"}))
    fio = (DATA / "fio" / "ext4loop-libaio-direct-read.json").read_text()
    (d / "fio-truncated.json").write_text(fio[: len(fio) // 2])
    (d / "text.txt").write_text("hello, this is not a tool output\n")
    (d / "notdb.db").write_text("not a database, only text " * 20)
    (d / "binary.bin").write_bytes(bytes(range(256)) * 4)
    (d / "out.json.zst").write_bytes(b"\x28\xb5\x2f\xfd" + b"\0" * 16)
    (d / "iperf3.json.gz").write_bytes(gzip.compress((d / "iperf3.json").read_bytes()))
    (d / "labroot").mkdir()
    (d / "labroot" / "broken.json").write_text('{"lab": "fs", "objects": ')


def _invoke(args: list[str], expect: int | None = None,
            env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, args, env=env)
    if expect is not None:
        assert result.exit_code == expect, (args, result.stdout, result.stderr)
    return result.exit_code, result.stdout, result.stderr


def _virtbench() -> list[str]:
    script = Path(sys.executable).parent / "virtbench"
    return [str(script)] if script.exists() else [sys.executable, "-m", "virtbench.cli"]


def _process(args: list[str], cwd: Path, env: dict[str, str] | None = None
             ) -> tuple[int, str, str]:
    proc = subprocess.run([*_virtbench(), *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "XDG_CACHE_HOME": str(cwd), **(env or {})},
                          timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def _check(case: Case, code: int, out: str, err: str) -> None:
    assert "Traceback" not in out + err, err
    assert code == case.exit_code, (code, out, err)
    if case.report:  # words, not lines: on a terminal rich wraps the report at its width
        assert case.message in " ".join(out.split()), out
    elif "No such" in case.message:  # typer draws usage errors in a panel of its own
        assert case.message in err, err
    else:
        assert err.startswith("error: ") and case.message in err, err


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_gives_one_message_and_its_exit_code(name: str, workdir: Path) -> None:
    case = CASES[name]
    _check(case, *_invoke(case.args, env=case.env))


@pytest.mark.parametrize("name", [name for name, case in CASES.items() if case.process])
def test_bad_input_in_a_real_process(name: str, workdir: Path) -> None:
    case = CASES[name]
    _check(case, *_process(case.args, workdir, case.env))


def test_at_least_thirty_distinct_bad_inputs() -> None:
    assert len({tuple(c.args) + tuple(sorted((c.env or {}).items())) for c in CASES.values()}
               ) >= 30


def test_compressed_output_is_read(workdir: Path) -> None:
    code, out, err = _invoke(["parse", "iperf3", "iperf3.json.gz", "--json"])
    assert code == 0, err
    assert any(m["metric"] == "throughput_mbps" for m in json.loads(out)["measurements"]), out


def test_debug_adds_the_traceback(workdir: Path) -> None:
    for env, args in (({}, ["--debug", "parse", "fio", "fio-truncated.json"]),
                      ({"VIRTBENCH_DEBUG": "1"}, ["parse", "fio", "fio-truncated.json"])):
        code, _out, err = _process(args, workdir, env)
        assert code == 2
        assert "Traceback (most recent call last)" in err, err
        assert "error: fio-truncated.json: not readable as fio output" in err, err


def test_a_bug_prints_its_traceback_and_exit_code_3(workdir: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from virtbench import plugins

    def broken(tool: str) -> object:
        raise RuntimeError("a bug")

    monkeypatch.setattr(plugins, "get_parser", broken)
    code, _out, err = _invoke(["parse", "fio", "text.txt"])
    assert code == 3
    assert "Traceback" in err and "internal error (a bug in virtbench): RuntimeError: a bug" in err


@pytest.mark.slow
def test_locked_store(workdir: Path) -> None:
    """Another process holds the write lock past the store's 10 s busy timeout."""
    holder = sqlite3.connect(workdir / "good.db", isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        code, out, err = _process(["import", "good.json.gz", "--replace", "--store", "good.db"],
                                  workdir)
    finally:
        holder.close()
    _check(Case([], 1, "result store 'good.db': database is locked"), code, out, err)


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs, mounted for this test only."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], check=True,
                   timeout=60)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True, timeout=60)


@pytest.mark.slow
# Where the disk fills decides whether the run's last write (its status) finds room: with 84
# and 204 KiB left the status write failed too, and its error replaced the run's (no run id,
# the run left 'running'), until the store reclaimed its write-ahead log's space for it. When
# even that finds no room, the run's error says so, and `runs` shows it abandoned.
@pytest.mark.parametrize("free_kib", [84, 204, 384])
def test_full_disk_while_the_store_writes(tiny_disk: Path, tmp_path: Path, free_kib: int) -> None:
    store = tiny_disk / "store.db"
    # An empty store, made in another process: nothing of this one may hold the tmpfs (umount).
    subprocess.run([sys.executable, "-c", "import sys; from virtbench.store import Store; "
                    "Store(sys.argv[1]).close()", str(store)], check=True, timeout=120)
    # Leave a little room: the run starts, then its 3,000 trials fill the disk.
    free = shutil.disk_usage(tiny_disk).free
    (tiny_disk / "filler").write_bytes(b"\0" * (free - free_kib * 1024))
    spec = tmp_path / "many.yaml"
    spec.write_text("name: many\nvariants: [{name: a}]\nworkloads: [{name: exec.noop}]\n"
                    "repetitions: 3000\nwarmup: 0\n")
    code, out, err = _process(["run", str(spec), "--store", str(store), "-q"], tmp_path)
    _check(Case([], 1, "database or disk is full"), code, out, err)
    assert "failed: result store" in err, err
    unstored = "its status (failed) was not stored either" in " ".join(err.split())
    (tiny_disk / "filler").unlink()
    code, out, err = _process(["runs", "--store", str(store)], tmp_path)
    assert code == 0, (out, err)
    # and the run says so, or was said not to
    assert ("abandoned" if unstored else "failed") in out, (out, err)


@pytest.mark.lab
@pytest.mark.slow
def test_lab_that_fails_to_start(open_dir: Path) -> None:
    """The real web lab: varnishd refuses an unknown parameter, so the lab cannot start."""
    if os.geteuid() != 0 or shutil.which("varnishd") is None or shutil.which("nginx") is None:
        pytest.skip("needs root, varnish and nginx")
    spec = open_dir / "web.yaml"
    spec.write_text(
        "name: web-bad\nlab: {kind: web, params: {sites: 1, pages_per_site: 2, page_bytes: 1000,"
        " varnish_params: {no_such_param: '1'}}}\nvariants: [{name: a}]\n"
        "workloads: [{name: exec.noop}]\nrepetitions: 2\n")
    lab_root = open_dir / "labs"
    code, out, err = _process(["run", str(spec), "--store", str(open_dir / "s.db"), "-q"],
                              open_dir, {"VIRTBENCH_LAB_ROOT": str(lab_root)})
    _check(Case([], 1, 'varnishd exited with code 2 while starting: Error: | Unknown parameter '
                       '"no_such_param"'), code, out, err)
    assert "failed: " in err, err
    assert list(lab_root.glob("*.json")) == []  # the half-started lab was taken down


@pytest.mark.slow
def test_wrongly_addressed_postgresql(postgres_url: str, workdir: Path) -> None:
    """A real server, a database that is not there; then a user the server does not know."""
    url = make_url(postgres_url)  # whatever database scripts/test.sh gave this line
    no_db = url.set(database="no_such_db").render_as_string(hide_password=False)
    _check(Case([], 2, 'database "no_such_db" does not exist'),
           *_invoke(["runs", "--store", no_db]))
    no_user = url.set(username="nobody").render_as_string(hide_password=False)
    _check(Case([], 2, 'role "nobody" does not exist'), *_invoke(["runs", "--store", no_user]))
