#!/usr/bin/env bash
# Load run: `portico serve` against the hand-written axum + rusqlite baseline, same machine, same run.
# Usage: bench/load.sh [ITEMS] [SECONDS]   (needs wrk: apt-get install wrk)
# PROFILE=profiling bench/load.sh builds with symbols and debug info, for perf while it runs.
# Server pinned to CPU 0, wrk to CPU 1. Prints req/s and p99 for each scenario and the ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
ITEMS=${1:-10000}
SECS=${2:-10}
CONNS=${CONNS:-32}
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)"; exit 1; }
PROFILE=${PROFILE:-release}
cargo build --profile "$PROFILE" -q -p portico-cli -p portico-bench-baseline
BIN=target/$PROFILE
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

# Seed both databases with the same items.
python3 - "$ITEMS" > "$work/items.json" <<'PY'
import json, sys
n = int(sys.argv[1])
sys.stdout.write("[")
for i in range(n):
    if i: sys.stdout.write(",")
    sys.stdout.write(json.dumps({"_id": "item-%07d" % i, "title": "Item %d" % i, "n": i, "tags": ["bench", "load"]}))
sys.stdout.write("]")
PY
cat > "$work/portico.toml" <<TOML
database = "sqlite:$work/portico.db"
[[api]]
api_path = "api/"
use_default_auth = true
auth_failure_delay_ms = 0
[[api.collection]]
name = "items"
auth_required = false   # the insert scenario writes anonymously, as the baseline does
[[api.collection]]
name = "items"
path = "secure/items"
auth_required = true
TOML
$BIN/portico import --database "sqlite:$work/portico.db" --collection items "$work/items.json" >/dev/null
$BIN/portico users add --database "sqlite:$work/portico.db" --username bench --password bench-password >/dev/null

taskset -c 0 $BIN/baseline-server "$work/base.db" 127.0.0.1:3911 "$ITEMS" >/dev/null &
base_pid=$!
taskset -c 0 $BIN/portico serve --config "$work/portico.toml" --listen 127.0.0.1:3912 >/dev/null 2>&1 &
portico_pid=$!
for port in 3911 3912; do
  for _ in $(seq 1 100); do curl -sf -o /dev/null "http://127.0.0.1:$port/api/items/item-0000000" && break; sleep 0.1; done
done
token=$(curl -sf -H 'Content-Type: application/json' -d '{"username":"bench","password":"bench-password"}' \
  http://127.0.0.1:3912/api/login | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["authToken"])')

run() { # name port script token prefix
  local out
  out=$(ITEMS=$ITEMS TOKEN=$4 PREFIX=$5 taskset -c 1 wrk -t1 -c"$CONNS" -d"${SECS}s" --latency -s "bench/wrk/$3" "http://127.0.0.1:$2" 2>&1)
  local rps p99
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  p99=$(awk '$1=="99%" {print $2}' <<<"$out")
  local non2xx
  non2xx=$(awk '/Non-2xx/ {print $5}' <<<"$out")
  echo "$1 $rps $p99 ${non2xx:-0}"
}
to_ms() { awk '{v=$1; if (v ~ /us$/) {sub(/us/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v*=1000}; print v}' <<<"$1"; }

printf "%-22s %12s %10s %12s %10s %8s %8s\n" scenario base_rps base_p99 portico_rps portico_p99 rps_x p99_x
for scenario in "get-by-id get_by_id.lua - /api/items/" "auth-get-by-id get_by_id.lua TOKEN /api/secure/items/" "list-20 list.lua - -" "insert insert.lua - -"; do
  read -r name script tok prefix <<<"$scenario"
  [ "$prefix" = "-" ] && prefix=""
  btok=""; ptok=""
  if [ "$tok" = "TOKEN" ]; then btok=bench-token; ptok=$token; fi
  read -r _ brps bp99 bbad <<<"$(run "$name" 3911 "$script" "$btok" "$prefix")"
  read -r _ prps pp99 pbad <<<"$(run "$name" 3912 "$script" "$ptok" "$prefix")"
  bms=$(to_ms "$bp99"); pms=$(to_ms "$pp99")
  printf "%-22s %12s %10s %12s %10s %8.2f %8.2f  (non-2xx: %s / %s)\n" "$name" "$brps" "$bp99" "$prps" "$pp99" \
    "$(awk -v a="$prps" -v b="$brps" 'BEGIN{print a/b}')" "$(awk -v a="$pms" -v b="$bms" 'BEGIN{print a/b}')" "$bbad" "$pbad"
done
# A burst of logins (password hashing) beside get-by-id on Portico: compare get-by-id's p99 with
# and without it. Four login connections run for the whole get-by-id measurement.
read -r _ quiet_rps quiet_p99 _ <<<"$(run get-by-id 3912 get_by_id.lua "" /api/items/)"
taskset -c 1 wrk -t1 -c4 -d"$((SECS + 2))s" -s bench/wrk/login.lua http://127.0.0.1:3912 > "$work/login.out" 2>&1 &
login_pid=$!
sleep 1
read -r _ burst_rps burst_p99 _ <<<"$(run get-by-id 3912 get_by_id.lua "" /api/items/)"
wait "$login_pid" || true
logins=$(awk '/Requests\/sec/ {print $2}' "$work/login.out")
printf "login burst: get-by-id p99 %s quiet, %s during %s logins/s (p99 x%.2f; req/s %s -> %s)\n" \
  "$quiet_p99" "$burst_p99" "$logins" "$(awk -v a="$(to_ms "$burst_p99")" -v b="$(to_ms "$quiet_p99")" 'BEGIN{print a/b}')" \
  "$quiet_rps" "$burst_rps"
echo "peak RSS (VmHWM): baseline $(awk '/VmHWM/ {print $2, $3}' /proc/$base_pid/status), portico $(awk '/VmHWM/ {print $2, $3}' /proc/$portico_pid/status)"
