"""Result store: schema, migrations, reading and writing runs, portable export/import."""

from virtbench.store.store import RunInfo, SampleRow, Store, StoreFailed, TrialRecord, store_url

__all__ = ["RunInfo", "SampleRow", "Store", "StoreFailed", "TrialRecord", "store_url"]
