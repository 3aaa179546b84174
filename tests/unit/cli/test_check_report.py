"""`run --check`'s account of the plan: a lab's word on what the figures will mean (the guest
lab under TCG) is printed beside the trials, from the lab's class and params alone."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from virtbench import safetext
from virtbench.cli import consoles
from virtbench.cli.check_report import plan_lines, print_plan
from virtbench.runner import build_plan
from virtbench.runner.estimate import estimate
from virtbench.runner.trial_times import TrialTimes
from virtbench.spec import load_resolved

REPO = Path(__file__).resolve().parents[3]


def _lines(name: str, tmp_path: Path) -> list[str]:
    plan = build_plan(load_resolved(REPO / "examples" / name)[0])
    return plan_lines(plan, estimate(plan, TrialTimes({}, tmp_path / "times.json")))


def test_emulated_guest_named_with_what_it_makes_meaningless(tmp_path: Path) -> None:
    lab = [line for line in _lines("storage-guests.yaml", tmp_path) if line.startswith("lab ")]
    assert lab[0].startswith("lab guest: the guest will be emulated (a private libvirtd: TCG")
    assert "CPU-bound figures" in lab[0] and "remain meaningful" in lab[0]
    assert lab[1:] == ["lab guest: the variants differ in vcpus: meaningless under emulation "
                       "(the emulated vCPUs, not the knob, set the figures)"]
    cache = _lines("storage-guests-cache.yaml", tmp_path)
    assert any(line.startswith("lab guest: the variants differ in cache, io: meaningful")
               for line in cache)


def test_a_lab_without_notes_adds_no_line(tmp_path: Path) -> None:
    assert not [line for line in _lines("quick.yaml", tmp_path) if line.startswith("lab ")]


# A problem as a plugin might word it, with text that acts on a terminal and rich markup.
_HOSTILE_PROBLEM = "cpu.crc32c: [bold]tool[/] missing\x1b]0;title\x07 (apt install x)"


def _print_plan(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, problems: list[str]) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # no trial times measured
    print_plan(build_plan(load_resolved(REPO / "examples" / "quick.yaml")[0]), problems)


def test_a_pipe_gets_plain_unwrapped_lines_without_rich(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """Piped (no terminal, rich not told otherwise), every line is written whole as
    safetext.visible shows it, ``problem:`` lines last, and no console is made (so no rich)."""
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delattr(consoles, "console", raising=False)  # made again only if read
    _print_plan(monkeypatch, tmp_path, [_HOSTILE_PROBLEM, "b"])
    out = capsys.readouterr().out.splitlines()
    assert "console" not in vars(consoles)
    assert out[0].startswith("cpu-features-quick: ") and len(out[0]) > 80  # not wrapped
    assert out[-2:] == ["problem: cpu.crc32c: [bold]tool[/] missing\\x1b]0;title\\x07 "
                        "(apt install x)", "problem: b"]


def test_a_terminal_gets_the_same_lines_through_the_console(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """Where rich takes the output for a terminal (FORCE_COLOR here), the console prints the
    same text, ``problem:`` in red."""
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    _print_plan(monkeypatch, tmp_path, [_HOSTILE_PROBLEM])
    plain = capsys.readouterr().out
    monkeypatch.setenv("FORCE_COLOR", "1")
    written = io.StringIO()
    terminal = safetext.console(file=written, width=1000, color_system="standard", record=True)
    monkeypatch.setattr(consoles, "console", terminal)
    _print_plan(monkeypatch, tmp_path, [_HOSTILE_PROBLEM])
    assert capsys.readouterr().out == ""
    assert terminal.export_text() == plain
    assert "\x1b[31mproblem:\x1b[0m" in written.getvalue()
