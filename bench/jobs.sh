#!/usr/bin/env bash
# Figures of background work through `portico serve`:
#   - jobs per second through one instance and two (SQLite; PostgreSQL with PG_URL set),
#   - enqueue-to-start latency p50/p99 (jobs enqueued one at a time, at a low rate),
#   - webhook deliveries per second to a local receiver (Node.js, signatures checked),
#   - what a pending job costs in storage (SQLite file size per pending job).
#
# Usage: bench/jobs.sh                  (builds target/release/portico first unless PORTICO is set)
#        PG_URL=postgres://... bench/jobs.sh   (also PostgreSQL, one and two instances; the
#                                              database is emptied of Portico's collections first
#                                              by using a fresh one: give a new database)
# Knobs: JOBS (default 5000), TRICKLE (default 200), DELIVERIES (default 1000); ONLY_PG=1
# skips SQLite. A throwaway cluster: PG_PORT=55432 bash -c '. bench/pg-cluster.sh jobs;
# PG_URL=postgres://postgres@127.0.0.1:55432/portico ONLY_PG=1 bench/jobs.sh'.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-5000}
TRICKLE=${TRICKLE:-200}
DELIVERIES=${DELIVERIES:-1000}
if [ -z "${PORTICO:-}" ]; then
  cargo build --release -q -p portico-cli
  PORTICO=${CARGO_TARGET_DIR:-target}/release/portico
fi
PORTICO=$(realpath "$PORTICO")
RECEIVER_DIR=$(realpath crates/portico-cli/tests/support/webhooks)
[ -d "$RECEIVER_DIR/node_modules/standardwebhooks" ] || (cd "$RECEIVER_DIR" && npm ci --no-audit --no-fund -s)

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

cat > "$work/main.ts" <<'EOF'
import { methods, collection, jobs, webhooks } from "portico";
const done = collection("done");
jobs.define("bench", async function (args: any) {
  await done.insert({ wait: Date.now() - args.t0 });
}, { retries: 0 });
methods({
  async enqueueAt(n: number, runAt: number) {
    for (let i = 0; i < n; i += 50) {
      const batch = [];
      for (let j = i; j < Math.min(n, i + 50); j++) batch.push(jobs.enqueue("bench", { t0: runAt }, { runAt }));
      await Promise.all(batch);
    }
    return n;
  },
  async one() { return await jobs.enqueue("bench", { t0: Date.now() }); },
  async later(n: number) {
    for (let i = 0; i < n; i += 50) {
      const batch = [];
      for (let j = i; j < Math.min(n, i + 50); j++) batch.push(jobs.enqueue("bench", { t0: 0 }, { delayMs: 86400000 }));
      await Promise.all(batch);
    }
    return n;
  },
  async send(url: string, n: number) {
    for (let i = 0; i < n; i += 50) {
      const batch = [];
      for (let j = i; j < Math.min(n, i + 50); j++) batch.push(webhooks.send(url, { type: "bench", data: { j } }));
      await Promise.all(batch);
    }
    return n;
  },
  async done() { return await done.find({}).count(); },
  async waits() { return await done.find({}, { sort: { wait: 1 } }).map((d: any) => d.wait); },
  async clear() { return await done.remove({}); },
});
EOF

# serve DIR DB [ENV...]: starts an instance; its base URL in SERVED, its pid last in pids.
serve() {
  local dir=$1 db=$2
  shift 2
  (cd "$dir" && exec env "$@" RUST_LOG=warn "$PORTICO" serve --config portico.toml --database "$db" \
     --listen 127.0.0.1:0 > "$dir/out.$$.$RANDOM" 2>>"$dir/serve.log") &
  pids+=($!)
  local out
  for _ in $(seq 100); do
    out=$(cat "$dir"/out.* 2>/dev/null | grep -o 'http://[0-9.:]*' | tail -1 || true)
    [ -n "$out" ] && break
    sleep 0.1
  done
  rm -f "$dir"/out.*
  SERVED=$out
}

# stop_last N: stops the last N processes started.
stop_last() {
  for _ in $(seq "$1"); do
    kill "${pids[-1]}" 2>/dev/null || true
    unset 'pids[-1]'
  done
  wait 2>/dev/null || true
}

call() { curl -s -X POST "$1/methods/$2" -H 'Content-Type: application/json' -d "$3"; }
now_ms() { date +%s%3N; }

# throughput NAME DB INSTANCES: N jobs due at one moment, run by INSTANCES instances.
throughput() {
  local name=$1 db=$2 count=$3 dir="$work/$1"
  mkdir -p "$dir" && cp "$work/main.ts" "$dir/"
  printf '[scripts]\nmain = "main.ts"\ntimeout_ms = 120000\n[jobs]\nconcurrency = 8\npoll_ms = 100\n[auto]\ncollections = []\n' > "$dir/portico.toml"
  local urls=()
  for _ in $(seq "$count"); do serve "$dir" "$db"; urls+=("$SERVED"); done
  call "${urls[0]}" clear '[]' > /dev/null
  local due=$(( $(now_ms) + 3000 + JOBS * 2 ))
  call "${urls[0]}" enqueueAt "[$JOBS, $due]" > /dev/null
  [ "$(now_ms)" -lt "$due" ] || echo "$name: warning: the enqueue ended after the jobs fell due; raise the margin"
  while [ "$(now_ms)" -lt "$due" ]; do sleep 0.05; done
  while [ "$(call "${urls[0]}" done '[]')" -lt "$JOBS" ]; do sleep 0.05; done
  local took=$(( $(now_ms) - due ))
  echo "$name: $JOBS jobs in $took ms through $count instance(s): $(( JOBS * 1000 / took )) jobs/s"
  stop_last "$count"
}

# latency NAME DB: TRICKLE jobs enqueued one at a time; their wait from enqueue to start.
latency() {
  local name=$1 db=$2 dir="$work/$1-latency"
  mkdir -p "$dir" && cp "$work/main.ts" "$dir/"
  printf '[scripts]\nmain = "main.ts"\n[jobs]\npoll_ms = 1000\n[auto]\ncollections = []\n' > "$dir/portico.toml"
  serve "$dir" "$db"
  local url=$SERVED
  call "$url" clear '[]' > /dev/null
  for _ in $(seq "$TRICKLE"); do call "$url" one '[]' > /dev/null; sleep 0.02; done
  while [ "$(call "$url" done '[]')" -lt "$TRICKLE" ]; do sleep 0.05; done
  call "$url" waits '[]' | python3 -c 'import json,sys; w=json.load(sys.stdin); n=len(w)
print(f"'"$name"': enqueue to start, {n} jobs one at a time: p50 {w[n//2]} ms, p99 {w[min(n-1, n*99//100)]} ms")'
  stop_last 1
}

# deliveries NAME DB: DELIVERIES webhooks sent to a local receiver that checks each signature.
deliveries() {
  local name=$1 db=$2 dir="$work/$1-webhooks"
  mkdir -p "$dir" && cp "$work/main.ts" "$dir/"
  local secret="whsec_$(head -c 32 /dev/urandom | base64)"
  node "$RECEIVER_DIR/receiver.mjs" "$secret" 0 "$dir/received.jsonl" > "$dir/receiver.out" &
  pids+=($!)
  local port=""
  for _ in $(seq 50); do port=$(grep -o '[0-9]*$' "$dir/receiver.out" 2>/dev/null || true); [ -n "$port" ] && break; sleep 0.1; done
  printf '[scripts]\nmain = "main.ts"\ntimeout_ms = 120000\n[jobs]\nconcurrency = 16\npoll_ms = 100\n[auto]\ncollections = []\n[[webhooks]]\nurl = "http://127.0.0.1:%s/in"\nsecret_env = "BENCH_SECRET"\n' "$port" > "$dir/portico.toml"
  serve "$dir" "$db" BENCH_SECRET="$secret"
  local url=$SERVED
  local start
  start=$(now_ms)
  call "$url" send "[\"http://127.0.0.1:$port/in\", $DELIVERIES]" > /dev/null
  while [ "$(grep -c '"verified":true' "$dir/received.jsonl" 2>/dev/null || echo 0)" -lt "$DELIVERIES" ]; do sleep 0.05; done
  local took=$(( $(now_ms) - start ))
  echo "$name: $DELIVERIES webhook deliveries (enqueue included) in $took ms: $(( DELIVERIES * 1000 / took ))/s"
  stop_last 2
}

# storage: the SQLite file's growth per pending job.
storage() {
  local dir="$work/storage" n=10000
  mkdir -p "$dir" && cp "$work/main.ts" "$dir/"
  printf '[scripts]\nmain = "main.ts"\ntimeout_ms = 120000\n[auto]\ncollections = []\n' > "$dir/portico.toml"
  serve "$dir" "sqlite:$dir/s.db"
  stop_last 1
  local before
  before=$(stat -c %s "$dir/s.db")
  serve "$dir" "sqlite:$dir/s.db"
  call "$SERVED" later "[$n]" > /dev/null
  stop_last 1
  local after
  after=$(stat -c %s "$dir/s.db")
  echo "storage: $n pending jobs (arguments {\"t0\":0}) grow the SQLite file by $(( (after - before) / n )) bytes each"
}

if [ -z "${ONLY_PG:-}" ]; then
  throughput sqlite-1 "sqlite:$work/sqlite.db" 1
  latency sqlite "sqlite:$work/sqlite-latency.db"
  deliveries sqlite "sqlite:$work/sqlite-webhooks.db"
  storage
fi
if [ -n "${PG_URL:-}" ]; then
  throughput postgres-1 "$PG_URL" 1
  throughput postgres-2 "$PG_URL" 2
  latency postgres "$PG_URL"
  deliveries postgres "$PG_URL"
fi
