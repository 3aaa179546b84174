"""The decide verdicts' and change-point detector's error rates by seeded simulation, written
into the validation section of docs/statistics.md (the same functions the tests assert on).

Run: .venv/bin/python benchmarks/decide_validation.py
"""

from __future__ import annotations

import re

from _common import REPO

from virtbench.decide.validation import (
    NULL_CVS,
    NULL_SIZES,
    changepoint_rates,
    gate_rate,
    null_gate_rate,
    tost_rate,
)
from virtbench.model import Better

DOC = REPO / "docs" / "statistics.md"
START, END = "<!-- validation:start -->", "<!-- validation:end -->"
COMMAND = ".venv/bin/python benchmarks/decide_validation.py"


def main() -> None:
    rows = []
    for dist in ("normal", "lognormal"):
        r = null_gate_rate(dist, seed=20261123)
        rows.append((f"`--fail-if-worse 0`, equal {dist} distributions, n ∈ "
                     f"{{{', '.join(map(str, NULL_SIZES))}}}, CV ∈ "
                     f"{{{', '.join(f'{c:.0%}' for c in NULL_CVS)}}}, "
                     "both directions", r, "≤ 5 % (within MC error)"))
    for n in (5, 10, 30):  # heavy skew: the t approximation of a log ratio's limit
        rows.append((f"`--fail-if-worse 0`, equal lognormal distributions, CV 100 %, n = {n}, "
                     "both directions", null_gate_rate("lognormal", seed=20261126 + n,
                                                       sizes=(n,), cvs=(1.0,)),
                     "documented limit (docs above)"))
    for better in (Better.LOWER, Better.HIGHER):
        rows.append((f"planted 10 % regression ({better.value} is better), "
                     "`--fail-if-worse 5`, n = 10, CV 2 %",
                     gate_rate(10, 5, n=10, cv=0.02, seed=1, better=better), "≥ 90 %"))
    rows.append(("planted 3 % regression, `--fail-if-worse 5`, n = 10, CV 2 %",
                 gate_rate(3, 5, n=10, cv=0.02, seed=2), "≤ 5 %"))
    rows.append(("TOST equivalent, true difference 0, margin 2 %, CV 1 %, n = 20",
                 tost_rate(2.0, n=20, cv=0.01, seed=3), "≥ 90 %"))
    rows.append(("change point within ±2 runs of a planted 5 % step, 30 runs, run CV 1 %",
                 changepoint_rates(0.05, seed=11), "≥ 90 %"))
    rows.append(("any change point reported, 30 runs without a step, run CV 1 %",
                 changepoint_rates(0.0, seed=12), "≤ 5 %"))
    table = "\n".join(f"| {what} | {r.hits:,} / {r.trials:,} = {r.rate:.2%} "
                      f"(± {r.mc_error:.2%}) | {goal} |" for what, r, goal in rows)
    body = (f"{START}\nCommand: `{COMMAND}` (seeded; the unit tests in tests/unit/decide/ "
            "assert the same simulations).\n\n"
            "| scenario | fired / simulated (± MC s.e.) | required |\n|---|---|---|\n"
            f"{table}\n{END}")
    text = DOC.read_text()
    if START in text:
        text = re.sub(re.escape(START) + ".*?" + re.escape(END), lambda _m: body, text,
                      flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n## Validation of compare and history\n\n" + body + "\n"
    DOC.write_text(text)
    print(body)


if __name__ == "__main__":
    main()
