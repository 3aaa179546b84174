"""Write one benchmark's figures into BENCHMARKS.md, replacing its previous section.

Each benchmark script calls ``record(section, command, markdown_body)``; the section is kept
between HTML comment markers so re-running one benchmark never touches the others.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import re
from pathlib import Path

BENCHMARKS_MD = Path(__file__).resolve().parent.parent / "BENCHMARKS.md"
HEADER = (
    "# virtbench benchmarks\n\n"
    "Every figure below was written by the benchmark script named in its section, run with the "
    "command shown. Re-run a script to refresh its section.\n"
)


def machine_line() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Linux {platform.release()}"


def record(section: str, command: str, body: str) -> None:
    text = BENCHMARKS_MD.read_text() if BENCHMARKS_MD.exists() else HEADER
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    block = (
        f"<!-- section:{section} -->\n## {section}\n\n"
        f"Command: `{command}`  \nMachine: {machine_line()}  \nRecorded: {stamp}\n\n"
        f"{body.strip()}\n<!-- /section:{section} -->\n"
    )
    pattern = re.compile(
        rf"<!-- section:{re.escape(section)} -->.*?<!-- /section:{re.escape(section)} -->\n",
        re.S,
    )
    if pattern.search(text):
        text = pattern.sub(lambda _m: block, text)
    else:
        text = text.rstrip("\n") + "\n\n" + block
    BENCHMARKS_MD.write_text(text)
