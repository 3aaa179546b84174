"""Study 003 sections: bonnie++ per loop, +++++, page-cache warnings, change, lab notes."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from virtbench.report.sections.storage import storage_sections

from .synthetic import (
    PAGE_CACHE_NOTE,
    analysed,
    build_storage,
    by_key,
    cell,
    check_renderable,
    cox_interval,
    new_store,
    row_where,
)

BLOCK_RATE = "Sequential Output Block · rate (KiB/s)"
CREATE_RATE = "Sequential Create · rate (files/s)"


def _num(value: float) -> str:
    return f"{value:.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def test_per_loop_table_in_the_study_order(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    values = build_storage(store)
    analysis = analysed(store)
    sections = storage_sections(analysis)
    check_renderable(analysis, sections)
    one, two = by_key(sections, "storage-bonnie-storage.bonnie-")
    assert one.title.endswith("1vcpu") and two.title.endswith("2vcpu")
    assert one.columns[1:4] == ["loop 1", "loop 2", "loop 3"]
    # 12 tests × rate, %CPU, latency, in bonnie++'s order.
    assert len(one.rows) == 36
    assert one.rows[0][0] == "Sequential Output Per Chr · rate (KiB/s)"
    assert one.rows[1][0] == "Sequential Output Per Chr · %CPU (%)"
    assert one.rows[2][0] == "Sequential Output Per Chr · latency (us)"
    assert one.rows[-1][0] == "Random Create Delete · latency (us)"
    loops = values[("2vcpu", "seq_output_block_KiBps")]
    row = row_where(two, **{"test · quantity": BLOCK_RATE})
    assert row[1:4] == [_num(v) for v in loops]
    low, high = cox_interval(loops)  # a rate is positive: Cox's log-normal interval
    assert row[4] == f"{_num(float(np.mean(loops)))} [{_num(low)}, {_num(high)}]"


def test_too_fast_is_shown_as_plus_signs_with_the_hint(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    values = build_storage(store)
    analysis = analysed(store)
    one, two = by_key(storage_sections(analysis), "storage-bonnie-storage.bonnie-")
    assert row_where(one, **{"test · quantity": CREATE_RATE})[1:] == ["+++++"] * 4
    # 2vcpu: loop 2 too fast, the mean over the two measured loops says so.
    row = row_where(two, **{"test · quantity": CREATE_RATE})
    measured = values[("2vcpu", "seq_create_per_s")]
    assert row[1:4] == [_num(measured[0]), "+++++", _num(measured[1])]
    assert row[4].startswith(_num(float(np.mean(measured))))
    assert row[4].endswith("(2 measured, 1 +++++)")
    for section in (one, two):
        assert any("+++++" in w and "larger size_mib" in w for w in section.warnings)


def test_page_cache_warning_only_where_it_dominates(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    build_storage(store)
    analysis = analysed(store)
    one, two = by_key(storage_sections(analysis), "storage-bonnie-storage.bonnie-")
    (warning,) = [w for w in one.warnings if "page cache" in w]
    assert PAGE_CACHE_NOTE in warning and "size_to_ram_ratio 0.03" in warning
    assert "file 256 MiB" in warning and "RAM 7800" in warning
    assert not [w for w in two.warnings if "page cache" in w]


def test_change_of_2vcpu_against_1vcpu(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    values = build_storage(store)
    analysis = analysed(store)
    (change,) = by_key(storage_sections(analysis), "storage-bonnie-change")
    assert change.title.endswith("2vcpu vs 1vcpu")
    row = row_where(change, **{"test · quantity": BLOCK_RATE})
    base = float(np.mean(values[("1vcpu", "seq_output_block_KiBps")]))
    var = np.mean(values[("2vcpu", "seq_output_block_KiBps")])
    assert cell(change, row, "1vcpu mean") == _num(base)
    assert cell(change, row, "change %").startswith(f"{100 * (var / base - 1):+.3g} %")
    assert cell(change, row, "p (Holm)") != "–"
    # No value on one side (+++++ in every loop of 1vcpu): no change.
    row = row_where(change, **{"test · quantity": CREATE_RATE})
    assert cell(change, row, "1vcpu mean") == "+++++"
    assert cell(change, row, "change %") == "–"


def test_lab_notes(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    build_storage(store)
    (lab,) = by_key(storage_sections(analysed(store)), "storage-bonnie-lab")
    row = row_where(lab, variant="2vcpu")
    assert cell(lab, row, "vm_size") == "2vcpu limits"
    assert cell(lab, row, "filesystem") == "ext4: ext4 on /dev/loop9 (rw)"
    assert cell(lab, row, "cache policy") == "loop direct I/O"
    assert cell(lab, row, "file / RAM") == "2.00"
    assert cell(lab, row_where(lab, variant="1vcpu"), "file / RAM") == "0.03"
