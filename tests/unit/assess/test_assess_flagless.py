"""`virtbench assess` of a machine whose CPU lacks the flags in question (read from a machine
view whose /proc/cpuinfo has none of them): nothing can be masked, the gains are cited, no run
is stored. The e2e tests assert the same outcome on such a CPU and the measured what-if on one
that has the flags, so both cases are checked on any machine."""

from __future__ import annotations

from pathlib import Path

from virtbench.assess.assessment import assess_machine
from virtbench.store import Store


def _machine_without_flags(root: Path) -> Path:
    """This machine's /proc/cpuinfo with a flags line of a pre-SSSE3 CPU."""
    lines = [line for line in Path("/proc/cpuinfo").read_text().splitlines()
             if not line.startswith("flags")]
    (root / "proc").mkdir(parents=True)
    (root / "proc" / "cpuinfo").write_text("\n".join(lines)
                                          + "\nflags\t\t: fpu tsc cx8 cmov mmx sse sse2\n")
    return root


def test_a_cpu_without_the_flags_is_assessed_with_cited_gains(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "a.db"), create=True)
    try:
        result = assess_machine(store, 30.0, root=_machine_without_flags(tmp_path / "root"))
    finally:
        store.close()
    assert any("lacks the flags in question" in note for note in result.notes)
    assert result.run_id is None and result.effects == []
    cpu = [f for f in result.findings if f.measure == "cpu-flags"]
    assert cpu and all(f.gain is None or f.gain.basis != "measured" for f in cpu)
