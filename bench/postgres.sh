#!/usr/bin/env bash
# Load run: `portico serve` on PostgreSQL against the same server on SQLite, and two instances on
# one PostgreSQL database against one, in the same run on the same machine.
# Usage: bench/postgres.sh [ITEMS] [SECONDS] [BIG]   (needs wrk and Debian's postgresql)
#   env PORTICO_BIN=path: measure that binary instead of building target/release/portico.
#   ITEMS  documents in `items` (default 10000); SECONDS per workload (default 10);
#   BIG    documents in a second collection `big` for get-by-id at scale (default 0: skipped;
#          1000000 compares 1M with ITEMS in this run and reports the instance's peak RSS).
# Portico pinned to CPU 0, wrk to CPU 1; the PostgreSQL server is not pinned (it is part of the
# PostgreSQL setup's cost). "two" runs both instances on CPU 0, each loaded by its own wrk with
# half the connections: on a 2-core machine that shows the cost of a second instance, not a gain.
set -euo pipefail
cd "$(dirname "$0")/.."
ITEMS=${1:-10000}
SECS=${2:-10}
BIG=${3:-0}
CONNS=${CONNS:-32}
PG_PORT=${PG_PORT:-55433}
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)"; exit 1; }
# PORTICO_BIN=path measures that binary (no build); else target/release/portico, built here.
if [ -n "${PORTICO_BIN:-}" ]; then
  BIN=$(mktemp -d /tmp/portico-bench-bin.XXXXXX)
  ln -s "$(realpath "$PORTICO_BIN")" "$BIN/portico"
else
  cargo build --release -q -p portico-cli
  BIN=$PWD/target/release
fi
# shellcheck source=bench/pg-cluster.sh
source bench/pg-cluster.sh pg
PG="postgres://postgres@127.0.0.1:$PG_PORT/portico"
SQ="sqlite:$work/portico.db"

# The workloads' wrk scripts (kept here so this run does not depend on other files).
cat > "$work/get.lua" <<'LUA'
local n = tonumber(os.getenv("ITEMS") or "10000")
local prefix = os.getenv("PREFIX") or "/api/items/"
local token = os.getenv("TOKEN")
math.randomseed(os.time())
if token and token ~= "" then wrk.headers["X-Auth-Token"] = token end
request = function()
  return wrk.format("GET", string.format("%sitem-%07d", prefix, math.random(0, n - 1)))
end
LUA
cat > "$work/list.lua" <<'LUA'
wrk.method = "GET"
wrk.path = "/api/items?limit=20"
LUA
cat > "$work/insert.lua" <<'LUA'
wrk.method = "POST"
wrk.path = "/api/items"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"title":"new item","n":42,"tags":["bench","insert"]}'
LUA

items() { # N -> a JSON array of N items
  python3 - "$1" <<'PY'
import json, sys
n = int(sys.argv[1])
sys.stdout.write("[")
for i in range(n):
    if i: sys.stdout.write(",")
    sys.stdout.write(json.dumps({"_id": "item-%07d" % i, "title": "Item %d" % i, "n": i, "tags": ["bench", "load"]}))
sys.stdout.write("]")
PY
}
items "$ITEMS" > "$work/items.json"
for db in "$SQ" "$PG"; do
  name=$([ "$db" = "$SQ" ] && echo sqlite || echo postgres)
  cat > "$work/$name.toml" <<TOML
database = "$db"
[[api]]
api_path = "api/"
use_default_auth = true
auth_failure_delay_ms = 0
[[api.collection]]
name = "items"
auth_required = false
[[api.collection]]
name = "items"
path = "secure/items"
auth_required = true
[[api.collection]]
name = "big"
auth_required = false
TOML
  $BIN/portico import --database "$db" --collection items "$work/items.json" >/dev/null
  $BIN/portico users add --database "$db" --username bench --password bench-password >/dev/null
done
if [ "$BIG" -gt 0 ]; then
  items "$BIG" > "$work/big.json"
  start=$(date +%s.%N)
  $BIN/portico import --database "$PG" --collection big "$work/big.json" >/dev/null
  echo "import of $BIG documents into PostgreSQL: $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e-s}') s"
  rm -f "$work/big.json"
fi

serve() { # config port (started as a job of this shell, so the cleanup stops it)
  RUST_LOG=warn taskset -c 0 $BIN/portico serve --config "$work/$1.toml" --listen "127.0.0.1:$2" >/dev/null 2>&1 &
}
serve sqlite 3921; sqlite_pid=$!
serve postgres 3922; pg_pid=$!
serve postgres 3923; pg2_pid=$!
for port in 3921 3922 3923; do
  for _ in $(seq 1 100); do curl -sf -o /dev/null "http://127.0.0.1:$port/api/items/item-0000000" && break; sleep 0.1; done
done
token() {
  curl -sf -H 'Content-Type: application/json' -d '{"username":"bench","password":"bench-password"}' \
    "http://127.0.0.1:$1/api/login" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["authToken"])'
}
sq_token=$(token 3921)
pg_token=$(token 3922)

wrk_run() { # port script conns prefix token items -> "rps p99_ms non2xx"
  local out p99
  out=$(ITEMS=$6 TOKEN=$5 PREFIX=$4 taskset -c 1 wrk -t1 -c"$3" -d"${SECS}s" --latency \
    -s "$work/$2" "http://127.0.0.1:$1" 2>&1)
  p99=$(awk '$1=="99%" {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v*=1000}; print v}' <<<"$out")
  echo "$(awk '/Requests\/sec/ {print $2}' <<<"$out") ${p99:-?} $(awk '/Non-2xx/ {print $5}' <<<"$out" | grep . || echo 0)"
}
two_run() { # script prefix token -> "rps p99_ms non2xx" over both instances at once
  local half=$((CONNS / 2)) first
  wrk_run 3922 "$1" "$half" "$2" "$3" "$ITEMS" > "$work/a.out" &
  first=$!
  wrk_run 3923 "$1" "$half" "$2" "$3" "$ITEMS" > "$work/b.out"
  wait "$first"
  read -r ra pa ba < "$work/a.out"; read -r rb pb bb < "$work/b.out"
  awk -v ra="$ra" -v rb="$rb" -v pa="$pa" -v pb="$pb" -v ba="$ba" -v bb="$bb" \
    'BEGIN{printf "%.2f %s %d", ra+rb, (pa>pb?pa:pb), ba+bb}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b > 0) printf "%.2f", a/b; else print "-" }'; }

printf "%-15s %10s %8s | %10s %8s %6s | %10s %8s %6s | %s\n" \
  workload sqlite p99ms pg-one p99ms x_sq pg-two p99ms x_one non2xx
for w in "get-by-id get.lua /api/items/" "auth-get-by-id get.lua /api/secure/items/" \
         "list-of-20 list.lua -" "insert insert.lua -"; do
  read -r name script prefix <<<"$w"
  st=""; pt=""
  if [ "$name" = auth-get-by-id ]; then st=$sq_token; pt=$pg_token; fi
  read -r srps sp99 sbad <<<"$(wrk_run 3921 "$script" "$CONNS" "$prefix" "$st" "$ITEMS")"
  read -r prps pp99 pbad <<<"$(wrk_run 3922 "$script" "$CONNS" "$prefix" "$pt" "$ITEMS")"
  read -r trps tp99 tbad <<<"$(two_run "$script" "$prefix" "$pt")"
  printf "%-15s %10s %8s | %10s %8s %6s | %10s %8s %6s | %s/%s/%s\n" "$name" "$srps" "$sp99" \
    "$prps" "$pp99" "$(ratio "$prps" "$srps")" "$trps" "$tp99" "$(ratio "$trps" "$prps")" \
    "$sbad" "$pbad" "$tbad"
done
if [ "$BIG" -gt 0 ]; then
  read -r brps bp99 bbad <<<"$(wrk_run 3922 get.lua "$CONNS" /api/big/ "" "$BIG")"
  read -r krps kp99 kbad <<<"$(wrk_run 3922 get.lua "$CONNS" /api/items/ "" "$ITEMS")"
  echo "postgres get-by-id: $BIG docs $brps req/s p99 ${bp99} ms; $ITEMS docs $krps req/s p99 ${kp99} ms; ratio $(ratio "$brps" "$krps") (non-2xx $bbad/$kbad)"
fi
hwm() { awk '/VmHWM/ {print $2, $3}' "/proc/$1/status" 2>/dev/null || echo "? (the server is gone)"; }
echo "peak RSS (VmHWM): sqlite $(hwm $sqlite_pid), postgres one $(hwm $pg_pid), postgres two $(hwm $pg2_pid)"
