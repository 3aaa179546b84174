"""Property: whatever one field of a real export is changed to, `import` either refuses the
file with one VirtbenchError (exit 2, nothing stored) or stores a run every reader can read."""

from __future__ import annotations

import copy
import gzip
import json
import math
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from store_helpers import make_run

from virtbench.analysis import analyse
from virtbench.model import VirtbenchError
from virtbench.plugins import build_sections
from virtbench.report import text
from virtbench.store import Store
from virtbench.store import rows as checks
from virtbench.store.portable import export_run, import_run

EXAMPLES = 200
"""Examples this module runs (docs/cli.md counts them)."""

HOSTILE = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-2**70, max_value=2**70),
    st.sampled_from([-5, -1, 0, 2**31, 2**63, math.nan, math.inf, -math.inf, 1e308, -0.0,
                     "", "abc", "../../../../tmp/x", "a\r\nb", "\x1b]0;t\x07", "[/]",
                     "=cmd|' /C calc'!A0", "ok", "failed", "running", "lower", "{}", "[]",
                     '{"a": NaN}', "[" * 5000, "x" * 300]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def _source(tmp: Path) -> dict[str, Any]:
    store = Store(str(tmp / "source.db"))
    path = tmp / "source.json"
    export_run(store, make_run(store), path)
    store.close()
    parsed: dict[str, Any] = json.loads(path.read_text())
    return parsed


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_one_changed_field_is_refused_or_readable(tmp_path_factory: Any, data: Any) -> None:
    if not _CACHE:  # one source and one target store for all examples: examples stay fast
        tmp = tmp_path_factory.mktemp("fuzz")
        _CACHE["tmp"], _CACHE["doc"] = tmp, _source(tmp)
        _CACHE["store"] = Store(str(tmp / "target.db"))
    tmp, store = _CACHE["tmp"], _CACHE["store"]
    document = copy.deepcopy(_CACHE["doc"])
    table = data.draw(st.sampled_from(sorted(t for t, r in document["tables"].items() if r)))
    rows = document["tables"][table]
    row = rows[data.draw(st.integers(0, len(rows) - 1))]
    field = data.draw(st.sampled_from(sorted(row)))
    row[field] = data.draw(HOSTILE)
    path = tmp / "in.json.gz"
    raw = json.dumps(document).encode()
    path.write_bytes(gzip.compress(raw))
    # The one-pass check of the fields (pydantic-core on the JSON) and the per-table one,
    # which names the bad field, agree.
    fast = checks.valid_document(raw) is not None
    parsed = json.loads(raw)["tables"]
    try:
        for name in checks.TABLES:
            checks._adapter(name).validate_python(parsed[name])
        slow = True
    except ValidationError:
        slow = False
    assert fast == slow, (table, field, row[field])
    try:
        run_id = import_run(store, path)
    except VirtbenchError as exc:
        assert "\n" not in str(exc) and str(path) in str(exc)
        assert store.runs() == []
        return
    try:
        analysis = analyse(store, [run_id])  # what report, compare, history and serve build on
        json.loads(text.render_json(analysis, sections=build_sections(analysis)))
        text.render_csv(analysis)
    finally:
        store.delete_run(run_id)


_CACHE: dict[str, Any] = {}


def test_values_spread_over_many_decades_report(tmp_path: Path) -> None:
    """Found by the property test: one value of 1.66e12 among values near 1 (finite, so
    imported) made the log-normal interval overflow, and `report` crashed."""
    document = _source(tmp_path)
    document["tables"]["samples"][0]["value"] = 1659407881168.0
    path = tmp_path / "wide.json"
    path.write_text(json.dumps(document))
    store = Store(str(tmp_path / "target.db"))
    run_id = import_run(store, path)
    analysis = analyse(store, [run_id])
    json.loads(text.render_json(analysis, sections=build_sections(analysis)))
