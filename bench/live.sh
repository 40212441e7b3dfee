#!/usr/bin/env bash
# Live streams under load (issue 15's figures), on a release build:
#  1. get-by-id with wrk alone (the baseline of this run);
#  2. 1,000 idle streams: the server's resident memory per stream, and get-by-id with wrk while
#     they stay open;
#  3. 1,000 streams following one publication while WRITES documents are inserted one after the
#     other (every 20 ms): write-acknowledged-to-event p50/p99 over every (write, subscriber),
#     alone, then with get-by-id under wrk at the same time;
#  4. with PG=1: two instances on one throwaway PostgreSQL, 1,000 streams on B, writes through A.
# Usage: bench/live.sh [SUBSCRIBERS] [WRITES]   (needs wrk; PG=1 needs Debian's postgresql)
# The server is pinned to CPU 0, wrk and live-load to CPU 1 (they share it).
set -euo pipefail
cd "$(dirname "$0")/.."
SUBS=${1:-1000}
WRITES=${2:-300}
SECS=${SECS:-10}
ITEMS=${ITEMS:-10000}
PG_PORT=${PG_PORT:-55434}
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)"; exit 1; }
cargo build --release -q -p portico-cli -p portico-bench-live
BIN=$PWD/target/release
work=$(mktemp -d /tmp/portico-bench-live.XXXXXX)
chmod 755 "$work"
pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
as_pg=()
if [ "$(id -u)" = 0 ]; then chown nobody "$work"; as_pg=(runuser -u nobody --); fi
cleanup() {
  kill $(jobs -p) 2>/dev/null || true
  if [ -d "$work/pg" ]; then
    (cd / && "${as_pg[@]}" "$pg_bin/pg_ctl" -D "$work/pg" -m fast stop >/dev/null 2>&1) || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

python3 - "$ITEMS" > "$work/items.json" <<'PY'
import json, sys
n = int(sys.argv[1])
sys.stdout.write("[" + ",".join(json.dumps({"_id": "item-%07d" % i, "title": "Item %d" % i, "n": i}) for i in range(n)) + "]")
PY
config() { # database
  cat <<TOML
database = "$1"
[[api]]
api_path = "api/"
[[api.collection]]
name = "items"
[auto]
collections = ["things"]
[auto.rules.things]
insert = "anyone"
[[auto.publication]]
name = "things"
collection = "things"
[live]
max_streams = 20000
[server]
max_connections = 20000
TOML
}
wait_up() { for _ in $(seq 1 100); do curl -sf -o /dev/null "http://127.0.0.1:$1/api/items/item-0000000" && return; sleep 0.1; done; echo "server on $1 did not start"; exit 1; }
getbyid() { # port label
  local out
  out=$(ITEMS=$ITEMS PREFIX=/api/items/ taskset -c 1 wrk -t1 -c32 -d"${SECS}s" --latency -s bench/wrk/get_by_id.lua "http://127.0.0.1:$1" 2>&1)
  echo "get-by-id $2: $(awk '/Requests\/sec/ {print $2}' <<<"$out") req/s, p99 $(awk '$1=="99%" {print $2}' <<<"$out")"
}

echo "== one instance on SQLite, $SUBS subscribers"
config "sqlite:$work/live.db" > "$work/live.toml"
$BIN/portico import --database "sqlite:$work/live.db" --collection items "$work/items.json" >/dev/null
taskset -c 0 $BIN/portico serve --config "$work/live.toml" --listen 127.0.0.1:3921 >/dev/null 2>&1 &
pid=$!
wait_up 3921
getbyid 3921 "alone"
taskset -c 1 $BIN/live-load idle http://127.0.0.1:3921/publications/things "$SUBS" "$pid" $((SECS + 3)) &
idle=$!
sleep 3
getbyid 3921 "with $SUBS idle streams"
wait $idle
echo "-- $SUBS streams, $WRITES writes, nothing else running"
taskset -c 1 $BIN/live-load latency http://127.0.0.1:3921/publications/things "$SUBS" "$WRITES"
echo "-- the same with get-by-id under wrk"
taskset -c 1 $BIN/live-load latency http://127.0.0.1:3921/publications/things "$SUBS" "$WRITES" &
active=$!
sleep 2
getbyid 3921 "while $SUBS streams receive events"
wait $active
kill $pid; wait $pid 2>/dev/null || true

if [ "${PG:-0}" = 1 ]; then
  [ -x "$pg_bin/initdb" ] || { echo "PostgreSQL is not installed (apt-get install postgresql)"; exit 1; }
  echo "== two instances on one PostgreSQL: $SUBS subscribers on B, writes through A"
  (cd "$work" && "${as_pg[@]}" "$pg_bin/initdb" -D "$work/pg" -U postgres -A trust -E UTF8 --no-locale >/dev/null)
  (cd "$work" && "${as_pg[@]}" "$pg_bin/pg_ctl" -D "$work/pg" -l "$work/pg.log" -w \
    -o "-p $PG_PORT -k $work -c listen_addresses=127.0.0.1" start >/dev/null)
  "$pg_bin/psql" -h "$work" -p "$PG_PORT" -U postgres -q -c "CREATE DATABASE portico"
  config "postgres://postgres@127.0.0.1:$PG_PORT/portico" > "$work/pg.toml"
  $BIN/portico import --database "postgres://postgres@127.0.0.1:$PG_PORT/portico" --collection items "$work/items.json" >/dev/null
  taskset -c 0 $BIN/portico serve --config "$work/pg.toml" --listen 127.0.0.1:3922 >/dev/null 2>&1 &
  taskset -c 0 $BIN/portico serve --config "$work/pg.toml" --listen 127.0.0.1:3923 >/dev/null 2>&1 &
  wait_up 3922; wait_up 3923
  taskset -c 1 $BIN/live-load latency http://127.0.0.1:3923/publications/things "$SUBS" "$WRITES" http://127.0.0.1:3922/things
fi
