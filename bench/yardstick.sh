# Sourced by the load scripts that measure against the yardstick (load.sh, postgres.sh): finds
# the yardstick directory and the tools, and sets the settings both share. Before sourcing, set
# `repo` (the repository) and `needs` (the yardstick files this script uses, besides wrk/ and
# rust/Cargo.toml).
YARDSTICK=${YARDSTICK:-$repo/../shared/bench}
for f in $needs wrk rust/Cargo.toml; do
  if [ ! -e "$YARDSTICK/$f" ]; then
    echo "no yardstick directory at '$YARDSTICK' (it needs $needs wrk/ rust/Cargo.toml; $f is missing);" >&2
    echo "set YARDSTICK=/path/to/it (see bench/README.md)" >&2
    exit 2
  fi
done
YARDSTICK=$(cd "$YARDSTICK" && pwd)
for tool in wrk taskset python3 curl; do
  command -v "$tool" >/dev/null || { echo "$tool is not installed" >&2; exit 2; }
done
ITEMS=${ITEMS:-10000}
SECS=${SECS:-10}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-32}
WARMUP=${WARMUP:-2}
PROFILE=${PROFILE:-release}
PEER_TARGET=${PEER_TARGET:-/tmp/portico-bench-target}

# measure_with SERVER WORKLOAD ROUND URL SCRIPT [ENV...]: a warm-up of WARMUP s, then one wrk run
# of SECS s against URL with the yardstick's wrk/SCRIPT (ENV its environment), wrk on CPU 1; the
# RESULT line is appended to `results` as "SERVER WORKLOAD ROUND RESULT...".
measure_with() {
  local name=$1 w=$2 round=$3 url=$4 script=$5
  shift 5
  if [ "$WARMUP" != 0 ]; then
    env "$@" taskset -c 1 wrk -t1 -c"$CONNS" -d"${WARMUP}s" -s "$YARDSTICK/wrk/$script" "$url" >/dev/null 2>&1
  fi
  local line
  line=$(env "$@" taskset -c 1 wrk -t1 -c"$CONNS" --timeout 10s -d"${SECS}s" --latency \
    -s "$YARDSTICK/wrk/$script" "$url" 2>&1 | grep '^RESULT' || true)
  [ -n "$line" ] || { echo "wrk gave no RESULT line for $name $w" >&2; exit 1; }
  echo "$name $w $round $line" >> "$results"
  echo "  $name $w round $round: $line" >&2
}

# workload NAME PORT [SERVER]: sets `script` (in the yardstick's wrk/), `url` and `env` (the script's
# environment, an array) of one workload against the server on PORT; uses `data` and `token`.
workload() {
  script=random_get.lua; url=http://127.0.0.1:$2
  env=(IDS_FILE="$data/ids.txt" PATH_PREFIX=/api/items/)
  case $1 in
    get) ;;
    auth-get) env=(IDS_FILE="$data/ids.txt" PATH_PREFIX=/api/secure/items/ TOKEN="$token") ;;
    list) script=fixed.lua; env=(); url=$url/api/items?limit=20 ;;
    # Sorted lists (declare the indexes on Portico's side): the 20 highest scores with their
    # total, and the same among one city. The peer takes the city as a parameter (NAME "peer").
    top) script=fixed.lua; env=(); url="$url/api/items?limit=20&sort=-score" ;;
    city) script=fixed.lua; env=()
      case ${3:-} in
        peer*) url="$url/api/items?limit=20&sort=-score&city=Oslo" ;;
        *) url="$url/api/items?limit=20&sort=-score&where=%7B%22city%22%3A%22Oslo%22%7D" ;;
      esac ;;
    insert) script=fixed.lua; url=$url/api/items
      env=(METHOD=POST BODY='{"name":"New item","email":"new@example.com","age":33,"active":true,"city":"Oslo","score":12.5}') ;;
  esac
}
