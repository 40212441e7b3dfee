#!/usr/bin/env bash
# Scale-out on one machine: PostgreSQL with a streaming read replica, several `portico serve`
# instances on its database (reading from the replica), and nginx balancing requests across
# them. Everything lives in a temp dir and stops on exit.
#
#   examples/scale-out/run.sh              # run the demo, then keep serving until Ctrl-C
#   DEMO_ONLY=1 examples/scale-out/run.sh  # run the demo and stop
#
# Needs Debian's postgresql and nginx packages (apt-get install -y postgresql nginx).
# Settings: INSTANCES (2), PORT (8080, nginx), PORTICO (path of the binary; default: build it).
set -euo pipefail
cd "$(dirname "$0")/../.."

INSTANCES=${INSTANCES:-2}
PORT=${PORT:-8080}
PG_PORT=${PG_PORT:-55432}
REPLICA_PORT=$((PG_PORT + 1))

pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$pg_bin" ] || [ ! -x "$pg_bin/initdb" ]; then
  echo "PostgreSQL is not installed: apt-get install -y postgresql" >&2; exit 1
fi
command -v nginx >/dev/null || { echo "nginx is not installed: apt-get install -y nginx" >&2; exit 1; }
if [ -z "${PORTICO:-}" ]; then
  cargo build -q -p portico-cli
  PORTICO=$PWD/target/debug/portico
fi

work=$(mktemp -d /tmp/portico-scale-out.XXXXXX)
chmod 755 "$work"
# initdb refuses to run as root: then the cluster belongs to `nobody`.
as_pg=()
if [ "$(id -u)" = 0 ]; then chown nobody "$work"; as_pg=(runuser -u nobody --); fi
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
  (cd / && "${as_pg[@]}" "$pg_bin/pg_ctl" -D "$work/replica" -m fast stop >/dev/null 2>&1) || true
  (cd / && "${as_pg[@]}" "$pg_bin/pg_ctl" -D "$work/pg" -m fast stop >/dev/null 2>&1) || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 0' INT TERM

echo "== PostgreSQL on 127.0.0.1:$PG_PORT"
(cd "$work" && "${as_pg[@]}" "$pg_bin/initdb" -D "$work/pg" -U postgres -A trust -E UTF8 --no-locale >"$work/initdb.log")
(cd "$work" && "${as_pg[@]}" "$pg_bin/pg_ctl" -D "$work/pg" -l "$work/pg.log" -w \
  -o "-p $PG_PORT -k $work -c listen_addresses=127.0.0.1" start >/dev/null)
"$pg_bin/psql" -h "$work" -p "$PG_PORT" -U postgres -q -c "CREATE DATABASE portico"
DB="postgres://postgres@127.0.0.1:$PG_PORT/portico"

echo "== read replica on 127.0.0.1:$REPLICA_PORT (pg_basebackup -R: a hot standby streaming from the primary)"
(cd "$work" && "${as_pg[@]}" "$pg_bin/pg_basebackup" -D "$work/replica" -h "$work" -p "$PG_PORT" \
  -U postgres -R -X stream -c fast)
(cd "$work" && "${as_pg[@]}" "$pg_bin/pg_ctl" -D "$work/replica" -l "$work/replica.log" -w \
  -o "-p $REPLICA_PORT -k $work -c listen_addresses=127.0.0.1" start >/dev/null)
REPLICA="postgres://postgres@127.0.0.1:$REPLICA_PORT/portico"

cat > "$work/portico.toml" <<TOML
database = "$DB"
# Reads go to the replica; each caller reads its own writes (from the primary until the
# replica has replayed them); a replica more than 1000 ms behind is skipped.
database_replicas = ["$REPLICA"]
replica_max_lag_ms = 1000

[[api]]
use_default_auth = true

[[api.collection]]
name = "notes"
auth_required = true
TOML
"$PORTICO" check --config "$work/portico.toml"
"$PORTICO" users add --database "$DB" --username ann --password ann-password >/dev/null

echo "== $INSTANCES portico instances"
upstreams=""
for i in $(seq 1 "$INSTANCES"); do
  port=$((PORT + i))
  "$PORTICO" serve --config "$work/portico.toml" --listen "127.0.0.1:$port" \
    >"$work/portico-$i.out" 2>"$work/portico-$i.log" &
  pids+=($!)
  upstreams+="    server 127.0.0.1:$port;"$'\n'
  echo "instance $i on 127.0.0.1:$port"
done

cat > "$work/nginx.conf" <<NGINX
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
daemon off;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path $work/nginx-body;
  proxy_temp_path $work/nginx-proxy;
  fastcgi_temp_path $work/nginx-fastcgi;
  uwsgi_temp_path $work/nginx-uwsgi;
  scgi_temp_path $work/nginx-scgi;
  upstream portico {
$upstreams  }
  server {
    listen 127.0.0.1:$PORT;
    location / {
      proxy_pass http://portico;
      proxy_set_header Host \$host;
      proxy_set_header X-Forwarded-For \$remote_addr;
      # Which instance answered, to see the balancing.
      add_header X-Upstream \$upstream_addr always;
    }
  }
}
NGINX
nginx -c "$work/nginx.conf" -p "$work" &
pids+=($!)
echo "== nginx on http://127.0.0.1:$PORT, round robin over the instances"
# Ready when every instance answers through nginx (a 404 from Portico, not a 502 from nginx).
for _ in $(seq 1 100); do
  ready=0
  for _ in $(seq 1 "$INSTANCES"); do
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/api/nothing" || true)
    [ "$code" = 404 ] && ready=$((ready + 1))
  done
  [ "$ready" = "$INSTANCES" ] && break
  sleep 0.1
done

echo "== demo"
login=$(curl -s "http://127.0.0.1:$PORT/api/login" -H 'Content-Type: application/json' \
  -d '{"username":"ann","password":"ann-password"}')
echo "login through nginx: $login"
token=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["data"]["authToken"])' "$login")
for i in 1 2 3 4; do
  curl -s -D "$work/headers" -o "$work/body" "http://127.0.0.1:$PORT/api/notes" \
    -H "X-Auth-Token: $token" -H 'Content-Type: application/json' -d "{\"text\":\"note $i\"}"
  echo "POST note $i -> answered by $(awk 'tolower($1)=="x-upstream:" {print $2}' "$work/headers" | tr -d '\r'): $(cat "$work/body")"
done
curl -s -D "$work/headers" -o "$work/body" "http://127.0.0.1:$PORT/api/notes" -H "X-Auth-Token: $token"
echo "GET notes -> answered by $(awk 'tolower($1)=="x-upstream:" {print $2}' "$work/headers" | tr -d '\r'): $(cat "$work/body")"
echo "readyz: $(curl -s "http://127.0.0.1:$PORT/readyz")"
curl -s -o /dev/null "http://127.0.0.1:$PORT/api/logout" -X POST -H "X-Auth-Token: $token"
for i in 1 2; do
  code=$(curl -s -D "$work/headers" -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/api/notes" -H "X-Auth-Token: $token")
  echo "after logout, GET notes -> $code from $(awk 'tolower($1)=="x-upstream:" {print $2}' "$work/headers" | tr -d '\r')"
done

if [ -n "${DEMO_ONLY:-}" ]; then exit 0; fi
echo "== serving on http://127.0.0.1:$PORT (user ann / ann-password); Ctrl-C stops everything"
wait
