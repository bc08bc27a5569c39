# pg_lib.sh - a PostgreSQL server of the test's own, through scripts/pg-test.sh
# (initdb in a temp dir, run as a non-root user, on a unix socket). Source after
# lib.sh. The caller stops it: bash "$PGT" stop "$PGDIR".
PGT="$SL_ROOT/scripts/pg-test.sh"
PGDIR=""

# pg_start : starts a server and sets PGDIR; skips the test where there are no
# server binaries, fails it where the server does not start.
pg_start() {
	local out rc
	out=$(bash "$PGT" start) || {
		rc=$?
		[ $rc -eq 77 ] && skip "no PostgreSQL server binaries (Debian: postgresql)"
		bad "start a PostgreSQL server" "pg-test.sh start exited $rc"
		finish
		exit 1
	}
	PGDIR=${out%% *}
}

# free_port : a TCP port free on loopback now.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
