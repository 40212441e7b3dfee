#!/usr/bin/env bash
# Load run on PostgreSQL: `portico serve` beside the yardstick's hand-written PostgreSQL server
# (`peer-axum-postgres`: axum + tokio-postgres, a pool, prepared statements, stored JSON text
# embedded raw), in ONE run, on one throwaway PostgreSQL cluster and the same seeded data; then
# two Portico instances sharing the database. Besides req/s and p99 it reports the CPU seconds
# per 1,000 requests spent by each Portico instance and by PostgreSQL (from /proc), with one
# instance and with two.
#
# Usage: YARDSTICK=/path/to/yardstick bench/postgres.sh
#   YARDSTICK  the yardstick directory (seed.py, seed_pg.py, wrk/, rust/); required outside the
#              development machines
#   ITEMS      seeded documents (default 10000)      SECS    seconds per measurement (default 10)
#   ROUNDS     rounds (servers take turns in each), medians reported (default 3)
#   CONNS      wrk connections (default 32; "two" gives each instance its own wrk with half)
#   TWO_CONNS  connections of each instance's wrk in "two" instead (e.g. 32: a second instance
#              that brings its own clients, each instance as busy as the one alone)
#   WORKLOADS  the workloads to run, in order (default "get auth-get list insert"; also "top"
#              and "city", the sorted lists, which the peer serves through expression indexes)
#   NO_PEER=1  leave the peer out (to measure Portico's second instance alone, in less time)
#   HALF       1 (the default when the connections are shared out): also measure one instance
#              with half the connections ("half"), the control for "two": each of two instances
#              then has the connections, and so the requests in flight, that instance has. Per
#              request costs that are shared by the requests in flight (a change-stamp read, an
#              insert group's commit) grow when an instance has fewer, with or without another
#              instance; two/half is what the second instance itself adds
#   WARMUP     seconds of warm-up first (default 2)  PROFILE cargo profile for portico (release)
#   NO_BUILD=1 use the binaries already built        PORTICO_BIN  measure this portico binary
#   PG_PORT    the throwaway cluster's port (default 55433)
#   PORTICO_OTHER  also measure this portico binary (one instance) in the same run, for A/B
#   METRICS=1  turn on Portico's [metrics] (its store timing costs a little) and report how many
#              requests shared each change-stamp read, with one instance and with two
#   CACHE_MB   Portico's database_cache_mb (default: the server's, 16; 0 measures without the
#              read cache)
#   PG_DETAIL=1  also report PostgreSQL's CPU per 1,000 requests by process kind (client
#              backends, walwriter, autovacuum, ...), and the statements Portico ran per 1,000
#              requests with their mean time (pg_stat_statements), and what Portico's active
#              backends were waiting on (pg_stat_activity sampled every 20 ms), to see where a
#              second instance's work goes
#   STAMP_BATCH, STAMP_WAIT_US  Portico's database_stamp_batch / database_stamp_wait_us (default:
#              the server's, 8 and 500; STAMP_BATCH=1 starts a stamp round as soon as the last ends)
# Needs wrk, taskset, python3, curl and Debian's postgresql. Servers pinned to CPU 0, wrk to CPU 1;
# PostgreSQL is not pinned (on a 2-core machine it shares both cores). Each round re-seeds both
# databases (the insert workload, run last, grows them).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

needs="seed.py seed_pg.py"
# shellcheck source=bench/yardstick.sh
source bench/yardstick.sh
PG_PORT=${PG_PORT:-55433}

if [ "${NO_BUILD:-0}" != 1 ]; then
  CARGO_TARGET_DIR=$PEER_TARGET cargo build --release -q --manifest-path "$YARDSTICK/rust/Cargo.toml"
  if [ -z "${PORTICO_BIN:-}" ]; then cargo build --profile "$PROFILE" -q -p portico-cli; fi
fi
PORTICO=${PORTICO_BIN:-$repo/target/$PROFILE/portico}
PEER=$PEER_TARGET/release/peer-axum-postgres
[ -x "$PEER" ] || { echo "no $PEER (build the yardstick, or unset NO_BUILD)" >&2; exit 2; }

if [ "${PG_DETAIL:-0}" = 1 ]; then
  PG_OPTS="${PG_OPTS:-} -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track_utility=off"
fi
# shellcheck source=bench/pg-cluster.sh
source bench/pg-cluster.sh postgres
PG_URL=postgres://postgres@127.0.0.1:$PG_PORT
psql_do() { "$pg_bin/psql" -h "$work" -p "$PG_PORT" -U postgres -q -v ON_ERROR_STOP=1 "$@"; }
postmaster=$(head -1 "$work/pg/postmaster.pid")
HZ=$(getconf CLK_TCK)

python3 "$YARDSTICK/seed.py" --out "$work/data" --items "$ITEMS" >/dev/null
data=$work/data
token=$(cat "$data/token.txt")
cat > "$work/portico.toml" <<TOML
database = "$PG_URL/portico"
${CACHE_MB:+database_cache_mb = $CACHE_MB}
${STAMP_BATCH:+database_stamp_batch = $STAMP_BATCH}
${STAMP_WAIT_US:+database_stamp_wait_us = $STAMP_WAIT_US}
$(if [ "${METRICS:-0}" = 1 ]; then printf '[metrics]'; fi)
[[api]]
api_path = "api/"
use_default_auth = true
auth_failure_delay_ms = 0
[[api.collection]]
name = "items"
auth_required = false   # the insert workload writes anonymously, as the baseline does
indexes = ["-score", ["city", "-score"]]   # the sorted lists (top, city), as the peer's
[[api.collection]]
name = "items"
path = "secure/items"
auth_required = true
TOML

# Fresh databases from the same seed: the peer's schema through the yardstick's loader, and
# Portico's through `portico import` of the same items and user (the same login token).
seed() {
  psql_do -d postgres -c "DROP DATABASE IF EXISTS peers" -c "DROP DATABASE IF EXISTS portico" \
    -c "CREATE DATABASE peers" -c "CREATE DATABASE portico"
  PATH=$pg_bin:$PATH python3 "$YARDSTICK/seed_pg.py" --from "$data/seed.db" --url "$PG_URL/peers" >/dev/null
  "$PORTICO" import --database "$PG_URL/portico" --collection items "$data/portico-items.json" >/dev/null 2>>"$work/import.log"
  "$PORTICO" import --database "$PG_URL/portico" --collection users "$data/portico-users.json" >/dev/null 2>>"$work/import.log"
  # Vacuumed and checkpointed now, so that autovacuum and the checkpointer do not work on the
  # fresh tables during the first workload after a seed (their CPU counts as PostgreSQL's).
  psql_do -d peers -c "VACUUM ANALYZE"
  psql_do -d portico -c "VACUUM ANALYZE"
  if [ "${PG_DETAIL:-0}" = 1 ]; then psql_do -d portico -c "CREATE EXTENSION pg_stat_statements"; fi
  psql_do -d postgres -c "CHECKPOINT"
}

# CPU clock ticks (user + system) of processes; of PostgreSQL: the postmaster with the children
# it reaped, and every live server process.
ticks() {
  local t=0 p
  for p in "$@"; do
    if [ -r "/proc/$p/stat" ]; then t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); fi
  done
  echo "$t"
}
# switches PID: the context switches of every thread of PID, "voluntary involuntary".
switches() {
  cat /proc/"$1"/task/*/status 2>/dev/null |
    awk '/^voluntary_ctxt_switches/ {v += $2} /^nonvoluntary_ctxt_switches/ {n += $2} END {print v + 0, n + 0}'
}
pg_ticks() {
  local t
  t=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$postmaster/stat")
  echo $((t + $(ticks $(pgrep -P "$postmaster" || true))))
}

# pg_procs: "PID TICKS KIND" for each live PostgreSQL server process, and "0 TICKS reaped" for
# the exited ones the postmaster has collected (autovacuum workers, ...). KIND is the process
# title without its client address and state (client backends: "client DATABASE").
pg_procs() {
  local p title
  awk '{print 0, $16 + $17, "reaped"}' "/proc/$postmaster/stat"
  for p in $(pgrep -P "$postmaster" || true); do
    [ -r "/proc/$p/stat" ] || continue
    title=$(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | sed 's/ *$//' || true)
    title=${title#postgres: }
    case $title in
      *"("[0-9]*")"*) title="client $(awk '{print $2}' <<<"$title")" ;;
    esac
    echo "$p $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0) $title"
  done
}

HALF=${HALF:-$([ -n "${TWO_CONNS:-}" ] && echo 0 || echo 1)}
results=$work/results.tsv
: > "$results"
port=3290
pids=()

# start NAME [COUNT]: the server(s) pinned to CPU 0, each on its own port (ports in $ports).
start() {
  ports=(); pids=()
  local n=${2:-1} i
  for i in $(seq 1 "$n"); do
    port=$((port + 1)); ports+=("$port")
    case $1 in
      peer) DATABASE_URL=$PG_URL/peers PORT=$port taskset -c 0 "$PEER" 2>/dev/null & ;;
      *) local bin=$PORTICO
         if [ "$1" = other ]; then bin=$PORTICO_OTHER; fi
         RUST_LOG=warn taskset -c 0 "$bin" serve --config "$work/portico.toml" \
           --listen "127.0.0.1:$port" >/dev/null 2>>"$work/portico.log" & ;;
    esac
    pids+=("$!")
  done
  local first p
  first=$(head -1 "$data/ids.txt")
  for p in "${ports[@]}"; do
    for _ in $(seq 1 100); do
      curl -sf -o /dev/null "http://127.0.0.1:$p/api/items/$first" && continue 2
      sleep 0.1
    done
    echo "$1 did not answer on port $p" >&2
    exit 1
  done
  # Every document read once through each server, so that a server's read cache is as warm as
  # a long-running one's whatever its share of the warm-up (the peer has none; it reads too).
  python3 - "$data/ids.txt" "$token" "${ports[@]}" <<'PY'
import http.client, sys
ids = [l.strip() for l in open(sys.argv[1]) if l.strip()]
for port in sys.argv[3:]:
    conn = http.client.HTTPConnection("127.0.0.1", int(port))
    for i in ids:
        for path, headers in (("/api/items/", {}), ("/api/secure/items/", {"X-Auth-Token": sys.argv[2]})):
            conn.request("GET", path + i, headers=headers)
            r = conn.getresponse()
            r.read()
            if r.status >= 500:
                sys.exit(f"port {port}: {path}{i} answered {r.status}")
PY
}

stop() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  pids=()
}

# measure NAME WORKLOAD ROUND: one wrk per running server (the connections shared out), at once;
# appends the summed requests, the worst p99 and the CPU ticks of the servers and of PostgreSQL.
measure() {
  local n=${#ports[@]} conns=$((CONNS / ${#ports[@]})) p i env script url
  if [ "$n" -gt 1 ] && [ -n "${TWO_CONNS:-}" ]; then conns=$TWO_CONNS; fi
  if [ "$1" = half ]; then conns=$((CONNS / 2)); fi
  if [ "$WARMUP" != 0 ]; then
    for p in "${ports[@]}"; do
      workload "$2" "$p" "$1"
      env "${env[@]}" taskset -c 1 wrk -t1 -c"$conns" -d"${WARMUP}s" -s "$YARDSTICK/wrk/$script" "$url" >/dev/null 2>&1 &
      wrks+=("$!")
    done
    wait_wrk
  fi
  local before=() pg_before stamps_before sampler_pid=0 sampler_before=0
  if [ "${PG_DETAIL:-0}" = 1 ]; then
    psql_do -d portico -c "SELECT pg_stat_statements_reset()" >/dev/null
    # One sampler connection; its own CPU is taken out of PostgreSQL's below.
    rm -f "$work/sampler.stop"
    ({ echo "SELECT 'pid ' || pg_backend_pid();"
       while [ ! -e "$work/sampler.stop" ]; do
         echo "SELECT coalesce(wait_event_type || ':' || wait_event, 'running') FROM pg_stat_activity
               WHERE datname = 'portico' AND state = 'active' AND pid <> pg_backend_pid();"
         sleep 0.02
       done; } | psql_do -d postgres -At > "$work/waits.now" 2>/dev/null) &
    sampler=$!
    for _ in $(seq 1 100); do
      sampler_pid=$(awk '$1 == "pid" {print $2; exit}' "$work/waits.now")
      [ -n "$sampler_pid" ] && break
      sleep 0.05
    done
    [ -n "$sampler_pid" ] || { echo "the wait sampler did not start" >&2; exit 1; }
    sampler_before=$(ticks "$sampler_pid")
    pg_procs | grep -v "^$sampler_pid " > "$work/procs.before"
  fi
  stamps_before=$(stamp_counts)
  local switched=()
  for p in "${pids[@]}"; do before+=("$(ticks "$p")"); switched+=("$(switches "$p")"); done
  pg_before=$(pg_ticks)
  i=0
  for p in "${ports[@]}"; do
    workload "$2" "$p" "$1"
    env "${env[@]}" taskset -c 1 wrk -t1 -c"$conns" --timeout 10s -d"${SECS}s" --latency \
      -s "$YARDSTICK/wrk/$script" "$url" > "$work/wrk.$i" 2>&1 &
    wrks+=("$!")
    i=$((i + 1))
  done
  wait_wrk
  local cpu="" pg_cpu
  pg_cpu=$(( $(pg_ticks) - pg_before ))
  if [ "${PG_DETAIL:-0}" = 1 ]; then
    pg_cpu=$(( pg_cpu - ($(ticks "$sampler_pid") - sampler_before) ))
    pg_procs | grep -v "^$sampler_pid " | awk -v tag="$1 $2 $3" 'NR == FNR {b[$1 " " $3] = $2; next}
      {k = $1 " " $3; d[substr($0, index($0, $3))] += $2 - (k in b ? b[k] : 0)}
      END {for (x in d) printf "%s\t%s\t%d\n", tag, x, d[x]}' "$work/procs.before" - >> "$work/pgdetail.tsv"
    touch "$work/sampler.stop"
    wait "$sampler" 2>/dev/null || true
    { grep -v '^pid ' "$work/waits.now" || true; } | sort | uniq -c |
      awk -v tag="$1 $2 $3" '{n = $1; $1 = ""; printf "%s\t%s\t%d\n", tag, substr($0, 2), n}' >> "$work/waits.tsv"
    if [ "$1" != peer ]; then
      psql_do -d portico -At -F $'\t' -c "SELECT '$1 $2 $3', regexp_replace(left(query, 60), '\s+', ' ', 'g'),
        calls, total_exec_time FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
        WHERE d.datname = 'portico' AND query NOT LIKE '%pg_stat_statements%'" >> "$work/statements.tsv"
    fi
  fi
  for i in $(seq 0 $((n - 1))); do
    cpu="$cpu,$(( $(ticks "${pids[$i]}") - before[i] ))"
    echo "$1 $2 $3 $i ${switched[$i]} $(switches "${pids[$i]}")" >> "$work/switches.tsv"
  done
  local lines
  lines=$(cat "$work"/wrk.* | grep '^RESULT' || true)
  [ "$(grep -c . <<<"$lines")" = "$n" ] || { echo "wrk gave no RESULT line for $1 $2" >&2; cat "$work"/wrk.*; exit 1; }
  rm -f "$work"/wrk.*
  if [ "${METRICS:-0}" = 1 ] && [ "$1" != peer ]; then
    echo "$1 $2 $3 $stamps_before $(stamp_counts)" >> "$work/stamps.tsv"
  fi
  echo "$1 $2 $3 $pg_cpu ${cpu#,} $(tr '\n' '|' <<<"$lines")" >> "$results"
  echo "  $1 $2 round $3: $(awk '{for (i = 1; i <= NF; i++) if ($i ~ /^(rps|p99_us|bad_status)=/) printf "%s ", $i}' <<<"$lines")" >&2
}
# stamp_counts: the change-stamp rounds, the calls they answered, and the read cache's hits and
# misses, summed over the running Portico servers (from /metrics; zeros without METRICS=1 or for
# the peer).
stamp_counts() {
  local p text sums=(0 0 0 0) i m
  local metrics=(portico_postgres_stamp_rounds_total portico_postgres_stamp_callers_total
    portico_postgres_cache_hits_total portico_postgres_cache_misses_total)
  if [ "${METRICS:-0}" = 1 ]; then
    for p in "${ports[@]}"; do
      text=$(curl -sf "http://127.0.0.1:$p/metrics" || true)
      for i in 0 1 2 3; do
        m=${metrics[$i]}
        sums[i]=$((sums[i] + $(awk -v m="$m" '$1 == m {n = $2} END {printf "%d", n}' <<<"$text")))
      done
    done
  fi
  echo "${sums[*]}"
}
wait_wrk() { local j; for j in "${wrks[@]}"; do wait "$j" 2>/dev/null || true; done; wrks=(); }
wrks=()

# run ROUND NAME COUNT: every workload against COUNT instances (insert last: it grows the data).
run() {
  start "$2" "$3"
  for w in ${WORKLOADS:-get auth-get list insert}; do measure "$2" "$w" "$1"; done
  local p rss=""
  for p in "${pids[@]}"; do rss="$rss $(awk '/VmHWM/ {print $2}' "/proc/$p/status")"; done
  echo "$2 rss${rss}" >> "$results"
  stop
}

for r in $(seq 1 "$ROUNDS"); do
  seed
  if [ "${NO_PEER:-0}" != 1 ]; then run "$r" peer 1; fi
  run "$r" portico 1
  if [ "$HALF" = 1 ]; then seed; run "$r" half 1; fi
  if [ -n "${PORTICO_OTHER:-}" ]; then seed; run "$r" other 1; fi
  seed
  run "$r" two 2
done
echo "load while measuring (1/5/15 min): $(cut -d' ' -f1-3 /proc/loadavg)" >&2

touch "$work/stamps.tsv" "$work/pgdetail.tsv" "$work/statements.tsv" "$work/waits.tsv" "$work/switches.tsv"
python3 - "$results" "$ITEMS" "$CONNS" "$SECS" "$ROUNDS" "$HZ" "$work/stamps.tsv" "$work/pgdetail.tsv" "$work/statements.tsv" "$work/waits.tsv" "$work/switches.tsv" <<'PY'
import statistics, sys
path, items, conns, secs, rounds, hz, stamps_path, detail_path, statements_path, waits_path, switches_path = sys.argv[1:]
hz = float(hz)
runs, rss = {}, {}
for line in open(path):
    f = line.split()
    if f[1] == "rss":
        for i, v in enumerate(f[2:]):
            key = f"{f[0]} {i + 1}" if f[0] == "two" else f[0]
            rss[key] = max(rss.get(key, 0), int(v) / 1024)
        continue
    name, workload, pg, cpu = f[0], f[1], int(f[3]), [int(x) for x in f[4].split(",")]
    parts = [dict(x.split("=", 1) for x in r.split()[1:])
             for r in line.split(" ", 5)[5].split("|") if r.startswith("RESULT")]
    requests = [int(p["requests"]) for p in parts]
    runs.setdefault((name, workload), []).append({
        "round": f[2],
        "requests": sum(requests),
        "parts": requests,
        "rps": sum(float(p["rps"]) for p in parts),
        "p99": max(int(p["p99_us"]) for p in parts),
        "bad": sum(int(p["bad_status"]) + int(p["sock_errors"]) for p in parts),
        "cpu": [c / hz / r * 1000 for c, r in zip(cpu, requests)],
        "pg": pg / hz / sum(requests) * 1000,
    })
def med(name, w, key, i=None):
    rs = runs.get((name, w), [])
    vals = [r[key][i] if i is not None else r[key] for r in rs]
    return statistics.median(vals) if vals else float("nan")
def measured(name, w, rnd):
    """The measurement of server NAME, workload W in round RND (None if there was none)."""
    return next((r for r in runs.get((name, w), []) if r["round"] == rnd), None)
def tagged(path):
    """The lines of a detail file, "NAME WORKLOAD ROUND<tab>..." each, with their measurement."""
    for line in open(path):
        tag, *rest = line.rstrip("\n").split("\t")
        name, w, rnd = tag.split()
        run = measured(name, w, rnd)
        if run:
            yield name, w, rnd, run, rest
names = {"get": "get by id", "auth-get": "authenticated get by id", "list": "list of 20",
         "top": "20 highest score, with the total", "city": "the same in one city, with its total",
         "insert": "insert"}
# Only the workloads this run measured.
names = {w: label for w, label in names.items() if any(key[1] == w for key in runs)}
print(f"\n{items} items, wrk -t1 -c{conns}, {secs}s x {rounds} rounds, medians; servers on CPU 0, "
      f"wrk on CPU 1, PostgreSQL unpinned\n")
print("| workload | peer-axum-postgres req/s (p99 ms) | Portico req/s (p99 ms) | Portico / peer | p99 ratio | two instances req/s (p99 ms) | errors peer/one/two |")
print("|---|---:|---:|---:|---:|---:|---:|")
for w, label in names.items():
    a, p, t = med("peer", w, "rps"), med("portico", w, "rps"), med("two", w, "rps")
    ap, pp, tp = med("peer", w, "p99"), med("portico", w, "p99"), med("two", w, "p99")
    bad = "/".join(str(sum(r["bad"] for r in runs.get((n, w), []))) for n in ("peer", "portico", "two"))
    print(f"| {label} | {a:,.0f} ({ap / 1000:.2f}) | {p:,.0f} ({pp / 1000:.2f}) | {p / a:.2f}x | "
          f"{pp / ap:.2f}x | {t:,.0f} ({tp / 1000:.2f}) | {bad} |")
if any(k[0] == "other" for k in runs):
    print("\nThe other binary (PORTICO_OTHER), one instance, same run:\n")
    print("| workload | other req/s (p99 ms) | other / peer | other / Portico | other CPU s / 1,000 | PostgreSQL |")
    print("|---|---:|---:|---:|---:|---:|")
    for w, label in names.items():
        o, op = med("other", w, "rps"), med("other", w, "p99")
        print(f"| {label} | {o:,.0f} ({op / 1000:.2f}) | {o / med('peer', w, 'rps'):.2f}x | "
              f"{o / med('portico', w, 'rps'):.2f}x | {med('other', w, 'cpu', 0):.3f} | {med('other', w, 'pg'):.3f} |")
print("\nCPU seconds per 1,000 requests (medians):\n")
print("| workload | peer | PostgreSQL under peer | Portico, one | PostgreSQL, one | Portico, two (each) | PostgreSQL, two | Portico two/one | PostgreSQL two/one |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for w, label in names.items():
    peer, peer_pg = med("peer", w, "cpu", 0), med("peer", w, "pg")
    one, one_pg = med("portico", w, "cpu", 0), med("portico", w, "pg")
    t1, t2, two_pg = med("two", w, "cpu", 0), med("two", w, "cpu", 1), med("two", w, "pg")
    two = (t1 + t2) / 2  # per request served by either instance, each instance's own share
    print(f"| {label} | {peer:.3f} | {peer_pg:.3f} | {one:.3f} | {one_pg:.3f} | {t1:.3f} / {t2:.3f} | "
          f"{two_pg:.3f} | {two / one:.2f}x | {two_pg / one_pg:.2f}x |")
if any(k[0] == "half" for k in runs):
    print(f"\nThe second instance against one instance with as many connections as each of the two")
    print(f"({int(conns) // 2}; \"half\"), CPU seconds per 1,000 requests (medians):\n")
    print("| workload | Portico, half | PostgreSQL, half | Portico two/half | PostgreSQL two/half |")
    print("|---|---:|---:|---:|---:|")
    for w, label in names.items():
        h, h_pg = med("half", w, "cpu", 0), med("half", w, "pg")
        two = (med("two", w, "cpu", 0) + med("two", w, "cpu", 1)) / 2
        print(f"| {label} | {h:.3f} | {h_pg:.3f} | {two / h:.2f}x | {med('two', w, 'pg') / h_pg:.2f}x |")
switched = {}
for line in open(switches_path):
    name, w, rnd, i, v0, n0, v1, n1 = line.split()
    run = measured(name, w, rnd)
    if run:
        part = run["parts"][int(i)]
        per = switched.setdefault((name, w), {"v": [], "n": []})
        per["v"].append((int(v1) - int(v0)) / part * 1000)
        per["n"].append((int(n1) - int(n0)) / part * 1000)
if switched:
    print("\nContext switches of a Portico instance per 1,000 of its requests, voluntary (it waited:")
    print("for the network, the database, a timer) / involuntary (preempted), medians:\n")
    print("| workload | one | half | two |")
    print("|---|---:|---:|---:|")
    for w, label in names.items():
        cells = []
        for n in ("portico", "half", "two"):
            per = switched.get((n, w))
            cells.append(f"{statistics.median(per['v']):,.0f} / {statistics.median(per['n']):,.0f}" if per else "-")
        print(f"| {label} | " + " | ".join(cells) + " |")
print("\nProjection (from the one-instance figures): N instances, each on a core of its own, serve")
print("N / portico_cpu req/s until PostgreSQL's cores run out at cores / postgres_cpu:\n")
for w, label in names.items():
    one, one_pg = med("portico", w, "cpu", 0), med("portico", w, "pg")
    if one > 0 and one_pg > 0:
        print(f"- {label}: one Portico core {1000 / one:,.0f} req/s; one PostgreSQL core {1000 / one_pg:,.0f} "
              f"req/s, so one PostgreSQL core keeps {one / one_pg:.1f} Portico cores busy")
shared, misses = {}, {}
for line in open(stamps_path):
    f = line.split()
    r, c = int(f[7]) - int(f[3]), int(f[8]) - int(f[4])
    h, m = int(f[9]) - int(f[5]), int(f[10]) - int(f[6])
    if r > 0:
        shared.setdefault((f[0], f[1]), []).append(c / r)
    if h + m > 0:
        misses.setdefault((f[0], f[1]), []).append(m / (h + m) * 100)
if shared:
    print("\nRequests per change-stamp read (calls answered / reads) and read-cache misses (% of")
    print("lookups), medians; METRICS=1:\n")
    print("| workload | one instance | half | two instances | misses, one | misses, two |")
    print("|---|---:|---:|---:|---:|---:|")
    for w, label in names.items():
        cell = lambda d, n, fmt: fmt.format(statistics.median(d[(n, w)])) if d.get((n, w)) else "-"
        print(f"| {label} | {cell(shared, 'portico', '{:.1f}')} | {cell(shared, 'half', '{:.1f}')} | {cell(shared, 'two', '{:.1f}')} | "
              f"{cell(misses, 'portico', '{:.2f}%')} | {cell(misses, 'two', '{:.2f}%')} |")
detail = {}
for name, w, rnd, run, (kind, ticks) in tagged(detail_path):
    kinds = detail.setdefault((name, w), {}).setdefault(rnd, {})
    kinds[kind] = kinds.get(kind, 0) + int(ticks) / hz / run["requests"] * 1000
if detail:
    print("\nPostgreSQL CPU seconds per 1,000 requests by process kind (medians; PG_DETAIL=1):\n")
    kinds = sorted({k for per in detail.values() for rnd in per.values() for k in rnd})
    cols = [(n, w) for w in names for n in ("portico", "half", "two") if (n, w) in detail]
    print("| kind | " + " | ".join(f"{w} {'one' if n == 'portico' else n}" for n, w in cols) + " |")
    print("|---|" + "---:|" * len(cols))
    for k in kinds:
        cells = [statistics.median(r.get(k, 0) for r in detail[c].values()) for c in cols]
        if any(v >= 0.0005 for v in cells):
            print(f"| {k} | " + " | ".join(f"{v:.4f}" for v in cells) + " |")
stmts = {}
for name, w, rnd, run, (query, calls, ms) in tagged(statements_path):
    per = stmts.setdefault((name, w), {}).setdefault(rnd, {})
    c, t = per.get(query, (0, 0.0))
    per[query] = (c + int(calls), t + float(ms))
if stmts:
    print("\nStatements Portico ran per 1,000 requests, and their mean execution time in µs")
    print("(pg_stat_statements, medians over rounds; PG_DETAIL=1):\n")
    print("| workload | statement | one: per 1,000 (µs) | half: per 1,000 (µs) | two: per 1,000 (µs) |")
    print("|---|---|---:|---:|---:|")
    for w, label in names.items():
        queries = sorted({q for n in ("portico", "half", "two") for per in stmts.get((n, w), {}).values() for q in per})
        for q in queries:
            cells = []
            for n in ("portico", "half", "two"):
                rs = [(per.get(q, (0, 0.0)), measured(n, w, rnd)["requests"])
                      for rnd, per in stmts.get((n, w), {}).items()]
                if not rs:
                    cells.append("-")
                    continue
                per_k = statistics.median(c / req * 1000 for (c, _), req in rs)
                mean = statistics.median(t / c * 1000 for (c, t), _ in rs if c) if any(c for (c, _), _ in rs) else 0
                cells.append(f"{per_k:.1f} ({mean:.0f})")
            if any(not c.startswith("0.0 ") and c != "-" for c in cells):
                print(f"| {label} | `{q}` | " + " | ".join(cells) + " |")
waits = {}
for name, w, rnd, _, (event, n) in tagged(waits_path):
    per = waits.setdefault((name, w), {}).setdefault(rnd, {})
    per[event] = per.get(event, 0) + int(n)
if waits:
    print("\nPortico's active PostgreSQL backends by what they were doing, summed over samples every")
    print("20 ms (all rounds; PG_DETAIL=1). \"running\" is working; Lock:* and LWLock:* are waits:\n")
    print("| workload | one instance | half | two instances |")
    print("|---|---|---|---|")
    for w, label in names.items():
        cells = []
        for n in ("portico", "half", "two"):
            total = {}
            for per in waits.get((n, w), {}).values():
                for e, c in per.items():
                    total[e] = total.get(e, 0) + c
            cells.append(", ".join(f"{e} {c}" for e, c in sorted(total.items(), key=lambda x: -x[1])) or "-")
        print(f"| {label} | " + " | ".join(cells) + " |")
print("\npeak RSS (VmHWM): " + ", ".join(f"{k} {v:.1f} MiB" for k, v in rss.items()))
PY
