#!/usr/bin/env bash
# CPU per update of `rpcbench subscribe grpc://` holding many Geyser subscriptions against the
# mock feed (`rpcbench serve --chain solana --grpc`, a free port of 127.0.0.1, on core 0; the
# subscriber on core 1): updates received, CPU seconds, CPU per update, and the subscribers one
# core would hold at this feed's rate; with the report's lag growth (does the feed keep up),
# stalls, gaps and disconnects by cause. Bounded: SECS seconds, SUBS subscriptions per kind.
# Memory: the subscriber's RSS once every subscription is open (RSS_AT seconds in) and at the
# end (flat memory holds many subscriptions without growth), and every RSS_EVERY seconds
# (default 10) between, to show whether it is flat. The floor: with FLOOR (default
# target/release/geyser-decode-floor, built with `cargo build --release -p rpcbench --features
# bench-floor --bin geyser-decode-floor`), the same subscriptions by a plain tonic consumer of
# the same proto crate doing nothing but decode, on the same core, against the same feed.
# Usage: bench/geyser.sh [BINARY]   (SUBS=200 PER_CONN=50 SECS=20 SLOT_TIME=24ms RSS_AT=3
#                                    KINDS="geyser-stages geyser-tx")
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${1:-target/release/rpcbench}")
SUBS=${SUBS:-200}; PER_CONN=${PER_CONN:-50}; SECS=${SECS:-20}; SLOT_TIME=${SLOT_TIME:-24ms}
KINDS=${KINDS:-"geyser-stages geyser-tx"}
RSS_AT=${RSS_AT:-3}
RSS_EVERY=${RSS_EVERY:-10}
FLOOR=${FLOOR:-target/release/geyser-decode-floor}
WORK=$(mktemp -d /tmp/rpcbench-geyser-bench.XXXXXX)
taskset -c 0 "$BIN" serve --chain solana --listen 127.0.0.1:0 --grpc --grpc-listen 127.0.0.1:0 \
  --slot-time "$SLOT_TIME" --grpc-queue 65536 >"$WORK/serve.out" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$WORK"' EXIT
for _ in $(seq 1 200); do grep -q "Geyser gRPC feed listening" "$WORK/serve.out" && break; sleep 0.05; done
URL=$(grep -o 'grpc://[0-9.:]*' "$WORK/serve.out" | head -1)
SUB_FLAGS=()
for kind in $KINDS; do SUB_FLAGS+=(--sub "$kind"); done
taskset -c 1 "$BIN" subscribe "$URL" "${SUB_FLAGS[@]}" --subscribers "$SUBS" --subs-per-connection "$PER_CONN" \
  -d "${SECS}s" -f json --no-tui >"$WORK/report.json" 2>"$WORK/subscribe.err" &
SUB=$!
ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
T=0; RSS_START=0; RSS_END=0; STARTED=$(date +%s.%N); SAMPLES=(); NEXT_SAMPLE=$RSS_EVERY
while kill -0 "$SUB" 2>/dev/null; do
  T2=$(ticks "$SUB"); [[ $T2 != 0 ]] && T=$T2
  R=$(rss "$SUB"); [[ -n $R && $R != 0 ]] && RSS_END=$R
  if awk -v s="$STARTED" -v at="$NEXT_SAMPLE" -v now="$(date +%s.%N)" 'BEGIN{exit !(now - s >= at)}'; then
    SAMPLES+=("${NEXT_SAMPLE}s:$RSS_END"); NEXT_SAMPLE=$((NEXT_SAMPLE + RSS_EVERY))
  fi
  if [[ $RSS_START == 0 ]] && awk -v s="$STARTED" -v at="$RSS_AT" -v now="$(date +%s.%N)" 'BEGIN{exit !(now - s >= at)}'; then
    RSS_START=$RSS_END
  fi
  sleep 0.5
done
wait "$SUB" || true
echo "subscriber rss kB: at ${RSS_AT}s $RSS_START, at end $RSS_END"
echo "subscriber rss kB every ${RSS_EVERY}s: ${SAMPLES[*]}"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "command: taskset -c 1 $BIN subscribe $URL ${SUB_FLAGS[*]} --subscribers $SUBS --subs-per-connection $PER_CONN -d ${SECS}s -f json"
echo "feed: serve --chain solana --grpc --slot-time $SLOT_TIME (binary $BIN)"
python3 - "$WORK/report.json" "$T" "$(getconf CLK_TCK)" "$SECS" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
cpu = int(sys.argv[2]) / int(sys.argv[3]); secs = float(sys.argv[4])
n = r["notifications"]
print("subscribed", r["subscribed"], "of", r["subscriptions"], "active at end", r["active_at_end"])
print("updates", n, "(%.0f/s)" % r["notifications_per_sec"], "bytes/s %.0f" % r["bytes_per_sec"])
print("cpu_s %.2f (last sample before exit), cpu per update %.2f us" % (cpu, cpu * 1e6 / max(n, 1)))
share = cpu / secs
if share > 0:
    print("core share %.1f%%: subscriptions per core at this feed rate ~%.0f" % (share * 100, r["subscriptions"] / share))
lag = r.get("produced_lag") or {"percentiles": {}}
print("lag behind created_at p50/p99 us", lag["percentiles"].get("p50"), lag["percentiles"].get("p99"))
print("lag growth", r.get("lag_growth"))
print("gaps", r["gaps"], "duplicates", r["duplicates"], "stalls", r.get("stalls", 0), "closed by server", r["closed_by_server"])
PY
if [[ -x $FLOOR ]]; then
  echo "floor: taskset -c 1 $FLOOR $URL $SECS $SUBS $PER_CONN"
  taskset -c 1 "$FLOOR" "$URL" "$SECS" "$SUBS" "$PER_CONN"
fi
