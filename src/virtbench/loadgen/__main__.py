"""``python -m virtbench.loadgen CONFIG.json RECORDS.jsonl [--barrier PATH]``: run one load,
print its summary.

Run as its own process so the runner's threads never hold up a scheduled send. ``--barrier``
is for the processes of one split closed run (loadgen.parallel): start when told.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

from pydantic import ValidationError

from virtbench.loadgen.config import LoadConfig
from virtbench.loadgen.load_models import run_load
from virtbench.loadgen.records import summarise, write_records


def main(argv: list[str]) -> int:
    barrier = None
    if len(argv) == 4 and argv[2] == "--barrier":
        barrier, argv = Path(argv[3]), argv[:2]
    if len(argv) != 2:
        print("usage: python -m virtbench.loadgen CONFIG.json RECORDS.jsonl [--barrier PATH]",
              file=sys.stderr)
        return 2
    try:
        config = LoadConfig.model_validate_json(Path(argv[0]).read_text())
    except ValidationError as exc:
        print(f"bad load configuration: {exc}", file=sys.stderr)
        return 2
    scheduling = "normal"
    # auto: only the open model keeps a schedule; a closed model at full speed under FIFO
    # would just take CPU from the server.
    wants_fifo = config.scheduling == "fifo" or (
        config.scheduling == "auto" and config.model == "open")
    if wants_fifo and config.engine == "python":
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
            scheduling = "fifo"
        except OSError as exc:
            scheduling = f"normal (SCHED_FIFO refused: {exc.strerror})"
    elif config.scheduling == "fifo":
        scheduling = f"normal (SCHED_FIFO does not apply to engine {config.engine})"
    result = run_load(config, barrier)
    result.meta["scheduling"] = scheduling
    summary = result.summary or summarise(result.records, result.duration_s)
    if result.summary is not None:
        result.meta["summary"] = dataclasses.asdict(summary)
    write_records(Path(argv[1]), result.records, result.meta)
    print(json.dumps(dataclasses.asdict(summary)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
