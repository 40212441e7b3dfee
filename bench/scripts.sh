#!/usr/bin/env bash
# Load run for [scripts]: a JavaScript method against the same method in Rust over the auto API,
# and a JavaScript route reading one document against the generated get-by-id, in ONE run.
#
# Usage: bench/scripts.sh
#   SECS  seconds per measurement (default 5)   ROUNDS  rounds, medians reported (default 3)
#   CONNS wrk connections (default 32)          NO_BUILD=1 use the binaries already built
#   CARGO_FLAGS  extra cargo build flags (e.g. the quick release settings below)
# Server pinned to CPU 0, wrk to CPU 1. Builds target/release/{portico,examples/method_server}.
# For a quick build without fat LTO:
#   CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 bench/scripts.sh
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
for tool in wrk taskset curl; do
  command -v "$tool" >/dev/null || { echo "$tool is not installed" >&2; exit 2; }
done
SECS=${SECS:-5}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-32}
if [ -z "${NO_BUILD:-}" ]; then
  cargo build --release -p portico-cli
  cargo build --release -p portico-script --example method_server
fi
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# wrk's requests/s and 99th percentile (ms) for URL with SCRIPT
measure() {
  local url=$1 script=$2 out
  out=$(taskset -c 1 wrk -t1 -c"$CONNS" -d"${SECS}s" --latency -s "$script" "$url")
  local rps p99
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  p99=$(awk '$1=="99%" {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v=v/1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v=v*1000}; print v}' <<<"$out")
  echo "$rps $p99"
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# waits until the server at URL answers at all
wait_for() { for _ in $(seq 100); do curl -s -o /dev/null "$1" && return 0; sleep 0.1; done; echo "no answer at $1" >&2; exit 1; }

echo "== method: Rust echo vs JavaScript jsEcho (auto API, one runtime)"
RUNTIMES=1 taskset -c 0 target/release/examples/method_server 127.0.0.1:3931 > "$work/method.out" &
pids+=($!)
sleep 1
wait_for http://127.0.0.1:3931/methods/echo
cat "$work/method.out"
: > "$work/rust"; : > "$work/js"
taskset -c 1 wrk -t1 -c"$CONNS" -d2s -s bench/wrk/post_method.lua http://127.0.0.1:3931/methods/jsEcho >/dev/null
for _ in $(seq "$ROUNDS"); do
  measure http://127.0.0.1:3931/methods/echo bench/wrk/post_method.lua >> "$work/rust"
  measure http://127.0.0.1:3931/methods/jsEcho bench/wrk/post_method.lua >> "$work/js"
done
method_pid=${pids[-1]}
rss=$(awk '/VmHWM/ {print $2}' /proc/"$method_pid"/status)
kill "$method_pid"
rust=$(cut -d' ' -f1 "$work/rust" | median); js=$(cut -d' ' -f1 "$work/js" | median)
echo "rust echo: $rust req/s (p99 $(cut -d' ' -f2 "$work/rust" | median) ms)"
echo "js echo:   $js req/s (p99 $(cut -d' ' -f2 "$work/js" | median) ms)"
echo "ratio js/rust: $(awk -v a="$js" -v b="$rust" 'BEGIN {printf "%.2f", a/b}')   peak RSS ${rss} KiB"

echo "== route: JavaScript findOne route vs generated get-by-id (portico serve)"
mkdir -p "$work/app/server"
cat > "$work/app/portico.toml" <<TOML
database = "sqlite:$work/app/items.db"
[scripts]
main = "server/main.js"
runtimes = 1
[[api]]
[[api.collection]]
name = "items"
TOML
cat > "$work/app/server/main.js" <<'JS'
import { api, collection } from "portico";
const items = collection("items");
api("api").addRoute("item/:id", { async get() { return await items.findOne(this.urlParams.id); } });
JS
python3 -c 'import json; print(json.dumps([{"_id": "item%05d" % i, "name": "item %d" % i, "price": i * 3, "tags": ["a", "b"]} for i in range(1000)]))' > "$work/items.json"
target/release/portico import --database "sqlite:$work/app/items.db" --collection items "$work/items.json" >/dev/null
(cd "$work/app" && RUST_LOG=warn taskset -c 0 "$repo/target/release/portico" serve --listen 127.0.0.1:3932 > "$work/serve.out" 2> "$work/serve.err") &
pids+=($!)
wait_for http://127.0.0.1:3932/api/items/item00001
cat > "$work/get.lua" <<'LUA'
counter = 0
request = function()
  counter = counter + 1
  return wrk.format("GET", string.format(wrk.path .. "item%05d", counter % 1000))
end
LUA
: > "$work/gen"; : > "$work/route"
taskset -c 1 wrk -t1 -c"$CONNS" -d2s -s "$work/get.lua" http://127.0.0.1:3932/api/item/ >/dev/null
for _ in $(seq "$ROUNDS"); do
  measure http://127.0.0.1:3932/api/items/ "$work/get.lua" >> "$work/gen"
  measure http://127.0.0.1:3932/api/item/ "$work/get.lua" >> "$work/route"
done
serve_pid=$(pgrep -f "portico serve --listen 127.0.0.1:3932" | head -1)
rss=$(awk '/VmHWM/ {print $2}' /proc/"$serve_pid"/status)
gen=$(cut -d' ' -f1 "$work/gen" | median); route=$(cut -d' ' -f1 "$work/route" | median)
gen99=$(cut -d' ' -f2 "$work/gen" | median); route99=$(cut -d' ' -f2 "$work/route" | median)
echo "generated get-by-id: $gen req/s (p99 $gen99 ms)"
echo "js route findOne:    $route req/s (p99 $route99 ms)"
echo "ratio js/generated: $(awk -v a="$route" -v b="$gen" 'BEGIN {printf "%.2f", a/b}')   p99 ratio: $(awk -v a="$route99" -v b="$gen99" 'BEGIN {printf "%.2f", a/b}')   peak RSS ${rss} KiB"
