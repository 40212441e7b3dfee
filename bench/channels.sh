#!/usr/bin/env bash
# Channels under load (issue 42's figures), on a release build:
#  1. idle sockets, each in a channel: the server's resident memory per socket (the growth
#     from 1,000 to 2,000 sockets);
#  2. fan-out: MEMBERS sockets in one channel, one sender 20 ms apart, send-to-receive p50/p99
#     over every (message, member); on one instance (SQLite);
#  3. messages per second through one instance: 10 members, 10 senders sending as fast as the
#     server takes them;
#  4. with PG=1: the fan-out across two instances on one throwaway PostgreSQL, members spread
#     over both, the sender on the first.
# Usage: bench/channels.sh [MEMBERS] [MESSAGES]   (PG=1 needs Debian's postgresql)
# The server is pinned to CPU 0, the load to CPU 1.
set -euo pipefail
cd "$(dirname "$0")/.."
MEMBERS=${1:-1000}
MESSAGES=${2:-100}
PG_PORT=${PG_PORT:-55435}
cargo build --release -q -p portico-cli -p portico-bench-channels
BIN=${CARGO_TARGET_DIR:-$PWD/target}/release
work=$(mktemp -d /tmp/portico-bench-channels.XXXXXX)
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
config() { # database
  cat <<TOML
database = "$1"
[[channels]]
pattern = "bench:*"
join = "anyone"
send = "anyone"
[live]
frames_per_second = 100000
bytes_per_second = 100000000
max_members = 20000
[server]
max_connections = 20000
TOML
}
wait_up() { for _ in $(seq 1 100); do curl -sf -o /dev/null "http://127.0.0.1:$1/healthz" && return; sleep 0.1; done; echo "server on $1 did not start"; exit 1; }
rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }

echo "== one instance on SQLite"
config "sqlite:$work/ch.db" > "$work/ch.toml"
taskset -c 0 $BIN/portico serve --config "$work/ch.toml" --listen 127.0.0.1:3931 >/dev/null 2>&1 &
pid=$!
wait_up 3931
# The first 1,000 sockets warm the allocator and the runtime up; the second 1,000 are measured.
mkfifo "$work/hold1" "$work/hold2"
taskset -c 1 $BIN/channel-load idle 1000 http://127.0.0.1:3931 < "$work/hold1" > "$work/idle1.out" &
exec 3>"$work/hold1"
until grep -q ready "$work/idle1.out" 2>/dev/null; do sleep 0.2; done
sleep 2
before=$(rss $pid)
taskset -c 1 $BIN/channel-load idle 1000 http://127.0.0.1:3931 < "$work/hold2" > "$work/idle2.out" &
exec 4>"$work/hold2"
until grep -q ready "$work/idle2.out" 2>/dev/null; do sleep 0.2; done
sleep 2
after=$(rss $pid)
echo "memory: $before KiB with 1000 idle sockets, $after KiB with 2000: $(( (after - before) * 1024 / 1000 )) bytes per socket"
exec 3>&- 4>&-
sleep 1
taskset -c 1 $BIN/channel-load fanout "$MEMBERS" "$MESSAGES" http://127.0.0.1:3931
taskset -c 1 $BIN/channel-load rate 10 10 5 http://127.0.0.1:3931
kill $pid; wait $pid 2>/dev/null || true

if [ "${PG:-0}" = 1 ]; then
  [ -x "$pg_bin/initdb" ] || { echo "PostgreSQL is not installed (apt-get install postgresql)"; exit 1; }
  echo "== two instances on one PostgreSQL, members on both, the sender on A"
  (cd "$work" && "${as_pg[@]}" "$pg_bin/initdb" -D "$work/pg" -U postgres -A trust -E UTF8 --no-locale >/dev/null)
  (cd "$work" && "${as_pg[@]}" "$pg_bin/pg_ctl" -D "$work/pg" -l "$work/pg.log" -w \
    -o "-p $PG_PORT -k $work -c listen_addresses=127.0.0.1" start >/dev/null)
  "$pg_bin/psql" -h "$work" -p "$PG_PORT" -U postgres -q -c "CREATE DATABASE portico"
  config "postgres://postgres@127.0.0.1:$PG_PORT/portico" > "$work/pg.toml"
  taskset -c 0 $BIN/portico serve --config "$work/pg.toml" --listen 127.0.0.1:3932 >/dev/null 2>&1 &
  taskset -c 0 $BIN/portico serve --config "$work/pg.toml" --listen 127.0.0.1:3933 >/dev/null 2>&1 &
  wait_up 3932; wait_up 3933
  taskset -c 1 $BIN/channel-load fanout "$MEMBERS" "$MESSAGES" http://127.0.0.1:3932 http://127.0.0.1:3933
fi
