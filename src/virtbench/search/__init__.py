"""Capacity search: choosing the next offered load from the trials so far (pure, no I/O).

A search is a way of choosing loads, not a workload of its own: the runner asks ``Search`` for
the next (load, trial duration), runs any workload at that load, judges the trial against the
pass criterion and tells the search the verdict. The whole state is the trace of verdicts, so a
stored trace replays to the same point (``Search.replay``), which is how an interrupted search
resumes.
"""

from typing import TYPE_CHECKING, Any

from virtbench.search.search_limits import SearchPlan

if TYPE_CHECKING:
    from virtbench.search.algorithm import Search, SearchResult, Step, TraceEntry
    from virtbench.search.consistency import trace_problems

__all__ = ["Search", "SearchPlan", "SearchResult", "Step", "TraceEntry", "trace_problems"]

_ALGORITHM = ("Search", "SearchResult", "Step", "TraceEntry")


def __getattr__(name: str) -> Any:
    # The search itself loads when a capacity search runs or is read, not when an experiment's
    # model (which names the search's parameters) is built: `run FILE --check` of an experiment
    # without a search imports none of it (tests/unit/cli/test_root.py).
    if name in _ALGORITHM:
        from virtbench.search import algorithm
        return getattr(algorithm, name)
    if name == "trace_problems":
        from virtbench.search.consistency import trace_problems
        return trace_problems
    raise AttributeError(f"module 'virtbench.search' has no attribute {name!r}")
