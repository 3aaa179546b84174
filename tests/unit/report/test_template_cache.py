"""The report templates' bytecode cache: used in a directory of the user's alone, the same page
with it, without it and from a damaged entry; a cache that cannot be written is no error."""

from __future__ import annotations

import os
from pathlib import Path

import jinja2
import pytest

from virtbench.report.html import report_environment
from virtbench.report.template_cache import SoftBytecodeCache, bytecode_cache, cache_directory

_PAGE = "report_toc.html.j2"  # a partial every page includes: rendered without a context


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "virtbench" / "templates"


def _source(env: jinja2.Environment) -> tuple[str, str | None]:
    assert env.loader is not None
    source, filename, _uptodate = env.loader.get_source(env, _PAGE)
    return source, filename


def _cached_code(env: jinja2.Environment) -> object:
    """What the environment's cache holds for the page (None: nothing usable)."""
    cache = env.bytecode_cache
    assert isinstance(cache, SoftBytecodeCache)
    source, filename = _source(env)
    return cache.get_bucket(env, _PAGE, filename, source).code


def _render(env: jinja2.Environment) -> str:
    return env.get_template(_PAGE).render(sections=[], series=[], study_sections=[],
                                          lead_sections=[], explain=[])


def test_compiled_once_then_loaded(cache_home: Path) -> None:
    first = report_environment()
    assert _cached_code(first) is None  # nothing compiled yet
    page = _render(first)
    files = list(cache_home.iterdir())
    assert files and (cache_home.stat().st_mode & 0o777) == 0o700
    second = report_environment()
    assert _cached_code(second) is not None  # a new environment finds it compiled
    assert _render(second) == page


def test_a_damaged_entry_is_compiled_again(cache_home: Path) -> None:
    page = _render(report_environment())
    for entry in cache_home.iterdir():
        entry.write_bytes(entry.read_bytes()[:40] + b"\x00not bytecode")
    env = report_environment()
    assert _cached_code(env) is None
    assert _render(env) == page


def test_other_options_are_another_entry(cache_home: Path) -> None:
    env = report_environment()
    _render(env)
    options = {"autoescape": True, "trim_blocks": False}
    other = bytecode_cache(options)
    assert other is not None and isinstance(env.bytecode_cache, SoftBytecodeCache)
    source, filename = _source(env)
    assert other.get_bucket(env, _PAGE, filename, source).code is None
    assert other.get_cache_key(_PAGE, filename) != env.bytecode_cache.get_cache_key(
        _PAGE, filename)


@pytest.mark.parametrize("unsafe", ["group-writable", "a link", "a file"])
def test_no_cache_where_others_could_write_it(cache_home: Path, tmp_path: Path,
                                             unsafe: str) -> None:
    cache_home.parent.mkdir(parents=True)
    if unsafe == "group-writable":
        cache_home.mkdir()
        cache_home.chmod(0o770)
    elif unsafe == "a link":
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        cache_home.symlink_to(tmp_path / "elsewhere")
    else:
        cache_home.write_text("")
    assert cache_directory() is None
    env = report_environment()
    assert env.bytecode_cache is None
    assert "Key results" in _render(env)  # the page all the same
    if unsafe == "a link":
        assert list((tmp_path / "elsewhere").iterdir()) == []


def test_a_cache_that_cannot_be_written_is_no_error(cache_home: Path) -> None:
    env = report_environment()  # the directory is made, then taken away: writes fail
    os.rmdir(cache_home)
    cache_home.write_text("")
    assert "Key results" in _render(env)
    assert cache_home.read_text() == ""


def test_a_relative_cache_home_is_not_used(monkeypatch: pytest.MonkeyPatch,
                                          tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")
    assert cache_directory() == tmp_path / "home" / ".cache" / "virtbench" / "templates"
    assert not (tmp_path / "relative").exists()
