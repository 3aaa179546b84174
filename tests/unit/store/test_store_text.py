"""One rule for stored text (safetext.stored): what the store writes, `export` carries and
`import` accepts are the same text. A run with hostile text in every field (control
characters, ANSI colours, NUL, U+202E, lone surrogates as a surrogateescape decode leaves
them, very long text, markup, formulas) goes run -> export -> import into a fresh store ->
export again, and the two files are the same; its CSV and HTML reports show that text, with
nothing in them that acts on a terminal or a page."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from store_helpers import cli, make_run, scratch_database, write

from virtbench import safetext
from virtbench.model import Artifact, Better, Measurement, Metric
from virtbench.store import Store, TrialRecord
from virtbench.store.columns import _TEXT, NAME_MAX, TEXT_LIMITS
from virtbench.store.portable import export_run

ANSI = "\x1b[31mred\x1b[0m \x1b]0;title\x07"
HOSTILE = [ANSI, "nul\x00byte", "rtl\u202eexe.txt", "bad\udcff\udcfebytes",
           "<script>alert(1)</script> [/] [bold]b :smile:", "=cmd|' /C calc'!A0",
           "c\r\nd\x9b31m\u2028\ufffe", "\ue000private"]
LONG = "\x1b" + "y" * 10_050_000  # more than a field keeps
BAD_CHARS = {chr(c) for c in (*range(0x20), 0x7F, *range(0x80, 0xA0), 0x202E, 0x2028)} - {
    "\n", "\t"}


def _text(i: int) -> str:
    return " | ".join(HOSTILE[i:] + HOSTILE[:i])


def hostile_run(store: Store) -> str:
    """A run whose every text field holds hostile text, written through the store's API as
    the runner writes it."""
    run_id = store.create_run(
        experiment="hostile", description=_text(0), spec_yaml="name: hostile\r\n# " + _text(1),
        spec_path="/tmp/\udcffexp\x1b.yaml", seed=1, host="host" + _text(2)[:100],
        target="ssh:" + _text(3)[:150], baseline="base", version="1.0\x1b")
    store.add_variants(run_id, [("base", {"k": _text(4)}), ("fast\u202e", {"k": ANSI})],
                       "base")
    metric = Metric("time", "s", Better.LOWER, _text(5), primary=True)
    store.add_workload(run_id, "w", "exec.command", 0, {"argv": [_text(6)]}, [metric])
    facts = store.add_facts(run_id, "before", {"cpu": _text(7), "kernel": "\x00"})
    store.add_realisation(run_id, "base", "w", _text(1), {"x": ANSI}, [_text(2)],
                          {"ENV": "\x1b"})
    order = 0
    for rep in range(2):
        for variant in ("base", "fast\u202e"):
            failed = rep == 1 and variant == "base"
            store.record_trial(run_id, TrialRecord(
                variant, "w", rep, order, False, "failed" if failed else "ok",
                (_text(rep) + LONG) if failed else "", 1000.0 + order, 1001.0 + order,
                "local" + ANSI, facts, {"note": _text(3)}),
                [] if failed else [Measurement("time", 1.0 + order, labels={"l": _text(0)})],
                {"time": "s"}, [Artifact("raw\x1b.txt", ANSI.encode())])
            order += 1
    store.set_run_status(run_id, "complete", _text(4) + LONG)
    return run_id


def _without_import_path(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(gzip.decompress(path.read_bytes()))
    run = document["tables"]["runs"][0]
    run["imported_from"] = ""  # import records where it came from
    for owner in ("owner_pid", "owner_host", "owner_boot_id"):
        run[owner] = None  # and drops the owner: an imported run is never live here
    return document


def _all_text(document: dict[str, Any]) -> list[str]:
    return [value for rows in document["tables"].values() for row in rows
            for value in row.values() if isinstance(value, str)]


@pytest.mark.timeout(120)
def test_hostile_run_round_trips_through_export_and_import(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "a.db"))
    run_id = hostile_run(store)
    first = tmp_path / "first.json.gz"
    export_run(store, run_id, first)
    result = cli("import", str(first), "--store", str(tmp_path / "b.db"))
    assert result.exit_code == 0, result.output
    second = tmp_path / "second.json.gz"
    result = cli("export", run_id, "--store", str(tmp_path / "b.db"), "-o", str(second))
    assert result.exit_code == 0, result.output
    assert _without_import_path(second) == _without_import_path(first)
    texts = _all_text(_without_import_path(first))
    for value in texts:  # every stored character shows as itself
        assert safetext.unshown(value) is None, value[:80]
        assert len(value) <= _TEXT
    joined = "".join(texts)
    assert "\\x1b[31mred" in joined and "nul\\x00byte" in joined and "rtl\\u202eexe" in joined
    assert "bad\\udcff\\udcfebytes" in joined and "[... " in joined  # the long text, cut


@pytest.mark.timeout(180)
def test_the_same_round_trip_through_postgresql(tmp_path: Path, postgres_url: str) -> None:
    """PostgreSQL cannot hold NUL in text: stored as the same escape, it round-trips too, from
    a run written on PostgreSQL and from a SQLite export imported there."""
    sqlite = Store(str(tmp_path / "a.db"))
    sqlite_run = hostile_run(sqlite)
    from_sqlite = tmp_path / "from-sqlite.json.gz"
    export_run(sqlite, sqlite_run, from_sqlite)
    with (scratch_database(postgres_url, "vbstore_text_a") as written_there,
          scratch_database(postgres_url, "vbstore_text_b") as imported_there):
        store = Store(written_there)
        run_id = hostile_run(store)
        from_postgres = tmp_path / "from-postgres.json.gz"
        export_run(store, run_id, from_postgres)
        store.close()
        assert cli("import", str(from_sqlite), "--store", imported_there).exit_code == 0
        again = tmp_path / "again.json.gz"
        assert cli("export", sqlite_run, "--store", imported_there, "-o", str(again)
                   ).exit_code == 0
    assert _without_import_path(again) == _without_import_path(from_sqlite)
    assert cli("import", str(from_postgres), "--store", str(tmp_path / "b.db")).exit_code == 0
    back = tmp_path / "back.json.gz"
    assert cli("export", run_id, "--store", str(tmp_path / "b.db"), "-o", str(back)
               ).exit_code == 0
    assert _without_import_path(back) == _without_import_path(from_postgres)
    assert "nul\\x00byte" in "".join(_all_text(_without_import_path(from_postgres)))


@pytest.mark.timeout(120)
def test_the_stored_fields_keep_their_limits(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "a.db"))
    run_id = hostile_run(store)
    info = store.run(run_id)
    assert _TEXT - 10 <= len(info.stop_reason) <= _TEXT
    assert info.stop_reason.endswith("yyy") and " characters cut ...] " in info.stop_reason
    assert len(info.host) <= NAME_MAX and info.spec_path == "/tmp/\\udcffexp\\x1b.yaml"
    assert info.spec_yaml.startswith("name: hostile\n# ")  # YAML's line break, kept as LF
    assert TEXT_LIMITS["runs"]["description"] == safetext.STORED_MAX_CHARS == _TEXT


@pytest.mark.timeout(120)
def test_an_older_stores_raw_text_exports_as_stored_today(tmp_path: Path) -> None:
    """A store written before the rule holds ESC and NUL raw: its export carries them as the
    store keeps them now, and imports."""
    path = tmp_path / "old.db"
    store = Store(str(path))
    run_id = hostile_run(store)
    store.close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE trials SET error = ?, target = ?", (ANSI + "\x00", "t\u202e"))
        conn.execute("UPDATE samples SET target = ?", ("t\u202e",))
        conn.execute("UPDATE runs SET description = ?", ("d\x1b",))
        conn.execute("UPDATE trials SET notes_json = ?", ('{"n": "\u202e"}',))
    export = tmp_path / "old.json.gz"
    assert cli("export", run_id, "--store", str(path), "-o", str(export)).exit_code == 0
    document = _without_import_path(export)
    assert document["tables"]["runs"][0]["description"] == "d\\x1b"
    assert {t["target"] for t in document["tables"]["samples"]} == {"t\\u202e"}
    assert document["tables"]["trials"][0]["notes_json"] == '{"n": "\\u202e"}'
    result = cli("import", str(export), "--store", str(tmp_path / "new.db"))
    assert result.exit_code == 0, result.output


def _import_damaged(document: dict[str, Any], tmp_path: Path, *, refused: bool) -> str:
    """``document`` imported into a new store: its output (one line), once the exit code says
    it was imported, or refused with no store created."""
    result = cli("import", str(write(document, tmp_path / "damaged.json.gz")), "--store",
                 str(tmp_path / "new.db"))
    assert result.exit_code == (2 if refused else 0), result.output
    assert (tmp_path / "new.db").exists() is not refused
    return " ".join(result.output.split())


@pytest.mark.parametrize(("table", "column", "value"), [
    ("runs", "description", "d\x1b[31m"), ("trials", "error", "e\x00"),
    ("trials", "target", "t\u202e"), ("samples", "target", "t\r"),
    ("metrics", "description", "m\x85"), ("trials", "notes_json", '{"n": "\u2028"}'),
])
@pytest.mark.timeout(60)
def test_import_refuses_text_the_store_would_have_escaped(
        document: dict[str, Any], tmp_path: Path, table: str, column: str, value: str) -> None:
    document["tables"][table][-1][column] = value
    index = len(document["tables"][table]) - 1
    said = _import_damaged(document, tmp_path, refused=True)
    assert f"{table}[{index}].{column}: must be " in said and " as the store keeps " in said
    assert "nothing imported" in said


@pytest.mark.timeout(120)
def test_reports_show_the_stored_text_and_nothing_that_acts(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "a.db"))
    run_id = hostile_run(store)
    for fmt in ("csv", "html"):
        out = tmp_path / f"report.{fmt}"
        result = cli("report", run_id, "--store", str(tmp_path / "a.db"), "-f", fmt, "-o",
                     str(out))
        assert result.exit_code == 0, result.output
        written = out.read_text(encoding="utf-8")
        assert not BAD_CHARS & set(written.replace("\r\n", "\n")), fmt
        assert "fast\\u202e" in written  # the variant, as the store keeps it
    assert "<script>alert" not in (tmp_path / "report.html").read_text(encoding="utf-8")


@pytest.mark.parametrize(("domain", "unit", "value", "refused"), [
    ("positive", "s", -0.33, "is negative"), (None, "ms", -330.0, "is negative"),
    ("proportion", "%", 100.5, "is over 100 %"), (None, "%", -1.0, "is negative"),
    ("real", "s", -0.33, ""), ("positive", "%", 250.0, ""),
])
@pytest.mark.timeout(60)
def test_import_checks_values_against_their_metrics_domain(
        document: dict[str, Any], tmp_path: Path, domain: str | None, unit: str, value: float,
        refused: str) -> None:
    """The hostile sweep's negative times that "won" the report: refused, naming the run,
    the metric and the value (the metric's declared domain; by its unit when it has none)."""
    tables = document["tables"]
    tables["metrics"][0].update(domain=domain, unit=unit)
    for sample in tables["samples"]:
        sample["unit"] = unit
    tables["samples"][2]["value"] = value
    run_id = tables["runs"][0]["id"]
    said = _import_damaged(document, tmp_path, refused=bool(refused))
    if refused:
        assert f"samples[2].value: {value!r} {refused}" in said
        assert f"run {run_id}'s metric w/time_s has domain" in said


NOOP = "name: noop\nrepetitions: 1\nwarmup: 0\nworkloads:\n  - {name: exec.noop}\n"


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


@pytest.mark.timeout(60)
def test_run_refuses_a_database_of_another_program_touching_nothing(tmp_path: Path) -> None:
    (tmp_path / "noop.yaml").write_text(NOOP)
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER, amount REAL)")
        conn.execute("CREATE TABLE \"cust\x1bomers\" (id INTEGER)")
    conn.close()
    (tmp_path / "source").mkdir()
    source = Store(str(tmp_path / "source" / "s.db"))
    export_run(source, make_run(source), tmp_path / "source" / "run.json")
    before = _files(tmp_path)
    for args in (["run", str(tmp_path / "noop.yaml")], ["import", str(tmp_path / "source" /
                 "run.json")], ["runs"], ["export", "latest", "-o", str(tmp_path / "x.json")]):
        result = cli(*args, "--store", str(other))
        assert result.exit_code == 2, result.output
        said = " ".join(result.output.split())
        assert "a SQLite database of another program (tables cust\\x1bomers, invoices)" in (
            said), said
        assert "Traceback" not in result.output and "\x1b" not in result.output
    assert _files(tmp_path) == before  # no table added, no -journal or -wal left


@pytest.mark.parametrize("device", ["/dev/null", "/dev/zero"])
@pytest.mark.timeout(60)
def test_run_refuses_a_device_as_its_store(tmp_path: Path, device: str) -> None:
    (tmp_path / "noop.yaml").write_text(NOOP)
    result = cli("run", str(tmp_path / "noop.yaml"), "--store", device)
    assert result.exit_code == 2, result.output
    assert f"cannot use '{device}' as a result store: it is a device, FIFO or socket, not a " \
           "file" in " ".join(result.output.split())
    assert not Path(device + "-journal").exists() and not Path(device + "-wal").exists()


@pytest.mark.timeout(60)
def test_run_still_uses_a_new_file_an_empty_file_and_its_own_store(tmp_path: Path) -> None:
    (tmp_path / "noop.yaml").write_text(NOOP)
    (tmp_path / "empty.db").write_bytes(b"")
    for name in ("new.db", "empty.db", "new.db"):
        result = cli("run", str(tmp_path / "noop.yaml"), "--store", str(tmp_path / name))
        assert result.exit_code == 0, result.output


@pytest.mark.parametrize(("better", "domain", "refused"), [
    ("lower", "positive", False), ("lower", None, False), ("higher", "positive", True),
    ("lower", "real", True),
])
@pytest.mark.timeout(60)
def test_import_holds_a_metric_to_what_its_workload_plugin_declares(
        document: dict[str, Any], tmp_path: Path, better: str, domain: str | None,
        refused: bool) -> None:
    """exec.command declares wall_time_s: seconds, lower is better, positive. A file that
    turns the direction around, or makes the domain "real" so that negative times pass, is
    refused before anything is stored."""
    tables = document["tables"]
    tables["workloads"][0]["name"] = "exec.command"
    tables["metrics"][0].update(name="wall_time_s", better=better, domain=domain)
    for sample in tables["samples"]:
        sample["metric"] = "wall_time_s"
    said = _import_damaged(document, tmp_path, refused=refused)
    if refused:
        assert ("metrics[0]: w/wall_time_s is declared by workload exec.command with better: "
                "lower, domain positive; the file says") in said


FAILING = r"""name: hostile-run
description: "rtl \u202e <b>markup</b> [/] =cmd|' /C calc'!A0 \e]0;title\a"
repetitions: 2
warmup: 0
workloads:
  - name: exec.command
    params:
      argv: ["python3", "-c", "import sys; e = chr(27); sys.stderr.write(e + '[31mboom' + e +
             '[0m ' + chr(0) + chr(0x202e) + chr(10)); sys.stderr.flush();
             sys.stderr.buffer.write(bytes([255, 254])); sys.exit(3)"]
"""


@pytest.mark.timeout(120)
def test_a_run_whose_failed_trials_stderr_holds_colour_codes_round_trips(tmp_path: Path) -> None:
    """The hostile sweep's case through `virtbench run` itself: a failing command's stderr
    with colour codes, NUL, U+202E and bytes that are not UTF-8; its export imports, and the
    import exports the same file."""
    (tmp_path / "exp\x1b.yaml").write_text(FAILING)
    result = cli("run", str(tmp_path / "exp\x1b.yaml"), "--store", str(tmp_path / "a.db"))
    assert "1 failed" in result.output or "failed trials" in result.output, result.output
    first, second = tmp_path / "first.json.gz", tmp_path / "second.json.gz"
    assert cli("export", "latest", "--store", str(tmp_path / "a.db"), "-o", str(first)
               ).exit_code == 0
    result = cli("import", str(first), "--store", str(tmp_path / "b.db"))
    assert result.exit_code == 0, result.output
    assert cli("export", "latest", "--store", str(tmp_path / "b.db"), "-o", str(second)
               ).exit_code == 0
    assert _without_import_path(second) == _without_import_path(first)
    trials = _without_import_path(first)["tables"]["trials"]
    assert trials and all("\\x1b[31mboom\\x1b[0m \\x00\\u202e" in t["error"] for t in trials)
    assert _without_import_path(first)["tables"]["runs"][0]["spec_path"].endswith(
        "exp\\x1b.yaml")
