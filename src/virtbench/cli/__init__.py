"""The `virtbench` command line (docs/cli.md)."""
