#!/usr/bin/env bash
# The whole lecture hall on one machine, on loopback (docs/classroom.md, "A lecture hall"): a PostgreSQL server (the
# lab's registry), a Ray head (where every run trains), two app processes that share nothing but those and the runs
# folder, and Caddy in front. The same pieces a department spreads over several machines; every setting is an
# environment variable. Runs in the foreground; Ctrl-C (or SIGTERM) stops everything it started, and only that.
#
#   source .venv/bin/activate && pip install -r requirements-hall.txt && examples/hall/start.sh
#
# Settings (all optional):
#   HALL_DIR        where the hall keeps its data and logs (default: a new folder under /tmp)
#   HALL_LISTEN     where students connect, ADDRESS:PORT (default 127.0.0.1:8080: this machine only;
#                   0.0.0.0:8080: every IPv4 interface); any host name or address that reaches it gets the app
#   HALL_APP_PORTS  the app processes' ports (default "8501 8502"; one process per core you give to pages)
#   HALL_PG_PORT    PostgreSQL's port (default 55432; on 127.0.0.1 only)
#   HALL_RAY_PORT   the Ray head's port (default 6379); Ray's other ports are pinned after it: RAY_PORT+1 the node
#                   manager, +2 the object manager, +3 the runtime-env agent, +4 and +5 the dashboard agent, +6 the
#                   metrics export, +10 onwards the workers (HALL_RAY_WORKER_PORTS of them). Ray listens on every
#                   interface whatever --node-ip-address says: keep these ports private with a firewall
#                   (docs/classroom.md)
#   HALL_RAY_WORKER_PORTS  how many ports Ray's worker processes may use, from HALL_RAY_PORT+10 (default 50: +10 to
#                   +59); each worker process holds one, so give at least HALL_RAY_CPUS plus a few: a narrower range
#                   is a smaller hole in the firewall
#   HALL_RAY_CPUS   CPUs the Ray head offers to runs (default: all cores)
#   PYTHON          the Python with llmviz's requirements and the hall's extras (default: python3)
# What the app processes get: LLMVIZ_RAY_ADDRESS, LLMVIZ_DATABASE_URL, LLMVIZ_RUNS_DIR (shared by both) and one
# STREAMLIT_SERVER_COOKIE_SECRET; any other LLMVIZ_* variable set here passes through (docs/configuration.md).
set -euo pipefail
cd "$(dirname "$0")/../.."

HALL_DIR=${HALL_DIR:-$(mktemp -d /tmp/llmviz-hall.XXXXXX)}
HALL_LISTEN=${HALL_LISTEN:-127.0.0.1:8080}
HALL_APP_PORTS=${HALL_APP_PORTS:-"8501 8502"}
HALL_PG_PORT=${HALL_PG_PORT:-55432}
HALL_RAY_PORT=${HALL_RAY_PORT:-6379}
HALL_RAY_CPUS=${HALL_RAY_CPUS:-$(nproc)}
HALL_RAY_WORKER_PORTS=${HALL_RAY_WORKER_PORTS:-50}
case "$HALL_RAY_WORKER_PORTS" in
  "" | *[!0-9]* | 0) echo "HALL_RAY_WORKER_PORTS must be a positive whole number, not '$HALL_RAY_WORKER_PORTS'" >&2; exit 2 ;;
esac
PYTHON=${PYTHON:-python3}
RAY=$(dirname "$(command -v "$PYTHON")")/ray
[ -x "$RAY" ] || RAY=ray
mkdir -p "$HALL_DIR/runs" "$HALL_DIR/logs"
chmod 755 "$HALL_DIR"

pids=()
ray_head=""
as_pg=()
# PostgreSQL's programs: Debian's folder, else pg_config's --bindir, else the PATH (Homebrew, Fedora, a source build)
pg_bin=$(compgen -G "/usr/lib/postgresql/*/bin/initdb" | sort -V | tail -1 || true)
pg_bin=${pg_bin:+$(dirname "$pg_bin")}
if [ -z "$pg_bin" ] && command -v pg_config >/dev/null && [ -x "$(pg_config --bindir)/initdb" ]; then
  pg_bin=$(pg_config --bindir)
fi
if [ -z "$pg_bin" ] && command -v initdb >/dev/null; then pg_bin=$(dirname "$(command -v initdb)"); fi
if [ -z "$pg_bin" ]; then
  echo "PostgreSQL's initdb was found nowhere (Debian's /usr/lib/postgresql, pg_config --bindir, PATH): install it" >&2
  exit 1
fi
listen_host=${HALL_LISTEN%:*}
listen_port=${HALL_LISTEN##*:}
probe_host=$listen_host  # where this script asks, as a student's browser: by loopback when it listens everywhere
case "$listen_host" in 0.0.0.0 | "" | "[::]" | "::") probe_host=127.0.0.1 ;; esac
stop_hall() {
  trap - EXIT INT TERM
  echo "stopping the hall" >&2
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done  # the app processes (Ray's drivers) first
  if [ -n "$ray_head" ]; then
    # `ray start --block` alone: its own shutdown stops the node's raylet before the head's GCS (the whole process
    # group at once killed the GCS while the raylet drained through it: ~35 s and a traceback); what is left of its
    # process group (only ours) after 30 s is killed
    kill -TERM "$ray_head" 2>/dev/null || true
    (sleep 30 && kill -KILL -- "-$ray_head" 2>/dev/null) &
    deadline=$!
    wait "$ray_head" 2>/dev/null || true
    kill "$deadline" 2>/dev/null || true
    kill -KILL -- "-$ray_head" 2>/dev/null || true  # any worker left behind
  fi
  "${as_pg[@]}" "$pg_bin/pg_ctl" -D "$HALL_DIR/pg" -m fast -w stop >/dev/null 2>&1 || true
  wait 2>/dev/null || true
}
trap stop_hall EXIT
trap 'exit 0' INT TERM

answers() {  # answers URL [HOST]: true once URL answers with a body (with HOST as its Host header, as a browser)
  "$PYTHON" -c "
import sys, urllib.request
request = urllib.request.Request(sys.argv[1], headers={'Host': sys.argv[2]} if len(sys.argv) > 2 else {})
with urllib.request.urlopen(request, timeout=2) as answer:
    sys.exit(0 if answer.read().strip() else 1)" "$@" 2>/dev/null
}
wait_for() {  # wait_for WHAT URL [HOST]: up to 3 minutes
  for _ in $(seq 360); do answers "${@:2}" && return 0; sleep 0.5; done
  echo "$1 did not answer at $2 within 3 minutes (logs: $HALL_DIR/logs)" >&2
  exit 1
}

# 1. PostgreSQL: a cluster of the hall's own (as the postgres user when this is root, which initdb refuses)
if [ "$(id -u)" -eq 0 ]; then
  as_pg=(runuser -u postgres --)
  if ! runuser -u postgres -- test -x "$HALL_DIR"; then
    echo "the postgres user cannot reach $HALL_DIR: choose a HALL_DIR every user may enter (e.g. under /tmp)" >&2
    exit 1
  fi
fi
if [ ! -d "$HALL_DIR/pg" ]; then
  mkdir -p "$HALL_DIR/pg"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$HALL_DIR/pg"
  "${as_pg[@]}" "$pg_bin/initdb" -D "$HALL_DIR/pg" -U postgres -A trust >/dev/null
fi
"${as_pg[@]}" "$pg_bin/pg_ctl" -D "$HALL_DIR/pg" -l "$HALL_DIR/pg/server.log" -w start \
  -o "-c listen_addresses=127.0.0.1 -p $HALL_PG_PORT -k $HALL_DIR/pg" >/dev/null
"${as_pg[@]}" "$pg_bin/createdb" -h 127.0.0.1 -p "$HALL_PG_PORT" -U postgres llmviz 2>/dev/null || true
export LLMVIZ_DATABASE_URL="postgresql+psycopg://postgres@127.0.0.1:$HALL_PG_PORT/llmviz"

# 2. The Ray head (no dashboard, a small object store): its workers import llmviz from this repository
PYTHONPATH=$PWD RAY_USAGE_STATS_ENABLED=0 setsid "$RAY" start --head --block --port="$HALL_RAY_PORT" \
  --node-ip-address=127.0.0.1 --include-dashboard=false --object-store-memory=200000000 \
  --node-manager-port=$((HALL_RAY_PORT + 1)) --object-manager-port=$((HALL_RAY_PORT + 2)) \
  --runtime-env-agent-port=$((HALL_RAY_PORT + 3)) --dashboard-agent-grpc-port=$((HALL_RAY_PORT + 4)) \
  --dashboard-agent-listen-port=$((HALL_RAY_PORT + 5)) --metrics-export-port=$((HALL_RAY_PORT + 6)) \
  --min-worker-port=$((HALL_RAY_PORT + 10)) --max-worker-port=$((HALL_RAY_PORT + 9 + HALL_RAY_WORKER_PORTS)) \
  --num-cpus="$HALL_RAY_CPUS" --temp-dir="$HALL_DIR/ray" --disable-usage-stats >"$HALL_DIR/logs/ray.log" 2>&1 &
ray_head=$!
for _ in $(seq 240); do
  "$PYTHON" -c "import socket; socket.create_connection(('127.0.0.1', $HALL_RAY_PORT), timeout=1)" 2>/dev/null && break
  kill -0 "$ray_head" 2>/dev/null || { echo "the Ray head did not start (logs: $HALL_DIR/logs/ray.log)" >&2; exit 1; }
  sleep 0.5
done
export LLMVIZ_RAY_ADDRESS="127.0.0.1:$HALL_RAY_PORT"

# 3. The app processes: the same settings, the same cookie secret, the same runs folder
export LLMVIZ_RUNS_DIR="$HALL_DIR/runs"
export STREAMLIT_SERVER_COOKIE_SECRET=${STREAMLIT_SERVER_COOKIE_SECRET:-$("$PYTHON" -c 'import secrets; print(secrets.token_hex(32))')}
backends=""
for port in $HALL_APP_PORTS; do
  "$PYTHON" -m streamlit run app.py --server.address 127.0.0.1 --server.port "$port" --server.headless true \
    --server.fileWatcherType none --browser.gatherUsageStats false --server.scriptHealthCheckEnabled true \
    >"$HALL_DIR/logs/app-$port.log" 2>&1 &
  pids+=($!)
  backends="$backends 127.0.0.1:$port"
done
for port in $HALL_APP_PORTS; do wait_for "the app process on port $port" "http://127.0.0.1:$port/_stcore/health"; done
# each process runs its first page once (Streamlit's script health check: torch, Plotly and the shipped GPT loaded)
# before the hall says it answers, so that no student waits for the start (issue 71: 30-59 s for the first Home)
warmers=()
for port in $HALL_APP_PORTS; do
  "$PYTHON" -c "
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=600) as answer:
    sys.exit(0 if answer.status == 200 else 1)" "http://127.0.0.1:$port/_stcore/script-health-check" 2>/dev/null &
  warmers+=($!)
done
for warmer in "${warmers[@]}"; do
  wait "$warmer" || echo "an app process could not run its first page ahead (logs: $HALL_DIR/logs)" >&2
done

# 4. Caddy in front
STREAMLIT_STATIC=$("$PYTHON" -c "import streamlit, os; print(os.path.join(os.path.dirname(streamlit.__file__), 'static'))") \
  LLMVIZ_BIND="$listen_host" LLMVIZ_PORT="$listen_port" LLMVIZ_BACKENDS="${backends# }" \
  caddy run --config examples/hall/Caddyfile --adapter caddyfile >"$HALL_DIR/logs/caddy.log" 2>&1 &
pids+=($!)
wait_for "Caddy" "http://$probe_host:$listen_port/_stcore/health"
# and the page itself, as a browser that came by name asks for it (Host: localhost): a body, not an empty answer
wait_for "Caddy's page" "http://$probe_host:$listen_port/" "localhost:$listen_port"

echo "The hall answers on http://$HALL_LISTEN (asked as a browser does, at http://$probe_host:$listen_port; data and logs: $HALL_DIR)"
wait -n "${pids[@]}" "$ray_head"  # until one of them ends (or Ctrl-C): then everything stops
echo "a part of the hall ended: see $HALL_DIR/logs" >&2
exit 1
