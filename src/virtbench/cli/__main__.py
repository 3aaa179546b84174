"""`python -m virtbench.cli ...`: the app itself, without the entry point's plain-parse path
(`python -m virtbench` is the `virtbench` command)."""

from virtbench.cli.root import main

main()
