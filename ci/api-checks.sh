#!/usr/bin/env bash
# API checks on the real `portico` binary (run by .ci/run after the test suite):
#  1. the OpenAPI document validates (openapi-spec-validator) for examples/portico.toml and for
#     ci/every-key.toml (every config key);
#  2. schemathesis fuzzes the server running each of them from its document (coverage and
#     fuzzing phases, a bounded number of examples per operation): no 5xx, no response the
#     document does not allow, no panic in the server's log.
# The Python tools are installed with pip into a virtualenv in cargo's target directory (wherever
# CARGO_TARGET_DIR or the cargo config puts it, as cargo itself reports); when they cannot be
# installed the script fails, it never skips.
#
# Environment: API_CHECKS_EXAMPLES (examples per operation, default 50), API_CHECKS_SEED
# (schemathesis seed, default 1), API_CHECKS_VENV (virtualenv path).
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "api-checks: FAILED: $*" >&2; exit 1; }

command -v python3 >/dev/null || fail "python3 is missing (apt-get install python3 python3-venv)"
# Where cargo builds: CARGO_TARGET_DIR, `build.target-dir` in a cargo config, or ./target.
target_dir="$(cargo metadata --format-version 1 --no-deps \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')" \
  || fail "cargo metadata could not name the target directory"

examples="${API_CHECKS_EXAMPLES:-50}"
seed="${API_CHECKS_SEED:-1}"
venv="${API_CHECKS_VENV:-$target_dir/api-checks-venv}"
if [ ! -x "$venv/bin/schemathesis" ] || [ ! -x "$venv/bin/openapi-spec-validator" ]; then
  echo "== installing openapi-spec-validator and schemathesis into $venv"
  python3 -m venv "$venv" || fail "cannot create a virtualenv (apt-get install python3-venv)"
  "$venv/bin/pip" install -q openapi-spec-validator schemathesis \
    || fail "pip could not install openapi-spec-validator and schemathesis"
fi
"$venv/bin/openapi-spec-validator" --help >/dev/null || fail "openapi-spec-validator does not run"
"$venv/bin/schemathesis" --version || fail "schemathesis does not run"

echo "== building portico"
cargo build -q -p portico-cli --bin portico
portico="$target_dir/debug/portico"

# ci/every-key.toml names this variable for its OpenID Connect provider's client secret.
export PORTICO_CI_OIDC_SECRET=ci-secret
# ci/every-key.toml keeps its backups in a bucket: its endpoint is a port where nothing listens
# (the scheduled backup fails and is logged; nothing here depends on it).
export AWS_ENDPOINT=http://127.0.0.1:9 AWS_ALLOW_HTTP=true

work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

for config in examples/portico.toml ci/every-key.toml; do
  echo "== openapi-spec-validator: $config"
  "$portico" openapi --config "$config" > "$work/openapi.json" || fail "portico openapi --config $config"
  "$venv/bin/openapi-spec-validator" "$work/openapi.json" || fail "the document of $config does not validate"
done

# fuzz NAME CONFIG: serve CONFIG (a prepared copy) on a fresh database and fuzz it as a logged-in
# editor and admin.
fuzz() {
  local name="$1" config="$2" dir="$work/$1"
  echo "== schemathesis against portico serve ($name, $examples examples per operation, seed $seed)"
  mkdir -p "$dir"
  local db="sqlite:$dir/portico.db"
  "$portico" users add --database "$db" --username fuzz --password fuzz-password-1 \
    --role editor --role admin --role writer >/dev/null
  (cd "$dir" && exec "$portico" serve --config "$config" --database "$db" --listen 127.0.0.1:0 \
    > "$dir/stdout" 2> "$dir/server.log") &
  server_pid=$!
  local base=""
  for _ in $(seq 1 100); do
    base="$(sed -n 's|^listening on \(http://[^ ]*\)$|\1|p' "$dir/stdout" | head -n1)"
    [ -n "$base" ] && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$dir/server.log" >&2; fail "the server did not start ($name)"; }
    sleep 0.1
  done
  [ -n "$base" ] || fail "the server did not say where it listens ($name)"
  local token
  token="$(curl -sf -X POST "$base/api/v1/login" -H 'content-type: application/json' \
    -d '{"username":"fuzz","password":"fuzz-password-1"}' \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["authToken"])')" \
    || fail "cannot log in to the fuzzed server ($name)"
  local started
  started=$(date +%s)
  # Logout would end the fuzzer's own session; everything else is fuzzed.
  "$venv/bin/schemathesis" run "$base/openapi.json" \
    --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance \
    --phases examples,coverage,fuzzing \
    --max-examples "$examples" \
    --seed "$seed" \
    --exclude-path-regex 'logout$' \
    --header "Authorization: Bearer $token" \
    --request-timeout 10 \
    --no-color \
    || { tail -n 50 "$dir/server.log" >&2; fail "schemathesis found responses the document does not allow ($name, above)"; }
  echo "== schemathesis ($name) took $(( $(date +%s) - started )) s"
  if grep -q "panicked" "$dir/server.log"; then
    grep -n "panicked" "$dir/server.log" >&2
    fail "the server panicked while fuzzed ($name)"
  fi
  kill "$server_pid"; wait "$server_pid" 2>/dev/null || true
  server_pid=""
}

# The example as it is, but without the random 0.5-1 s delay before each 401/403 (the fuzzer
# meets thousands of them; the delay only makes the run slow).
sed 's/^use_default_auth = true$/&\nauth_failure_delay_ms = 0/' examples/portico.toml > "$work/example.toml"
grep -q '^auth_failure_delay_ms = 0$' "$work/example.toml" || fail "could not turn the auth failure delay off"
fuzz example "$work/example.toml"
# Every key, with the metrics listener on a free port, on SQLite (`--database`): without the
# read replicas, which only a PostgreSQL database has (`portico openapi` reads the whole file above).
sed -e 's/^listen = "127.0.0.1:9464"$/listen = "127.0.0.1:0"/' -e '/^database_replicas = /d' \
  ci/every-key.toml > "$work/every-key.toml"
grep -q '^database_replicas' "$work/every-key.toml" && fail "could not leave the replicas out"
fuzz every-key "$work/every-key.toml"
echo "== api checks passed"
