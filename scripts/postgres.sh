#!/usr/bin/env bash
# Start or stop a throw-away PostgreSQL server in DIR, listening only on a unix socket in DIR.
#   scripts/postgres.sh start DIR   prints the SQLAlchemy URL
#   scripts/postgres.sh stop DIR
#   scripts/postgres.sh createdb DIR NAME   another database there; prints its URL
set -euo pipefail
action=$1 dir=$(realpath -m "$2")  # absolute: the tools run from /
bindir=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
# From /: a postgres tool started in a folder the postgres user cannot enter warns "could not
# change directory" on every call (a checkout under /root, a 0700 temporary folder).
as_pg() { if [ "$(id -u)" -eq 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi; }
case "$action" in
  start)
    [ "$(id -u)" -eq 0 ] && chown postgres "$dir"
    as_pg "$bindir/initdb" -D "$dir/data" -U virtbench -A trust >/dev/null
    as_pg "$bindir/pg_ctl" -D "$dir/data" -l "$dir/log" -w \
      -o "-c listen_addresses='' -k $dir -c fsync=off" start >/dev/null
    as_pg "$bindir/createdb" -h "$dir" -U virtbench virtbench_test
    echo "postgresql+psycopg://virtbench@/virtbench_test?host=$dir"
    ;;
  createdb)
    as_pg "$bindir/createdb" -h "$dir" -U virtbench "$3"
    echo "postgresql+psycopg://virtbench@/$3?host=$dir"
    ;;
  stop)
    [ -f "$dir/data/postmaster.pid" ] && as_pg "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
    ;;
esac
