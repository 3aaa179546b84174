#!/usr/bin/env bash
# Install (with test tools), then lint, type-check and run the whole test suite, including the
# lab tests that start real services (nginx, varnishd, OVS, QEMU/libvirt, PostgreSQL...).
# Lab tests need root: run as a user with sudo, pytest runs under sudo. A skipped lab test
# fails the run (tests/conftest.py), so CI never stays green while a lab did not run.
set -euo pipefail
cd "$(dirname "$0")/.."
use_sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null || ! sudo -v; then
    echo "scripts/test.sh: the lab tests need root: run it as root, or as a user with sudo" >&2
    exit 2
  fi
  use_sudo=1
fi
bash scripts/install.sh --dev
.venv/bin/ruff check src tests benchmarks
.venv/bin/mypy
# A private PostgreSQL server for the store contract tests; stopped however the tests end.
pg_dir=$(mktemp -d /tmp/vb-pg.XXXXXX)
cleanup() { bash scripts/postgres.sh stop "$pg_dir" || true; rm -rf "$pg_dir"; }
trap cleanup EXIT
VIRTBENCH_TEST_PG_URL=$(bash scripts/postgres.sh start "$pg_dir")
export VIRTBENCH_TEST_PG_URL
if [ -n "$use_sudo" ]; then
  # root's PATH (sudo's secure_path has /usr/sbin for ip, ovs-vsctl...) plus our test settings
  sudo env "VIRTBENCH_TEST_PG_URL=$VIRTBENCH_TEST_PG_URL" \
    ${VIRTBENCH_LAB_ROOT:+"VIRTBENCH_LAB_ROOT=$VIRTBENCH_LAB_ROOT"} .venv/bin/pytest "$@"
else
  .venv/bin/pytest "$@"
fi
