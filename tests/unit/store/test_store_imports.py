"""Opening a store pays for SQLAlchemy's core and the SQLite dialect only: not the ORM, nor the
PostgreSQL dialect (a tenth of `virtbench runs`' start-up), which a PostgreSQL store loads when
it connects (and its JSON queries when they run)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PROBE = """
import json, sys
from virtbench.store import Store

st = Store(sys.argv[1])
st.runs()
st.series_rows("none")
print(json.dumps(sorted(m for m in sys.modules
                        if m.startswith(("sqlalchemy.orm", "sqlalchemy.dialects.postgresql")))))
"""


def test_a_sqlite_store_imports_neither_the_orm_nor_postgresqls_dialect(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "s.db")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
