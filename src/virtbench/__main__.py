"""`python -m virtbench ...`, the same as the `virtbench` command."""

from virtbench.cli_entry import main

main()
