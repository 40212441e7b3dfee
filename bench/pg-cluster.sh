# Sourced by the load scripts: a throwaway PostgreSQL cluster in a fresh work directory.
# Before sourcing, set PG_PORT (and PG_OPTS: more `postgres` options, e.g. "-c name=value").
# After it: `work` (the directory, removed on exit with the cluster), `pg_bin`, and a database
# `portico` at postgres://postgres@127.0.0.1:$PG_PORT/portico.
# `$1` names the work directory (/tmp/portico-bench-$1.XXXXXX).
pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
[ -x "$pg_bin/initdb" ] || { echo "PostgreSQL is not installed (apt-get install postgresql)"; exit 1; }
work=$(mktemp -d "/tmp/portico-bench-$1.XXXXXX")
chmod 755 "$work"
as_pg=()
if [ "$(id -u)" = 0 ]; then chown nobody "$work"; as_pg=(runuser -u nobody --); fi
cleanup() {
  kill $(jobs -p) 2>/dev/null || true
  (cd / && "${as_pg[@]}" "$pg_bin/pg_ctl" -D "$work/pg" -m fast stop >/dev/null 2>&1) || true
  rm -rf "$work"
}
trap cleanup EXIT
(cd "$work" && "${as_pg[@]}" "$pg_bin/initdb" -D "$work/pg" -U postgres -A trust -E UTF8 --no-locale >/dev/null)
(cd "$work" && "${as_pg[@]}" "$pg_bin/pg_ctl" -D "$work/pg" -l "$work/pg.log" -w \
  -o "-p $PG_PORT -k $work -c listen_addresses=127.0.0.1 ${PG_OPTS:-}" start >/dev/null)
"$pg_bin/psql" -h "$work" -p "$PG_PORT" -U postgres -q -c "CREATE DATABASE portico"
