#!/usr/bin/env bash
# The figures of related documents, aggregates and full-text search, on SQLite and PostgreSQL,
# in one run on one machine.
# Usage: bench/queries.sh [DOCS] [SECONDS]   (needs wrk, python3 and Debian's postgresql)
#   DOCS     documents in `orders` (aggregates) and in `notes` (search); default 1000000
#   SECONDS  per wrk workload; default 10
#   env PORTICO_BIN=path: measure that binary instead of building target/release/portico.
#   env PARTS="lists aggregates search" (the default): the parts to run, e.g. PARTS=lists.
# For each backend:
#   1. list of 20 `posts` against the same list with `expand=author` (one relation to `people`):
#      req/s of each and their ratio, three pairs of runs and the median pair (wrk -t1 -c32,
#      Portico pinned to CPU 0, wrk to CPU 1);
#   2. `?group=status&count=true` over DOCS orders (5 statuses): the median of 3 timed requests,
#      and the server's peak RSS (VmHWM) after them, on a server that serves orders only;
#   3. a two-word `?search=` over DOCS short notes (12 words each from 5,000 words): latency
#      percentiles of random two-word queries (wrk -t1 -c4 --latency); and how long the server
#      took to start, which builds the search index over the imported notes.
set -euo pipefail
cd "$(dirname "$0")/.."
DOCS=${1:-1000000}
SECS=${2:-10}
PARTS=${PARTS:-lists aggregates search}
part() { case " $PARTS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
PG_PORT=${PG_PORT:-55434}
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)"; exit 1; }
if [ -n "${PORTICO_BIN:-}" ]; then
  BIN=$(realpath "$PORTICO_BIN")
else
  cargo build --release -q -p portico-cli
  BIN=$PWD/target/release/portico
fi
# shellcheck source=bench/pg-cluster.sh
source bench/pg-cluster.sh queries

echo "generating data ($DOCS orders and notes) ..."
python3 - "$work" "$DOCS" <<'PY'
import json, random, sys
work, n = sys.argv[1], int(sys.argv[2])
random.seed(7)
letters = "abcdefghijklmnopqrstuvwxyz"
vocab = sorted({"".join(random.choice(letters) for _ in range(random.randint(4, 9))) for _ in range(5200)})[:5000]
open(f"{work}/vocab.txt", "w").write("\n".join(vocab))
def dump(name, docs):
    with open(f"{work}/{name}.json", "w") as f:
        f.write("[")
        for i, d in enumerate(docs):
            if i: f.write(",\n")
            f.write(json.dumps(d))
        f.write("]")
dump("people", ({"_id": f"person-{i:05d}", "name": f"Person {i}", "bio": " ".join(random.sample(vocab, 8))} for i in range(1000)))
dump("posts", ({"_id": f"post-{i:06d}", "title": " ".join(random.sample(vocab, 6)), "author": f"person-{random.randrange(1000):05d}"} for i in range(10000)))
statuses = ["open", "paid", "sent", "done", "void"]
dump("orders", ({"_id": f"order-{i:07d}", "status": random.choice(statuses), "amount": random.randrange(1, 1000), "ownerId": f"u{random.randrange(1000)}"} for i in range(n)))
dump("notes", ({"_id": f"note-{i:07d}", "title": " ".join(random.choices(vocab, k=4)), "body": " ".join(random.choices(vocab, k=8))} for i in range(n)))
PY

cat > "$work/search.lua" <<'LUA'
local words = {}
for line in io.lines(os.getenv("VOCAB")) do words[#words + 1] = line end
math.randomseed(os.time())
request = function()
  local a = words[math.random(#words)]
  local b = words[math.random(#words)]
  return wrk.format("GET", "/api/notes?limit=20&search=" .. a .. "%20" .. b)
end
LUA

wait_up() { # port
  for _ in $(seq 1 6000); do
    curl -sf "http://127.0.0.1:$1/healthz" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "the server did not start"; cat "$work/serve.log"; exit 1
}
port=3900
serve() { # url config -> sets pid, port and started (seconds until it answered)
  port=$((port + 1))
  local start
  start=$(date +%s.%N)
  RUST_LOG=warn taskset -c 0 "$BIN" serve --config "$2" --database "$1" --listen "127.0.0.1:$port" >"$work/serve.log" 2>&1 &
  pid=$!
  wait_up "$port"
  started=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; }
rps() { # path
  taskset -c 1 wrk -t1 -c32 -d"${SECS}s" "http://127.0.0.1:$port$1" | awk '/Requests\/sec/ {print $2}'
}

for backend in sqlite postgres; do
  if [ "$backend" = sqlite ]; then url="sqlite:$work/portico.db"; else url="postgres://postgres@127.0.0.1:$PG_PORT/portico"; fi
  echo "== $backend: importing"
  for c in people posts orders notes; do
    /usr/bin/time -f "   import $c: %e s" "$BIN" import --database "$url" --collection "$c" "$work/$c.json" >/dev/null
  done

  # 1. expand against a plain list.
  if part lists; then
  cat > "$work/lists.toml" <<'TOML'
[[api]]
[[api.collection]]
name = "people"
auth_required = false
[[api.collection]]
name = "posts"
auth_required = false
relations = { author = "people" }
TOML
  serve "$url" "$work/lists.toml"
  curl -sf "http://127.0.0.1:$port/api/posts?limit=20&expand=author" | grep -q '"expand"' || { echo "expand failed"; exit 1; }
  taskset -c 1 wrk -t1 -c32 -d2s "http://127.0.0.1:$port/api/posts?limit=20" >/dev/null
  # Three pairs, each plain then expanded right after, and the median pair: on a shared
  # machine one pair alone can land on either side of a slow spell.
  pairs=()
  for _ in 1 2 3; do
    plain=$(rps "/api/posts?limit=20")
    expanded=$(rps "/api/posts?limit=20&expand=author")
    pairs+=("$(awk -v a="$expanded" -v b="$plain" 'BEGIN {printf "%.3f %s %s", a / b, b, a}')")
    echo "   pair: list of 20 $plain req/s, with expand=author $expanded req/s"
  done
  read -r ratio plain expanded < <(printf '%s\n' "${pairs[@]}" | sort -n | sed -n 2p)
  echo "   list of 20: $plain req/s; with expand=author: $expanded req/s; ratio $(awk -v r="$ratio" 'BEGIN {printf "%.2f", r}') (median of 3 pairs)"
  stop
  fi

  # 2. aggregates over DOCS orders, on a server serving orders only.
  if part aggregates; then
  cat > "$work/orders.toml" <<'TOML'
[[api]]
[[api.collection]]
name = "orders"
auth_required = false
TOML
  serve "$url" "$work/orders.toml"
  idle=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
  for q in "group=status&count=true" "count=true" "group=status&count=true&sum=amount&avg=amount"; do
    times=()
    for _ in 1 2 3; do
      times+=("$(curl -s -o /dev/null -w '%{time_total}' "http://127.0.0.1:$port/api/orders?$q")")
    done
    median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 2p)
    echo "   aggregate $q over $DOCS: median ${median} s (${times[*]})"
  done
  peak=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
  echo "   peak RSS: $((idle / 1024)) MiB idle, $((peak / 1024)) MiB after the aggregates"
  stop
  fi

  # 3. search over DOCS notes (the index is built at startup).
  if part search; then
  cat > "$work/notes.toml" <<'TOML'
[[api]]
[[api.collection]]
name = "notes"
auth_required = false
search = ["title", "body"]
TOML
  serve "$url" "$work/notes.toml"
  echo "   startup, building the search index over $DOCS notes: ${started} s"
  stop
  serve "$url" "$work/notes.toml"
  echo "   startup again (index present): ${started} s"
  w=$(head -n 1 "$work/vocab.txt")
  curl -sf "http://127.0.0.1:$port/api/notes?limit=1&search=$w" | grep -q '"_id"' || { echo "search failed"; exit 1; }
  VOCAB="$work/vocab.txt" taskset -c 1 wrk -t1 -c4 -d"${SECS}s" --latency -s "$work/search.lua" "http://127.0.0.1:$port" \
    | awk '/Requests\/sec/ {print "   search: " $2 " req/s"} / (50|90|99)%/ {print "   search p" $1 ": " $2}'
  echo "   peak RSS: $(($(awk '/VmHWM/ {print $2}' "/proc/$pid/status") / 1024)) MiB"
  stop
  fi
done
