"""Capacity search: choosing the next offered load from the trials so far (pure, no I/O).

A search is a way of choosing loads, not a workload of its own: the runner asks ``Search`` for
the next (load, trial duration), runs any workload at that load, judges the trial against the
pass criterion and tells the search the verdict. The whole state is the trace of verdicts, so a
stored trace replays to the same point (``Search.replay``), which is how an interrupted search
resumes.
"""

from virtbench.search.algorithm import Search, SearchResult, Step, TraceEntry
from virtbench.search.consistency import trace_problems
from virtbench.search.search_limits import SearchPlan

__all__ = ["Search", "SearchPlan", "SearchResult", "Step", "TraceEntry", "trace_problems"]
