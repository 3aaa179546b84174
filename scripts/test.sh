#!/usr/bin/env bash
# Install (with test tools), then lint, type-check and run the whole test suite, including the
# lab tests that start real services (nginx, varnishd, OVS, QEMU/libvirt, PostgreSQL...).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh --dev
.venv/bin/ruff check src tests benchmarks
.venv/bin/mypy
# A private PostgreSQL server for the store contract tests; stopped however the tests end.
pg_dir=$(mktemp -d /tmp/vb-pg.XXXXXX)
cleanup() { bash scripts/postgres.sh stop "$pg_dir" || true; rm -rf "$pg_dir"; }
trap cleanup EXIT
VIRTBENCH_TEST_PG_URL=$(bash scripts/postgres.sh start "$pg_dir")
export VIRTBENCH_TEST_PG_URL
.venv/bin/pytest "$@"
