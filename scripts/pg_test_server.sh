#!/usr/bin/env bash
# A throw-away PostgreSQL server for tests (the ledger's GoogleTests and the
# end-to-end pytest suite): Debian's server binaries, a fresh cluster, trust
# authentication, listening on 127.0.0.1:PORT (and a unix socket beside the
# cluster).
#
#   scripts/pg_test_server.sh start DIR PORT   # prints the URL on stdout:
#                                              # postgresql://postgres@127.0.0.1:PORT/postgres
#   scripts/pg_test_server.sh stop DIR [MODE]  # stops it and deletes the cluster; MODE fast
#                                              # (default, a clean shutdown) or immediate
#   scripts/pg_test_server.sh pause DIR [MODE]   # stops it (MODE fast or immediate), keeps the cluster
#   scripts/pg_test_server.sh resume DIR PORT    # starts the paused cluster again on PORT
#   scripts/pg_test_server.sh bindir           # prints the server's bin directory, or exits 3
#
# The cluster lives in a fresh directory under /tmp, not in DIR: initdb refuses
# to run as root, so as root the server runs as the `postgres` user, which
# cannot enter a test's private temp directory (pytest's are 0700), and a unix
# socket path must stay under 108 bytes. DIR (created if missing, left for the
# caller to remove) records where the cluster is (DIR/cluster) and links its
# log (DIR/server.log). Exit status 3: PostgreSQL is not installed
# (scripts/setup.sh installs it). PG_BIN overrides the bin directory.
# PG_LISTEN (start only) adds an address to listen on besides 127.0.0.1, with
# trust authentication for its /24: the server of a test run in a network
# namespace, reached from the other namespaces' hosts; resume keeps it.
set -euo pipefail

bindir() {
  if [[ -n "${PG_BIN:-}" ]]; then
    [[ -x "$PG_BIN/initdb" ]] && { echo "$PG_BIN"; return 0; }
    return 1
  fi
  # The glob sorts 9 after 15: pick the highest version number.
  local best
  best=$(for d in /usr/lib/postgresql/*/bin; do
    [[ -x "$d/initdb" && -x "$d/pg_ctl" ]] && echo "$d"
  done | sort -t/ -k5,5n | tail -n 1)
  [[ -n "$best" ]] || return 1
  echo "$best"
}

# Runs a server binary as the owner of the cluster.
as_owner() {
  if [[ $(id -u) -eq 0 ]]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

usage() {
  echo "usage: $0 start DIR PORT | stop DIR [fast|immediate] | pause DIR [fast|immediate] |" \
    "resume DIR PORT | bindir" >&2
  exit 2
}

not_installed() {
  echo "PostgreSQL server not installed (no /usr/lib/postgresql/*/bin/initdb)" >&2
  exit 3
}

cmd=${1:-}
case "$cmd" in
  bindir)
    bindir || not_installed
    ;;
  start)
    [[ $# -eq 3 ]] || usage
    dir=$2
    port=$3
    bin=$(bindir) || not_installed
    mkdir -p "$dir"
    cluster=$(mktemp -d /tmp/brisk-pg.XXXXXX)
    echo "$cluster" >"$dir/cluster"
    if [[ $(id -u) -eq 0 ]]; then
      id postgres >/dev/null 2>&1 || { echo "no 'postgres' user to run the server as" >&2; exit 3; }
      chown postgres: "$cluster"
    fi
    ln -sf "$cluster/server.log" "$dir/server.log"
    listen=127.0.0.1
    if [[ -n "${PG_LISTEN:-}" ]]; then
      listen="127.0.0.1,$PG_LISTEN"
    fi
    echo "$listen" >"$cluster/listen"
    if ! as_owner "$bin/initdb" -D "$cluster/data" -U postgres -A trust --encoding=UTF8 \
      --locale=C --no-sync >"$dir/initdb.log" 2>&1; then
      cat "$dir/initdb.log" >&2
      exit 1
    fi
    if [[ -n "${PG_LISTEN:-}" ]]; then
      echo "host all all ${PG_LISTEN%.*}.0/24 trust" >>"$cluster/data/pg_hba.conf"
    fi
    # fsync stays on: the ledger tests check durability, not speed.
    if ! as_owner "$bin/pg_ctl" -D "$cluster/data" -l "$cluster/server.log" -w -t 60 \
      -o "-p $port -k $cluster -c listen_addresses=$listen -c max_connections=50" start \
      >/dev/null; then
      cat "$cluster/server.log" >&2 || true
      exit 1
    fi
    echo "postgresql://postgres@${PG_LISTEN:-127.0.0.1}:$port/postgres"
    ;;
  stop)
    [[ $# -eq 2 || $# -eq 3 ]] || usage
    dir=$2
    mode=${3:-fast}
    [[ $mode == fast || $mode == immediate ]] || usage
    [[ -f "$dir/cluster" ]] || exit 0
    cluster=$(cat "$dir/cluster")
    [[ $cluster == /tmp/brisk-pg.* ]] || { echo "unexpected cluster path '$cluster'" >&2; exit 1; }
    bin=$(bindir) || not_installed
    if [[ -f "$cluster/data/postmaster.pid" ]]; then
      as_owner "$bin/pg_ctl" -D "$cluster/data" -m "$mode" -w -t 60 stop >/dev/null
    fi
    # Keep the log beside DIR for a failed test to show.
    rm -f "$dir/server.log"
    cp "$cluster/server.log" "$dir/server.log" 2>/dev/null || true
    rm -rf "$cluster"
    rm -f "$dir/cluster"
    ;;
  pause)
    [[ $# -eq 2 || $# -eq 3 ]] || usage
    mode=${3:-fast}
    [[ $mode == fast || $mode == immediate ]] || usage
    cluster=$(cat "$2/cluster")
    bin=$(bindir) || not_installed
    as_owner "$bin/pg_ctl" -D "$cluster/data" -m "$mode" -w -t 60 stop >/dev/null
    ;;
  resume)
    [[ $# -eq 3 ]] || usage
    cluster=$(cat "$2/cluster")
    bin=$(bindir) || not_installed
    as_owner "$bin/pg_ctl" -D "$cluster/data" -l "$cluster/server.log" -w -t 60 \
      -o "-p $3 -k $cluster -c listen_addresses=$(cat "$cluster/listen") -c max_connections=50" \
      start >/dev/null
    ;;
  *)
    usage
    ;;
esac
