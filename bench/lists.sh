#!/usr/bin/env bash
# Sorted and filtered lists on SQLite, as apps show them: `portico serve` with `indexes`
# declared beside the yardstick's `peer-axum-sqlite` (expression indexes), in ONE run, on the
# same seeded items.
#
# Usage: YARDSTICK=/path/to/yardstick bench/lists.sh
#   ITEMS   seeded documents (default 10000)   SECS, ROUNDS, CONNS, WARMUP as in load.sh
#   BIG     documents of the latency part (default 1000000; 0 skips it)
#   NO_BUILD=1, PORTICO_BIN, PORTICO_BEFORE (a binary without indexes, measured the same way)
# Part 1 (throughput, wrk -t1 -c$CONNS, server on CPU 0, wrk on CPU 1, servers taking turns):
#   top   the 20 highest `score`, with the total   peer: ?limit=20&sort=-score
#   city  the same among `city = "Oslo"`, with their total   peer: &city=Oslo
#   page  the unsorted list of 20 (no index involved), for the regression check
#   insert  a POST of one item, into the collection with its three indexes, beside the peer
#         (whose table has two expression indexes) and Portico without indexes (`portico-plain`)
# Part 2 (latency at ITEMS and at BIG, one request at a time, median of 21): the two lists, the
#   unsorted `where={"city":"Oslo"}` and `where={"score":{"$gte":50}}`, on Portico only; and
#   (`-nt`) the same with `total=false`, which skips counting the matches.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
needs="seed.py"
# shellcheck source=bench/yardstick.sh
source bench/yardstick.sh
BIG=${BIG:-1000000}

if [ "${NO_BUILD:-0}" != 1 ]; then
  CARGO_TARGET_DIR=$PEER_TARGET cargo build --release -q --manifest-path "$YARDSTICK/rust/Cargo.toml"
  cargo build --profile "$PROFILE" -q -p portico-cli
fi
PORTICO=${PORTICO_BIN:-$repo/target/$PROFILE/portico}
AXUM=$PEER_TARGET/release/peer-axum-sqlite

work=$(mktemp -d /tmp/portico-lists.XXXXXX)
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

# seed DIR N: the yardstick's items, and Portico's database of them with its indexes made.
seed() {
  python3 "$YARDSTICK/seed.py" --out "$1" --items "$2" >/dev/null
  "$PORTICO" import --database "sqlite:$1/portico.db" --collection items "$1/portico-items.json" >/dev/null 2>&1
  cat > "$1/portico.toml" <<TOML
database = "sqlite:$1/portico-run.db"
[[api]]
api_path = "api/"
auth_failure_delay_ms = 0
[[api.collection]]
name = "items"
auth_required = false
indexes = ["-score", ["city", "-score"], "-age"]
TOML
  sed 's/^indexes = .*$//' "$1/portico.toml" > "$1/portico-noindex.toml"
}

port=3290
# start NAME DIR: one server pinned to CPU 0 on a fresh copy of DIR's data.
start() {
  port=$((port + 1))
  case $1 in
    axum-sqlite)
      rm -f "$2/peer.db"*; cp "$2/seed.db" "$2/peer.db"
      DB_PATH=$2/peer.db PORT=$port taskset -c 0 "$AXUM" 2>/dev/null & ;;
    portico|portico-before|portico-plain)
      rm -f "$2/portico-run.db"*
      for f in "$2"/portico.db*; do cp "$f" "$2/portico-run${f#"$2"/portico}"; done
      local bin=$PORTICO config=$2/portico.toml
      if [ "$1" = portico-before ]; then bin=$PORTICO_BEFORE; config=$2/portico-noindex.toml; fi
      if [ "$1" = portico-plain ]; then config=$2/portico-noindex.toml; fi
      RUST_LOG=warn taskset -c 0 "$bin" serve --config "$config" \
        --listen "127.0.0.1:$port" >/dev/null 2>>"$work/$1.log" & ;;
  esac
  server_pid=$!
  for _ in $(seq 1 3000); do
    curl -sf -o /dev/null "http://127.0.0.1:$port/api/items?limit=1" && return 0
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

OSLO=$(python3 -c 'import urllib.parse; print(urllib.parse.quote("{\"city\":\"Oslo\"}"))')
GTE=$(python3 -c 'import urllib.parse; print(urllib.parse.quote("{\"score\":{\"$gte\":50}}"))')
# path SERVER WORKLOAD
path() {
  case $1:$2 in
    axum-sqlite:top) echo "/api/items?limit=20&sort=-score" ;;
    axum-sqlite:city) echo "/api/items?limit=20&sort=-score&city=Oslo" ;;
    *:top) echo "/api/items?limit=20&sort=-score" ;;
    *:city) echo "/api/items?limit=20&sort=-score&where=$OSLO" ;;
    *:page) echo "/api/items?limit=20" ;;
    *:oslo) echo "/api/items?limit=20&where=$OSLO" ;;
    *:gte) echo "/api/items?limit=20&where=$GTE" ;;
    *:top-nt) echo "/api/items?limit=20&sort=-score&total=false" ;;
    *:city-nt) echo "/api/items?limit=20&sort=-score&total=false&where=$OSLO" ;;
    *:gte-nt) echo "/api/items?limit=20&total=false&where=$GTE" ;;
  esac
}

results=$work/results.tsv
: > "$results"
# measure SERVER WORKLOAD ROUND: one wrk run against the server started last (an insert as the
# yardstick's insert workload).
measure() {
  local env=() script=fixed.lua url="http://127.0.0.1:$port$(path "$1" "$2")" data="" token=""
  if [ "$2" = insert ]; then workload insert "$port"; fi
  measure_with "$1" "$2" "$3" "$url" "$script" "${env[@]}"
}

# latency SERVER WORKLOAD SIZE: the median of 21 sequential requests (after 3 unmeasured).
latency() {
  local url="http://127.0.0.1:$port$(path "$1" "$2")"
  for _ in 1 2 3; do curl -s -o /dev/null "$url"; done
  local ms
  ms=$(for _ in $(seq 1 21); do curl -s -o /dev/null -w '%{time_total}\n' "$url"; done \
    | sort -n | sed -n 11p)
  echo "$1 $2 $3 latency_ms=$(python3 -c "print(round($ms * 1000, 2))")" | tee -a "$results" >&2
}

small=$work/small
seed "$small" "$ITEMS"
for r in $(seq 1 "$ROUNDS"); do
  # Inserts last on each server: they grow the data.
  start axum-sqlite "$small"; for w in top city insert; do measure axum-sqlite $w "$r"; done; stop
  start portico "$small"; for w in top city page insert; do measure portico $w "$r"; done
  echo "portico rss $(awk '/VmHWM/ {print $2}' "/proc/$server_pid/status")" >> "$results"; stop
  start portico-plain "$small"; measure portico-plain insert "$r"; stop
  if [ -n "${PORTICO_BEFORE:-}" ]; then
    start portico-before "$small"; for w in top city page; do measure portico-before $w "$r"; done; stop
  fi
done
start portico "$small"
for w in top city oslo gte top-nt city-nt gte-nt; do latency portico $w "$ITEMS"; done
stop
if [ "$BIG" != 0 ]; then
  big=$work/big
  echo "seeding $BIG items ..." >&2
  seed "$big" "$BIG"
  start portico "$big"
  echo "portico made its indexes over $BIG items" >&2
  for w in top city oslo gte top-nt city-nt gte-nt; do latency portico $w "$BIG"; done
  echo "portico-big rss $(awk '/VmHWM/ {print $2}' "/proc/$server_pid/status")" >> "$results"
  stop
fi

python3 - "$results" <<'PY'
import statistics, sys
runs, lat, rss = {}, {}, {}
for line in open(sys.argv[1]):
    f = line.split()
    if f[1] == "rss":
        rss[f[0]] = max(rss.get(f[0], 0), int(f[2]) / 1024); continue
    if f[3].startswith("latency_ms="):
        lat[(f[1], f[2])] = float(f[3].split("=")[1]); continue
    kv = dict(x.split("=", 1) for x in f[4:] if "=" in x)
    runs.setdefault((f[0], f[1]), []).append(kv)
def med(server, w, key):
    rs = runs.get((server, w))
    return statistics.median(float(r[key]) for r in rs) if rs else None
print("| workload | axum-sqlite req/s | portico req/s | ratio | before req/s | axum p99 ms | portico p99 ms |")
print("|---|---:|---:|---:|---:|---:|---:|")
for w in ["top", "city", "page", "insert"]:
    a, p, b = med("axum-sqlite", w, "rps"), med("portico", w, "rps"), med("portico-before", w, "rps")
    ap, pp = med("axum-sqlite", w, "p99_us"), med("portico", w, "p99_us")
    f = lambda x, d=0: "-" if x is None else f"{x:,.{d}f}"
    ratio = "-" if not (a and p) else f"{p / a:.2f}x"
    print(f"| {w} | {f(a)} | {f(p)} | {ratio} | {f(b)} | {f(ap and ap / 1000, 2)} | {f(pp and pp / 1000, 2)} |")
plain = med("portico-plain", "insert", "rps")
if plain:
    p = med("portico", "insert", "rps")
    print(f"\ninsert with three indexes / without: {p:,.0f} / {plain:,.0f} req/s = {p / plain:.2f}x")
if lat:
    sizes = sorted({s for (_, s) in lat}, key=int)
    print()
    print("| list (Portico, one request at a time) | " + " | ".join(f"{int(s):,} docs ms" for s in sizes) + " | ratio |")
    print("|---|" + "---:|" * (len(sizes) + 1))
    for w in ["top", "city", "oslo", "gte", "top-nt", "city-nt", "gte-nt"]:
        vals = [lat.get((w, s)) for s in sizes]
        ratio = f"{vals[-1] / vals[0]:.2f}x" if len(vals) > 1 and vals[0] else "-"
        print(f"| {w} | " + " | ".join("-" if v is None else f"{v:.2f}" for v in vals) + f" | {ratio} |")
print()
print("peak RSS MiB:", {k: round(v, 1) for k, v in rss.items()})
PY
