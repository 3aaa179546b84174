"""`python -m virtbench ...`, the same as the `virtbench` command."""

from virtbench.cli.entry import main

main()
