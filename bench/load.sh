#!/usr/bin/env bash
# Load run: `portico serve` beside the yardstick's reference servers (`peer-bare`, the ceiling,
# and `peer-axum-sqlite`, the hand-written baseline), in ONE run, on the same seeded data.
#
# Usage: YARDSTICK=/path/to/yardstick bench/load.sh
#   YARDSTICK  the yardstick directory (seed.py, wrk/, rust/); required outside the development machines
#   ITEMS      seeded documents (default 10000)      SECS    seconds per measurement (default 10)
#   ROUNDS     rounds (servers take turns in each), medians reported (default 3)
#   CONNS      wrk connections (default 32)          WARMUP  seconds of warm-up first (default 2)
#   PROFILE    cargo profile for portico (default release; `profiling` keeps symbols for perf)
#   NO_BUILD=1 use the binaries already built       KEEP=1 keep the work directory
#   PORTICO_BIN  measure this portico binary instead of target/$PROFILE/portico
#   PORTICO_BEFORE  also measure this (older) portico binary in the same run, for before/after
# Needs wrk, taskset, python3. Server pinned to CPU 0, wrk to CPU 1, one server at a time.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

needs="seed.py"
# shellcheck source=bench/yardstick.sh
source bench/yardstick.sh

if [ "${NO_BUILD:-0}" != 1 ]; then
  CARGO_TARGET_DIR=$PEER_TARGET cargo build --release -q --manifest-path "$YARDSTICK/rust/Cargo.toml"
  cargo build --profile "$PROFILE" -q -p portico-cli
fi
PORTICO=${PORTICO_BIN:-$repo/target/$PROFILE/portico}
BARE=$PEER_TARGET/release/peer-bare
AXUM=$PEER_TARGET/release/peer-axum-sqlite

work=$(mktemp -d /tmp/portico-load.XXXXXX)
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

python3 "$YARDSTICK/seed.py" --out "$work/data" --items "$ITEMS" >/dev/null
data=$work/data
token=$(cat "$data/token.txt")
# Portico gets the same items and the same user (its token) through `portico import`.
"$PORTICO" import --database "sqlite:$work/portico.db" --collection items "$data/portico-items.json" >/dev/null
"$PORTICO" import --database "sqlite:$work/portico.db" --collection users "$data/portico-users.json" >/dev/null
cat > "$work/portico.toml" <<TOML
database = "sqlite:$work/portico-run.db"
[[api]]
api_path = "api/"
use_default_auth = true
auth_failure_delay_ms = 0
[[api.collection]]
name = "items"
auth_required = false   # the insert workload writes anonymously, as the baseline does
[[api.collection]]
name = "items"
path = "secure/items"
auth_required = true
TOML

results=$work/results.tsv
: > "$results"
port=3190

# start NAME LOG_LEVEL: starts one server pinned to CPU 0 on a fresh copy of its data.
start() {
  port=$((port + 1))
  case $1 in
    bare) PORT=$port taskset -c 0 "$BARE" 2>/dev/null & ;;
    axum-sqlite)
      rm -f "$work/peer.db"*; cp "$data/seed.db" "$work/peer.db"
      DB_PATH=$work/peer.db PORT=$port taskset -c 0 "$AXUM" 2>/dev/null & ;;
    portico*)
      rm -f "$work/portico-run.db"*
      for f in "$work"/portico.db*; do cp "$f" "$work/portico-run${f#"$work"/portico}"; done
      local bin=$PORTICO
      if [ "$1" = portico-before ]; then bin=$PORTICO_BEFORE; fi
      RUST_LOG=$2 taskset -c 0 "$bin" serve --config "$work/portico.toml" \
        --listen "127.0.0.1:$port" >/dev/null 2>>"$work/$1.log" & ;;
  esac
  server_pid=$!
  local first
  first=$(head -1 "$data/ids.txt")
  for _ in $(seq 1 100); do
    curl -sf -o /dev/null "http://127.0.0.1:$port/api/items/$first" && return 0
    sleep 0.1
  done
  echo "$1 did not answer on port $port" >&2
  exit 1
}

stop() {
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=
}

# measure SERVER WORKLOAD ROUND: one wrk run against the server started last, appended to results.
measure() {
  local env script url
  workload "$2" "$port"
  measure_with "$1" "$2" "$3" "$url" "$script" "${env[@]}"
}

# run ROUND SERVER LOG_LEVEL WORKLOADS...: one round of each workload (insert last: it grows
# the data), then the server's peak RSS.
run() {
  local round=$1 name=$2 level=$3
  shift 3
  start "$name" "$level"
  for w in "$@"; do measure "$name" "$w" "$round"; done
  echo "$name rss $(awk '/VmHWM/ {print $2}' "/proc/$server_pid/status")" >> "$results"
  stop
}

# Servers take turns within each round, so a machine whose load drifts during the run treats
# them alike; each start is on a fresh copy of the data.
for r in $(seq 1 "$ROUNDS"); do
  run "$r" bare - get
  run "$r" axum-sqlite - get auth-get list insert
  run "$r" portico warn get auth-get list insert
  if [ -n "${PORTICO_BEFORE:-}" ]; then run "$r" portico-before warn get auth-get list insert; fi
  run "$r" portico-log info get list
done

python3 - "$results" "$ITEMS" "$CONNS" "$SECS" "$ROUNDS" <<'PY'
import statistics, sys
path, items, conns, secs, rounds = sys.argv[1:]
runs, rss = {}, {}
for line in open(path):
    f = line.split()
    if f[1] == "rss":
        rss[f[0]] = max(rss.get(f[0], 0), int(f[2]) / 1024)
        continue
    kv = dict(x.split("=", 1) for x in f[4:])
    runs.setdefault((f[0], f[1]), []).append(kv)
def med(server, workload, key):
    rs = runs.get((server, workload))
    return statistics.median(float(r[key]) for r in rs) if rs else None
def bad(server, workload):
    return sum(int(r["bad_status"]) + int(r["sock_errors"]) for r in runs.get((server, workload), []))
print(f"\n{items} items, wrk -t1 -c{conns}, {secs}s x {rounds} rounds, medians; server on CPU 0, wrk on CPU 1\n")
names = {"get": "get by id", "auth-get": "authenticated get by id", "list": "list of 20", "insert": "insert"}
print("| workload | bare req/s | axum-sqlite req/s | portico req/s | vs axum-sqlite | vs bare | axum p99 ms | portico p99 ms | p99 ratio | errors |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for w, label in names.items():
    b, a, p = med("bare", w, "rps"), med("axum-sqlite", w, "rps"), med("portico", w, "rps")
    ap, pp = med("axum-sqlite", w, "p99_us"), med("portico", w, "p99_us")
    vs_bare = f"{p / b:.2f}x" if b else "-"
    print(f"| {label} | {b and f'{b:,.0f}' or '-'} | {a:,.0f} | {p:,.0f} | {p / a:.2f}x | {vs_bare} | "
          f"{ap / 1000:.2f} | {pp / 1000:.2f} | {pp / ap:.2f}x | {bad('axum-sqlite', w)}/{bad('portico', w)} |")
if ("portico-before", "get") in runs:
    print("\nbefore (PORTICO_BEFORE) in the same run:\n")
    print("| workload | before req/s | vs axum-sqlite | before p99 ms | p99 ratio | after / before |")
    print("|---|---:|---:|---:|---:|---:|")
    for w, label in names.items():
        a, p, q = med("axum-sqlite", w, "rps"), med("portico", w, "rps"), med("portico-before", w, "rps")
        ap, qp = med("axum-sqlite", w, "p99_us"), med("portico-before", w, "p99_us")
        print(f"| {label} | {q:,.0f} | {q / a:.2f}x | {qp / 1000:.2f} | {qp / ap:.2f}x | {p / q:.2f}x |")
    bg, bag = med("portico-before", "get", "rps"), med("portico-before", "auth-get", "rps")
    print(f"\nbefore: authenticated / unauthenticated get by id: {bag / bg:.2f}x; "
          f"errors {sum(bad('portico-before', w) for w in names)}")
g, ag = med("portico", "get", "rps"), med("portico", "auth-get", "rps")
print(f"\nportico authenticated / unauthenticated get by id: {ag / g:.2f}x")
for w in ("get", "list"):
    on, off = med("portico-log", w, "rps"), med("portico", w, "rps")
    print(f"portico request log on / off, {names[w]}: {on / off:.2f}x ({on:,.0f} vs {off:,.0f} req/s)")
print("peak RSS (VmHWM): " + ", ".join(f"{k} {v:.1f} MiB" for k, v in rss.items()))
PY
