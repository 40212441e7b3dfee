#!/usr/bin/env bash
# Load run: `portico serve` on PostgreSQL against the same server on SQLite, same machine, same run.
# Usage: bench/postgres.sh [ITEMS] [SECONDS]   (needs wrk and Debian's postgresql)
# Portico pinned to CPU 0, wrk to CPU 1; the PostgreSQL server is not pinned (it is part of the
# PostgreSQL setup's cost). Prints req/s and p99 for get-by-id and authenticated get-by-id on
# each backend, the ratios PostgreSQL / SQLite, and the whole-collection count's latency.
set -euo pipefail
cd "$(dirname "$0")/.."
ITEMS=${1:-10000}
SECS=${2:-10}
CONNS=${CONNS:-32}
PG_PORT=${PG_PORT:-55433}
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)"; exit 1; }
pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
[ -x "$pg_bin/initdb" ] || { echo "PostgreSQL is not installed (apt-get install postgresql)"; exit 1; }
cargo build --release -q -p portico-cli
BIN=$PWD/target/release
work=$(mktemp -d /tmp/portico-bench-pg.XXXXXX)
chmod 755 "$work"
as_pg=()
if [ "$(id -u)" = 0 ]; then chown nobody "$work"; as_pg=(runuser -u nobody --); fi
cleanup() {
  kill $(jobs -p) 2>/dev/null || true
  (cd / && "${as_pg[@]}" "$pg_bin/pg_ctl" -D "$work/pg" -m fast stop >/dev/null 2>&1) || true
  rm -rf "$work"
}
trap cleanup EXIT

(cd "$work" && "${as_pg[@]}" "$pg_bin/initdb" -D "$work/pg" -U postgres -A trust -E UTF8 --no-locale >/dev/null)
(cd "$work" && "${as_pg[@]}" "$pg_bin/pg_ctl" -D "$work/pg" -l "$work/pg.log" -w \
  -o "-p $PG_PORT -k $work -c listen_addresses=127.0.0.1" start >/dev/null)
"$pg_bin/psql" -h "$work" -p "$PG_PORT" -U postgres -q -c "CREATE DATABASE portico"
PG="postgres://postgres@127.0.0.1:$PG_PORT/portico"
SQ="sqlite:$work/portico.db"

python3 - "$ITEMS" > "$work/items.json" <<'PY'
import json, sys
n = int(sys.argv[1])
sys.stdout.write("[")
for i in range(n):
    if i: sys.stdout.write(",")
    sys.stdout.write(json.dumps({"_id": "item-%07d" % i, "title": "Item %d" % i, "n": i, "tags": ["bench", "load"]}))
sys.stdout.write("]")
PY
for db in "$SQ" "$PG"; do
  cat > "$work/$( [ "$db" = "$SQ" ] && echo sqlite || echo postgres ).toml" <<TOML
database = "$db"
[[api]]
api_path = "api/"
use_default_auth = true
auth_failure_delay_ms = 0
[[api.collection]]
name = "items"
[[api.collection]]
name = "items"
path = "secure/items"
auth_required = true
TOML
  $BIN/portico import --database "$db" --collection items "$work/items.json" >/dev/null
  $BIN/portico users add --database "$db" --username bench --password bench-password >/dev/null
done

taskset -c 0 $BIN/portico serve --config "$work/sqlite.toml" --listen 127.0.0.1:3921 >/dev/null 2>&1 &
sqlite_pid=$!
taskset -c 0 $BIN/portico serve --config "$work/postgres.toml" --listen 127.0.0.1:3922 >/dev/null 2>&1 &
pg_pid=$!
for port in 3921 3922; do
  for _ in $(seq 1 100); do curl -sf -o /dev/null "http://127.0.0.1:$port/api/items/item-0000000" && break; sleep 0.1; done
done
token() {
  curl -sf -H 'Content-Type: application/json' -d '{"username":"bench","password":"bench-password"}' \
    "http://127.0.0.1:$1/api/login" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["authToken"])'
}
sq_token=$(token 3921)
pg_token=$(token 3922)

run() { # port prefix token -> "rps p99"
  local out
  out=$(ITEMS=$ITEMS TOKEN=$3 PREFIX=$2 taskset -c 1 wrk -t1 -c"$CONNS" -d"${SECS}s" --latency \
    -s bench/wrk/get_by_id.lua "http://127.0.0.1:$1" 2>&1)
  echo "$(awk '/Requests\/sec/ {print $2}' <<<"$out") $(awk '$1=="99%" {print $2}' <<<"$out") $(awk '/Non-2xx/ {print $5}' <<<"$out")"
}
printf "%-16s %12s %10s %12s %10s %8s\n" scenario sqlite_rps sqlite_p99 pg_rps pg_p99 rps_x
for scenario in "get-by-id /api/items/" "auth-get-by-id /api/secure/items/"; do
  read -r name prefix <<<"$scenario"
  st=""; pt=""
  if [ "$name" = auth-get-by-id ]; then st=$sq_token; pt=$pg_token; fi
  read -r srps sp99 sbad <<<"$(run 3921 "$prefix" "$st")"
  read -r prps pp99 pbad <<<"$(run 3922 "$prefix" "$pt")"
  printf "%-16s %12s %10s %12s %10s %8.2f  (non-2xx: %s / %s)\n" "$name" "$srps" "$sp99" "$prps" "$pp99" \
    "$(awk -v a="$prps" -v b="$srps" 'BEGIN{print a/b}')" "${sbad:-0}" "${pbad:-0}"
done
# The list endpoint's total is the whole-collection count, kept by the writes: its latency.
for port in 3921 3922; do
  t=$(curl -s -o /dev/null -w '%{time_total}' "http://127.0.0.1:$port/api/items?limit=1" || echo "?")
  echo "list of 1 with total, port $port: ${t}s"
done
echo "peak RSS (VmHWM): sqlite $(awk '/VmHWM/ {print $2, $3}' /proc/$sqlite_pid/status), postgres $(awk '/VmHWM/ {print $2, $3}' /proc/$pg_pid/status)"
