"""OVS-DPDK settings shared by the lab tests that start the switch."""

PMD_SLEEP_US = 500
"""OVS's pmd-maxsleep for tests that pass traffic through OVS-DPDK: the poll-mode thread sleeps
while idle instead of keeping a CPU busy for the whole test, CPU the suite's other lines need.
The default (a thread that never sleeps) is what the vswitch lab's hugepage and port tests
run."""
