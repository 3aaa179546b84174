"""What a run tells its caller: progress events while it runs, its outcome when it ends."""

from __future__ import annotations

from dataclasses import dataclass, field

from virtbench.runner.schedule import Pair, TrialKey

__all__ = ["ProgressHook", "RunOutcome"]


class ProgressHook:
    """Receives progress events; the CLI renders them with rich. The default does nothing."""

    def start(self, total: int) -> None: ...
    def advance(self, key: TrialKey, ok: bool) -> None: ...
    def set_total(self, total: int) -> None: ...
    def message(self, text: str) -> None: ...
    def stop(self) -> None: ...


@dataclass
class RunOutcome:
    run_id: str
    status: str
    stop_reason: str
    trials: int
    failures: int
    repetitions: dict[Pair, int] = field(default_factory=dict)
    paused: bool = False
    """stopped by ``run(rounds=N)`` with repetitions left: status 'interrupted', resumable"""
