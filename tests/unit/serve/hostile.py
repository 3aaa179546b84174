"""Stores holding hostile text, as an old store or a careless import could hold it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from serve_fill import make_run

from virtbench.store import Store

# Ids no current `import` accepts, but an older store may hold (written before ids were checked).
HOSTILE_IDS = [
    "../../../../tmp/vbserve-pwned",
    "a\r\nSet-Cookie: x=1",
    "nul\x00byte",
    "x" * 10_000,
    "ünï\u202ecode\u2028",
    "esc\x1b]0;title\x07",
    '"; filename=evil.exe',
    "%2e%2e%2fdot",
]

# Text a colleague's export may carry in any field shown on a page or in a download.
FORMULAS = ["=cmd|' /C calc'!A0", '=HYPERLINK("http://attacker.example","x")', "+1+2", "@SUM(A1)"]
HOSTILE_TEXT = ["<script>alert(1)</script>", "line\r\nInjected: header", "\x1b[31mred\x1b[0m",
                "[/]", *FORMULAS]


def rename_run(path: Path, old: str, new: str) -> None:
    """Give a stored run another id in every table (sqlite3 without foreign key checks)."""
    with sqlite3.connect(path) as conn:
        tables = [row[0] for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            columns = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
            column = "id" if table == "runs" else "run_id" if "run_id" in columns else None
            if column:
                conn.execute(f"UPDATE {table} SET {column} = ? WHERE {column} = ?", (new, old))


def hostile_store(path: Path) -> tuple[Store, list[str]]:
    """A SQLite store whose runs have hostile ids and hostile names in every text field;
    returns it and the ids (the hostile ones first, then one plain run)."""
    store = Store(str(path))
    ids = []
    for i, run_id in enumerate(HOSTILE_IDS):
        text = HOSTILE_TEXT[i % len(HOSTILE_TEXT)]
        made = make_run(store, text, host=text, variants=(text, "plain"), workload="cpu.demo",
                        label=text, description=text, reps=2)
        rename_run(path, made, run_id)
        ids.append(run_id)
    ids.append(make_run(store, "plain-experiment", reps=2))
    return store, ids
