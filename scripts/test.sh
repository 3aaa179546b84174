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
# The whole suite runs as six processes at once, each with its own temporary folder and
# PostgreSQL database: the two knee searches of tests/lab/capacity and tests/lab/assess (a
# loop device and veth pair of their own), then the guest lab (tests/lab/guest); the unit tests (two pytest-xdist workers); the
# end-to-end tests; ruff and mypy, then the explanation's tests (perf recordings, Chromium),
# calibrate's e2e test and tests/lab/profiling; the TCG guests (kvm: a private libvirtd) and
# the fleet's runs; the other labs. Inside the other lines tests run one at a time: they start
# real services whose ports, namespaces and timing they own. Each line's output is printed
# whole when it ends, with its wall and CPU time.
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
# pytest keeps the test modules it rewrote (assertion messages) as byte-code; where writing
# byte-code is off, every pytest process of the suite rewrites every module it collects again
# (about 6 CPU-s for the unit tests' collection alone).
unset PYTHONDONTWRITEBYTECODE
# Lint and types: before the unit tests, or in the unit line of a full run (beside the others).
# mypy's incremental cache lives beside the tests' cached guest images, outside the checkout: a
# fresh clone (as CI's) checks only what changed since the last run on this machine (mypy compares
# each file's hash, not its path or mtime), about 26 CPU-s less than from nothing.
static_checks() {
  .venv/bin/ruff check src tests benchmarks \
    && MYPY_CACHE_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/virtbench-tests/mypy" .venv/bin/mypy
}
# A private PostgreSQL server for the store contract tests; stopped however the tests end.
pg_dir=$(mktemp -d /tmp/vb-pg.XXXXXX)
lines_dir=$(mktemp -d /tmp/vb-suite.XXXXXX)
# Ends the suite's own background lines (by PID) if the script is stopped, then PostgreSQL.
cleanup() {
  local pids; pids=$(jobs -p)
  [ -z "$pids" ] || kill $pids 2>/dev/null || true
  bash scripts/postgres.sh stop "$pg_dir" || true
  rm -rf "$pg_dir" "$lines_dir"
}
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
# One line of the suite in the background: its own database and temporary folder, its output
# in a file (printed whole when the line ends, never interleaved with another's).
start_line() {
  local name=$1; shift
  (VIRTBENCH_TEST_PG_URL=$(bash scripts/postgres.sh createdb "$pg_dir" "vb_$name")
   export VIRTBENCH_TEST_PG_URL
   rc=0  # a failing line must still write its code (set -e would end the subshell first)
   # What the line cost: the suite's time is set by the two cores, not by one line's wall time.
   TIMEFORMAT="line $name: %0R s wall, %0U s user + %0S s system CPU"
   { time {
       if [ "$name" = explain ]; then static_checks || rc=$?; fi
       pytest -p no:cacheprovider --durations=15 --basetemp "$lines_dir/$name" "$@" \
         </dev/null || rc=$?
     } >"$lines_dir/$name.log" 2>&1; } 2>"$lines_dir/$name.time"
   echo "$rc" >"$lines_dir/$name.rc") &
}
# stdin is never the terminal's: a test that reads it would wait for a key CI never presses.
case "$area" in
  unit)
    # Lint and types beside the tests (their output after the tests'): the unit area's time
    # is the longer of the two, not their sum.
    static_log="$lines_dir/static.log"
    (code=0; static_checks >"$static_log" 2>&1 || code=$?; echo "$code" >"$static_log.rc") &
    rc=0
    pytest -n auto tests/unit </dev/null || rc=$?
    wait
    cat "$static_log"
    [ "$(cat "$static_log.rc")" = 0 ] || rc=1
    exit "$rc" ;;
  e2e) pytest tests/e2e </dev/null ;;
  lab) if [ "$#" -eq 0 ]; then pytest tests/lab </dev/null
       else pytest "${@/#/tests/lab/}" </dev/null; fi ;;
  args) pytest "$@" </dev/null ;;
  all)
    started=$(date +%s)
    # Lines of about equal length on two cores (each line's time is printed at its end): the
    # two knee searches (long trials, little CPU) and assess's probes (lint and types before
    # them made this line the last by 20 s: 401 s, in the explanation's line now); the
    # unit tests on two workers (they are independent); the end-to-end tests; the TCG guests
    # and the fleet's runs (from the other labs' line, which ended alone 24 s after the rest;
    # the whole fleet made the guests' line the last by 27 s); the other labs. The guest lab
    # (tests/lab/guest: its image build and two TCG boots) runs after the knee searches, in
    # their line, the shortest: in the guests' line it made that line the last by 39 s (603 s;
    # knees 343 s). After them, so that its image build never writes beside the storage knee.
    # The two network guests (tests/lab/guest/test_vswitch_guests.py, about 3 min: two boots of
    # both) run in the guests' line, which the guest lab left.
    web_knee=tests/lab/capacity/test_web_knee.py storage_knee=tests/lab/capacity/test_storage_knee.py
    net_guests=tests/lab/guest/test_vswitch_guests.py
    # The user-image boot (systemd + cloud-init under TCG, one vCPU: ~65 CPU-s in series, plus
    # ~4 min to build its image the first time) in the explanation's line, the one that ends first.
    cloud_boot=tests/lab/guest/test_guest_cloud_image.py::test_user_cloud_image_boots_with_nocloud_keys_and_address
    # The router guest with its neighbour (about 140 s) runs with the other labs, one at a time
    # (the shortest line, 498 s); assess's NIC guest (about 100 s and its image's first build)
    # in the end-to-end line: in the knees' line, beside the guest lab and assess's disk guest,
    # either made it the last by minutes.
    router_guest=tests/lab/guest/test_router_guest.py nic_guest=tests/lab/assess/test_assess_guest_nic.py
    # A guest run stopped by SIGTERM (one and a half boots, ~25 CPU-s) in the guests' line.
    guest_sigterm=tests/lab/guest/test_guest_run_interrupted.py
    start_line knees "$web_knee" "$storage_knee" tests/lab/assess tests/lab/guest \
      --ignore "$net_guests" --ignore "$router_guest" --ignore "$nic_guest" \
      --ignore "$guest_sigterm" --deselect "$cloud_boot"
    # The fleet's runs (about 115 s) with the other labs again: in the guests' line it ended
    # last, 173 s after the other labs' line (649 s vs 476 s, with the router guest there).
    start_line guests tests/lab/kvm "$net_guests" "$guest_sigterm"
    start_line services tests/lab --ignore tests/lab/kvm --ignore tests/lab/guest \
      --ignore tests/lab/assess \
      --ignore tests/lab/profiling --ignore "$web_knee" --ignore "$storage_knee" "$router_guest"
    # The explanation's tests (real perf recordings, Chromium) and calibrate's end-to-end test
    # beside the other end-to-end tests: together they made the e2e line the longest by
    # minutes (calibrate's made the knee searches' line the longest when it ran there: 591 s).
    explain="tests/e2e/test_explain_crc32c.py tests/e2e/test_explain_browser.py"
    start_line explain $explain tests/e2e/test_calibrate.py tests/lab/profiling "$cloud_boot"
    start_line e2e tests/e2e --ignore tests/e2e/test_calibrate.py \
      --ignore tests/e2e/test_explain_crc32c.py --ignore tests/e2e/test_explain_browser.py \
      "$nic_guest"
    start_line unit -n 2 tests/unit
    wait
    status=0 passed=0 failed=0
    for name in knees unit e2e explain services guests; do
      echo "=========================== suite line: $name ==========================="
      cat "$lines_dir/$name.log" "$lines_dir/$name.time" 2>/dev/null || true
      rc=$(cat "$lines_dir/$name.rc" 2>/dev/null || echo 1)
      [ "$rc" = 0 ] || status=1
      # (a line that stopped before pytest has no summary: an empty one, not an exit)
      summary=$(grep -E '^=+ .*(passed|failed|error).* in [0-9.]+s' "$lines_dir/$name.log" | tail -n 1 || true)
      p=$(grep -oE '[0-9]+ passed' <<<"$summary" | grep -oE '[0-9]+' || echo 0)
      f=0
      for n in $(grep -oE '[0-9]+ (failed|errors?)' <<<"$summary" | grep -oE '[0-9]+'); do
        f=$((f + n))
      done
      passed=$((passed + p)) failed=$((failed + f))
      [ "$rc" = 0 ] || [ "$f" != 0 ] || failed=$((failed + 1))  # a line that failed otherwise
    done
    echo "suite: $(( $(date +%s) - started )) s for the six lines"
    echo "$passed passed, $failed failed"
    exit "$status" ;;
esac
