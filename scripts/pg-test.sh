#!/usr/bin/env bash
# pg-test.sh - throwaway PostgreSQL servers for the tests and benches.
#
#   pg-test.sh start         starts a server in a new temporary directory and
#                            prints "DIR URL" (URL: postgres://... for --store)
#   pg-test.sh createdb DIR NAME   creates database NAME, prints its URL
#   pg-test.sh restart DIR   restarts it (fast shutdown: sessions are cut)
#   pg-test.sh replica DIR   a synchronous streaming replica of it; prints RDIR
#   pg-test.sh kill DIR      stops a server at once (as a crash), keeps DIR
#   pg-test.sh promote RDIR  promotes a replica to primary
#   pg-test.sh stop DIR      stops the server and removes DIR
#   pg-test.sh available     exit 0 when the server binaries are installed
# PG_TEST_LISTEN=ADDR start: also listen on ADDR:5432 over TCP (trust, any client)
#
# The server listens on a unix socket in DIR only (no TCP port to collide on)
# and runs with fsync=off unless PG_TEST_FSYNC=on (the benches): the tests kill
# clients and servers' clients, not the
# machine, so durability against power loss is not what they check. initdb
# refuses to run as root, so as root the server runs as the 'postgres' user
# (Debian's package creates it) or, failing that, a 'suanli-pg' user made here.
# Exit 77 (skip) when the binaries are missing.
set -euo pipefail

bindir() {
  local d
  d=$(pg_config --bindir 2>/dev/null || true)
  [ -n "$d" ] && [ -x "$d/pg_ctl" ] && [ -x "$d/initdb" ] && { echo "$d"; return; }
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/pg_ctl" ] && [ -x "$d/initdb" ] && { echo "$d"; return; }
  done
  return 1
}

as_pg() { # runs "$@" as the server's user
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u "$PGUSER_OS" -- "$@"
  else
    "$@"
  fi
}

pick_user() {
  PGUSER_OS=$(id -un)
  if [ "$(id -u)" -eq 0 ]; then
    if id postgres >/dev/null 2>&1; then PGUSER_OS=postgres
    else
      id suanli-pg >/dev/null 2>&1 || useradd --system --no-create-home suanli-pg
      PGUSER_OS=suanli-pg
    fi
  fi
}

BIN=$(bindir) || { echo "pg-test: PostgreSQL server binaries not installed (Debian: postgresql)" >&2; exit 77; }
pick_user
cmd=${1:-}
case "$cmd" in
available) exit 0 ;;
start)
  dir=$(mktemp -d "${TMPDIR:-/tmp}/sl-pg.XXXXXX")
  chmod 0755 "$dir"
  [ "$(id -u)" -eq 0 ] && chown "$PGUSER_OS" "$dir"
  as_pg "$BIN/initdb" -D "$dir/data" -U suanli -A trust -E UTF8 --locale=C --no-sync \
    >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
  listen=""
  if [ -n "${PG_TEST_LISTEN:-}" ]; then # also TCP on this address, port 5432, any client
    echo "host all all 0.0.0.0/0 trust" >>"$dir/data/pg_hba.conf"
    listen=$PG_TEST_LISTEN
  fi
  as_pg "$BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-k $dir -c listen_addresses='$listen' -c fsync=${PG_TEST_FSYNC:-off} -c full_page_writes=${PG_TEST_FSYNC:-off} -c max_connections=60 -c shared_buffers=16MB" \
    start >/dev/null || { cat "$dir/server.log" >&2; exit 1; }
  echo "$dir postgres:///postgres?host=$dir&user=suanli"
  ;;
createdb)
  "$BIN/createdb" -h "$2" -U suanli "$3"
  echo "postgres:///$3?host=$2&user=suanli"
  ;;
replica)
  # a streaming replica of the server in $2, in a new directory (printed);
  # the primary then waits for it on every commit (synchronous replication)
  prim=$2
  dir=$(mktemp -d "${TMPDIR:-/tmp}/sl-pgr.XXXXXX")
  chmod 0755 "$dir"
  [ "$(id -u)" -eq 0 ] && chown "$PGUSER_OS" "$dir"
  as_pg "$BIN/pg_basebackup" -h "$prim" -U suanli -D "$dir/data" -R -X stream -c fast \
    >"$dir/basebackup.log" 2>&1 || { cat "$dir/basebackup.log" >&2; exit 1; }
  as_pg "$BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-k $dir -c listen_addresses='' -c fsync=${PG_TEST_FSYNC:-off} -c full_page_writes=${PG_TEST_FSYNC:-off} -c max_connections=60 -c shared_buffers=16MB -c cluster_name=replica" \
    start >/dev/null || { cat "$dir/server.log" >&2; exit 1; }
  "$BIN/psql" -h "$prim" -U suanli -d postgres -qAt \
    -c "ALTER SYSTEM SET synchronous_standby_names = '*'" -c "SELECT pg_reload_conf()" >/dev/null
  echo "$dir"
  ;;
kill)
  as_pg "$BIN/pg_ctl" -D "$2/data" -m immediate -w stop >/dev/null 2>&1 || true
  ;;
promote)
  as_pg "$BIN/pg_ctl" -D "$2/data" -w -t 60 promote >/dev/null
  ;;
restart)
  dir=$2
  as_pg "$BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -m fast -w -t 60 restart >/dev/null ||
    { cat "$dir/server.log" >&2; exit 1; }
  ;;
stop)
  dir=$2
  [ -d "$dir/data" ] && as_pg "$BIN/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$dir"
  ;;
*) echo "usage: pg-test.sh start | createdb DIR NAME | replica DIR | kill DIR | promote RDIR | restart DIR | stop DIR | available" >&2; exit 2 ;;
esac
