#!/usr/bin/env bash
# Memory of `rpcbench subscribe` holding many subscriptions on one core: RSS at 1 minute and at
# the end (the issue's goal: within 5 MiB of each other), notifications, gaps and CPU.
# `rpcbench serve --chain ethereum --block-time 1s` on core 0 (a free port of 127.0.0.1), the
# subscriber on core 1. Usage: bench/subscribe_memory.sh [BINARY]   (SUBS=10000 PER_SOCKET=10 SECS=600)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${1:-target/release/rpcbench}")
SUBS=${SUBS:-10000}; PER_SOCKET=${PER_SOCKET:-10}; SECS=${SECS:-600}
WORK=$(mktemp -d /tmp/rpcbench-subscribe-memory.XXXXXX)
taskset -c 0 "$BIN" serve --chain ethereum --block-time 1s --listen 127.0.0.1:0 --threads 1 >"$WORK/serve.out" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do grep -q listening "$WORK/serve.out" && break; sleep 0.05; done
URL=$(grep -o 'http://[0-9.:]*/' "$WORK/serve.out" | head -1 | sed 's/^http/ws/')
taskset -c 1 "$BIN" subscribe "$URL" --sub newHeads --subscribers "$SUBS" --subs-per-socket "$PER_SOCKET" \
  -d "${SECS}s" -f json >"$WORK/report.json" 2>"$WORK/subscribe.err" &
SUB=$!
START=$(date +%s)
rss() { awk '/^VmRSS/{print $2}' "/proc/$SUB/status" 2>/dev/null || echo nan; }
ticks() { awk '{print $14 + $15}' "/proc/$SUB/stat" 2>/dev/null || echo 0; }
sleep 60; RSS1=$(rss)
LAST=$RSS1; T=0
while kill -0 "$SUB" 2>/dev/null; do
  R=$(rss); [[ $R != nan ]] && LAST=$R; T2=$(ticks); [[ $T2 != 0 ]] && T=$T2
  sleep 2
done
wait "$SUB" || true
END=$(date +%s)
echo "command: taskset -c 1 $BIN subscribe $URL --sub newHeads --subscribers $SUBS --subs-per-socket $PER_SOCKET -d ${SECS}s -f json"
echo "rss_at_60s_kb=$RSS1 rss_at_end_kb=$LAST (last sample before exit, $((END - START)) s)"
echo "cpu_s=$(awk -v t="$T" -v hz="$(getconf CLK_TCK)" 'BEGIN{printf "%.2f", t/hz}')"
python3 - "$WORK/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("subscribed", r["subscribed"], "of", r["subscriptions"], "active at end", r["active_at_end"])
print("notifications", r["notifications"], "(%.0f/s)" % r["notifications_per_sec"], "gaps", r["gaps"], "duplicates", r["duplicates"])
print("fan-out lag p50/p99 us", r["lag"]["percentiles"]["p50"], r["lag"]["percentiles"]["p99"])
PY
