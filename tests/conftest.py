"""Shared fixtures: result stores on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from virtbench.store import Store

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """VIRTBENCH_TEST_PG_URL (scripts/test.sh starts a server), else start one here."""
    url = os.environ.get("VIRTBENCH_TEST_PG_URL")
    if url:
        yield url
        return
    if not list(Path("/usr/lib/postgresql").glob("*/bin/initdb")):
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    workdir = tempfile.mkdtemp(prefix="vb-pg.")
    script = str(REPO / "scripts" / "postgres.sh")
    url = subprocess.run(["bash", script, "start", workdir], check=True, capture_output=True,
                         text=True).stdout.strip()
    try:
        yield url
    finally:
        subprocess.run(["bash", script, "stop", workdir], check=False)
        shutil.rmtree(workdir, ignore_errors=True)


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


FlowKey = tuple[str, str, int, str, int]


def _tshark_flows(capture: Path, display_filter: str = "") -> dict[FlowKey, list[int]]:
    """Per 5-tuple [packets, bytes, first ns, last ns] from `tshark -T fields` (timestamps as
    printed, to the ns), optionally after a display filter (-Y)."""
    fields = ["frame.time_epoch", "frame.len", "ip.proto", "ipv6.nxt", "ip.src", "ipv6.src",
              "ip.dst", "ipv6.dst", "tcp.srcport", "udp.srcport", "tcp.dstport", "udp.dstport"]
    argv = ["tshark", "-n", "-r", str(capture), "-T", "fields", "-E", "occurrence=f"]
    argv += [a for f in fields for a in ("-e", f)] + (["-Y", display_filter] if display_filter
                                                        else [])
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
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
