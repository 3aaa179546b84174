"""A load generator built for measurement: open and closed models, per-request records."""

from virtbench.loadgen.config import LoadConfig
from virtbench.loadgen.load_models import LoadResult, run_load
from virtbench.loadgen.records import RequestRecord, Summary, summarise

__all__ = ["LoadConfig", "LoadResult", "RequestRecord", "Summary", "run_load", "summarise"]
