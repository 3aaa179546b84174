"""Command-line options and fleet checks at the door: finite numbers, ports, distinct runs,
`run --hosts INVENTORY --check` (the real CLI, in-process)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from virtbench.cli.root import app

GOOD = "name: good\nvariants: [{name: a}]\nworkloads: [{name: exec.noop}]\nrepetitions: 2\n" \
       "warmup: 0\n"


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    text = result.stdout + result.stderr
    assert "Traceback" not in text, text
    return result.exit_code, " ".join(text.split())


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    d = tmp_path_factory.mktemp("options")
    (d / "good.yaml").write_text(GOOD)
    cwd = Path.cwd()
    os.chdir(d)
    try:
        assert invoke("run", "good.yaml", "--store", "s.db", "-q")[0] == 0
        yield d
    finally:
        os.chdir(cwd)


@pytest.mark.parametrize(("args", "message"), [
    (["preflight", "--window", "inf"], "Invalid value for '--window': inf is not a finite number"),
    (["preflight", "--window", "nan"], "Invalid value for '--window': nan is not a finite number"),
    (["preflight", "--window", "0"], "Invalid value for '--window': 0 is not above 0"),
    (["preflight", "--window", "1e9"], "Invalid value for '--window': 1e+09 is above the limit"),
    (["compare", "a", "b", "--fail-if-worse", "nan"],
     "Invalid value for '--fail-if-worse': nan is not a finite number"),
    (["compare", "a", "b", "--fail-if-worse", "-5"],
     "Invalid value for '--fail-if-worse': -5 is not at least 0"),
    (["compare", "a", "b", "--equivalence", "inf"],
     "Invalid value for '--equivalence': inf is not a finite number"),
    (["serve", "--port", "70000"], "Invalid value for '--port': 70000 is not a port number"),
    (["serve", "--port", "0"], "Invalid value for '--port': 0 is not a port number (1-65535)"),
    (["kvm", "tune", "d", "--shutdown-timeout", "nan"],
     "Invalid value for '--shutdown-timeout': nan is not a finite number"),
    (["kvm", "sandbox", "up", "--port", "99999"], "99999 is not a port number"),
    (["assess", "--budget", "99999999999999999999h"], "give at most 30 days"),
    (["assess", "--budget", "721h"], "give at most 30 days"),  # 0 is allowed: the checks alone
])
def test_numeric_options_are_finite_and_in_range(args: list[str], message: str) -> None:
    # compare --fail-if-worse nan once disabled the gate (exit 0 on a 4.7x slowdown);
    # preflight --window inf ended in exit 3
    code, text = invoke(*args)
    assert code == 2 and message in text, text
    assert text.startswith("error: ") and "Usage:" not in text, text  # one line (docs/cli.md)


def test_report_refuses_one_run_named_twice(workdir: Path) -> None:
    code, text = invoke("report", "good", "good", "--store", "s.db")
    assert code == 2 and "run 'good' given twice" in text, text  # was exit 3
    run_id = text.split("(run ")[1][:12]
    code, text = invoke("report", run_id, run_id[:6], "--store", "s.db")
    assert code == 2 and f"run '{run_id}' and '{run_id[:6]}' given twice" in text, text
    code, text = invoke("compare", run_id, run_id, run_id, "--store", "s.db")
    assert code == 2 and "given twice" in text, text


def test_run_hosts_check_checks_the_inventory_hosts_not_this_machine(workdir: Path) -> None:
    # Port 1 on loopback: nothing listens, ssh is refused at once
    (workdir / "inv.ini").write_text("[web]\nweb[1:2] ansible_host=127.0.0.1 ansible_port=1\n")
    code, text = invoke("run", "good.yaml", "--hosts", "inv.ini", "--check")
    assert code == 1, text
    assert "on 2 hosts at once" in text
    assert "host web1 (ssh://127.0.0.1:1): a run of good" in text
    assert "problem: web2: unreachable: 127.0.0.1 port 1" in text


@pytest.mark.parametrize(("content", "message"), [
    (None, "cannot read inventory missing.ini"),
    (b"\x89PNG\r\n\x1a\n\x00\x00", "not a YAML or INI inventory (byte 0, line 1, is not UTF-8)"),
    (b"[web]\nh[1:5000000]\n", "h[1:5000000]' names more than 10,000 hosts"),
])
def test_run_hosts_check_refuses_a_bad_inventory(workdir: Path, content: bytes | None,
                                                 message: str) -> None:
    # --check used to ignore --hosts (also a missing or binary inventory) and check this machine
    path = workdir / ("missing.ini" if content is None else "bad.ini")
    if content is not None:
        path.write_bytes(content)
    code, text = invoke("run", "good.yaml", "--hosts", path.name, "--check")
    assert code == 2 and f"error: {'' if content is None else path.name}" in text, text
    assert message in text, text


@pytest.mark.parametrize(("line", "message"), [
    ("seed: 100000000000000000000000", "seed: Input should be less than or equal to"),
    ("matrix: {}", "matrix: an empty matrix makes no variants"),
])
def test_bad_experiment_values_exit_2_before_running(workdir: Path, line: str,
                                                     message: str) -> None:
    (workdir / "bad.yaml").write_text(GOOD + line + "\n")
    code, text = invoke("run", "bad.yaml", "--store", "s.db")  # both were exit 3
    assert code == 2 and message in text, text
