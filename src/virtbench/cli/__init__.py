"""The `virtbench` command line (docs/cli.md).

- ``entry``: the console script (also ``python -m virtbench``); a plain ``virtbench parse``
  runs straight away, anything else goes to the app.
- ``root``: the app (``python -m virtbench.cli`` runs it alone): the global options and every
  command by name and help, each loaded from its module when used (``lazy``).
- One module per command group: ``run``; ``host`` (preflight, facts); ``results`` (report,
  runs, export, import); ``catalog`` (workloads, labs); ``parse``; ``decide`` (compare,
  history); ``calibrate``; ``serve``; ``lab`` (lab clean). The ``assess``, ``kvm`` and ``hosts``
  commands live in their packages (``virtbench.assess.cli``, ``virtbench.kvm.cli``,
  ``virtbench.fleet.cli``).
- Shared by the commands: ``reporting`` (the report of stored runs: report, run, compare),
  ``options`` (options and opening the store), ``values`` (plain option values checked without
  pydantic), ``consoles``, ``errors`` (messages and exit codes), ``plan`` (run --check's
  account), ``progress``, ``parsing``, ``pcap`` and ``input`` (what a parse does, without
  typer: the entry point calls it).

This file imports nothing: every module of the package runs it first, the plain-parse path too.
"""
