#!/usr/bin/env bash
# Install (with test tools), then lint, type-check and run the whole test suite, including the
# lab tests that start real services (nginx, varnishd, OVS, QEMU/libvirt, PostgreSQL...).
# Lab tests need root: run as a user with sudo, pytest runs under sudo. A skipped lab test
# fails the run (tests/conftest.py), so CI never stays green while a lab did not run.
#
#   scripts/test.sh                 everything, as CI runs it
#   scripts/test.sh unit            lint, types and the unit tests (no lab, ~2 min)
#   scripts/test.sh lab [AREA...]   the lab tests, or those of tests/lab/AREA (net, kvm, web...)
#   scripts/test.sh e2e             the end-to-end tests
#   scripts/test.sh -- ARGS...      pytest ARGS as given (a file, -k EXPR, ...)
#
# The unit tests run on every core (pytest-xdist); lab and end-to-end tests run one at a time,
# beside them: they start real services whose ports, namespaces and timing they own.
set -euo pipefail
cd "$(dirname "$0")/.."
area=all
case "${1:-}" in
  unit|lab|e2e) area=$1; shift ;;
  --) shift; area=args ;;
  "") ;;
  *) area=args ;;  # plain pytest arguments, as before
esac
if [ "$area" = lab ]; then
  for name in "$@"; do
    [ -d "tests/lab/$name" ] || { echo "scripts/test.sh: no lab test area '$name' (tests/lab/*)" >&2; exit 2; }
  done
fi
use_sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null || ! sudo -v; then
    echo "scripts/test.sh: the lab tests need root: run it as root, or as a user with sudo" >&2
    exit 2
  fi
  use_sudo=1
fi
bash scripts/install.sh --dev
if [ "$area" = all ] || [ "$area" = unit ]; then
  .venv/bin/ruff check src tests benchmarks
  .venv/bin/mypy
fi
# A private PostgreSQL server for the store contract tests; stopped however the tests end.
pg_dir=$(mktemp -d /tmp/vb-pg.XXXXXX)
cleanup() { bash scripts/postgres.sh stop "$pg_dir" || true; rm -rf "$pg_dir"; }
trap cleanup EXIT
VIRTBENCH_TEST_PG_URL=$(bash scripts/postgres.sh start "$pg_dir")
export VIRTBENCH_TEST_PG_URL
pytest() {
  if [ -n "$use_sudo" ]; then
    # root's PATH (sudo's secure_path has /usr/sbin for ip, ovs-vsctl...) plus our test settings
    sudo env "VIRTBENCH_TEST_PG_URL=$VIRTBENCH_TEST_PG_URL" \
      ${VIRTBENCH_LAB_ROOT:+"VIRTBENCH_LAB_ROOT=$VIRTBENCH_LAB_ROOT"} .venv/bin/pytest "$@"
  else
    .venv/bin/pytest "$@"
  fi
}
# stdin is never the terminal's: a test that reads it would wait for a key CI never presses.
case "$area" in
  unit) pytest -n auto tests/unit </dev/null ;;
  e2e) pytest tests/e2e </dev/null ;;
  lab) if [ "$#" -eq 0 ]; then pytest tests/lab </dev/null
       else pytest "${@/#/tests/lab/}" </dev/null; fi ;;
  args) pytest "$@" </dev/null ;;
  all) pytest -n 2 --dist loadgroup tests </dev/null ;;
esac
