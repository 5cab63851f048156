#!/usr/bin/env bash
# Instructions per request of the load generator's hot path (the README's callgrind command):
# `rpcbench serve --chain static` on a free port of 127.0.0.1, then callgrind over
#   rpcbench run URL --method getSlot -c 16 -n 20000 --threads 1 -q -f json
# and the total instruction count divided by the requests. Counts instructions, not time, so it
# holds on a busy machine. Usage: bench/client_cost.sh [BINARY] [EXTRA RUN FLAGS...]
# (default target/release/rpcbench; e.g. `--batch 10`). REQS=20000 CONNS=16.
# TUI=1: the same run with the live dashboard on (no -q, on a pseudo-terminal from `script`, the
# report written with --output), each thread counted on its own (--separate-threads): the
# dashboard thread's instructions and frames (calls of draw_dashboard) are printed apart.
# WS=1: the same requests over WebSocket (ws:// to the same node), CONNS sockets with IN_FLIGHT
# (default 4) requests outstanding on each; ANNOTATE=1 prints callgrind_annotate's inclusive
# top functions (per request: divide by REQS, or take the difference of two REQS).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${1:-target/release/rpcbench}")
shift || true
REQS=${REQS:-20000}; CONNS=${CONNS:-16}
WORK=$(mktemp -d /tmp/rpcbench-client-cost.XXXXXX)
"$BIN" serve --chain static --listen 127.0.0.1:0 --threads 1 >"$WORK/serve.out" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$WORK"' EXIT
for _ in $(seq 1 100); do grep -q listening "$WORK/serve.out" && break; sleep 0.05; done
URL=$(grep -o 'http://[0-9.:]*/' "$WORK/serve.out")
if [[ ${WS:-0} == 1 ]]; then
  URL=${URL/http:/ws:}
  set -- --in-flight "${IN_FLIGHT:-4}" "$@"
fi
if [[ ${TUI:-0} == 1 ]]; then
  script -qec "env -u CI valgrind --tool=callgrind --separate-threads=yes --compress-strings=no --callgrind-out-file=$WORK/cg.out \
    $BIN run $URL --method getSlot -c $CONNS -n $REQS --threads 1 -f json --output $WORK/run.json $* 2>$WORK/vg.err" \
    /dev/null >/dev/null
  TOTAL=0; DASH=0; FRAMES=0
  for f in "$WORK"/cg.out-*; do
    t=$(grep -E '^(summary|totals):' "$f" | head -1 | awk '{print $2}')
    TOTAL=$((TOTAL + t)); echo "thread ${f##*-}: $t instructions"
    if grep -q 'draw_dashboard' "$f"; then
      DASH=$((DASH + t))
      FRAMES=$(grep -A3 -E 'cfn=.*draw_dashboard' "$f" | grep -E '^calls=' | awk -F'[= ]' '{s+=$2} END {print s+0}' || true)
    fi
  done
  echo "dashboard thread: $DASH instructions, $FRAMES frame(s) drawn"
else
  valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.out" \
    "$BIN" run "$URL" --method getSlot -c "$CONNS" -n "$REQS" --threads 1 -q -f json "$@" >"$WORK/run.json" 2>"$WORK/vg.err"
  TOTAL=$(grep -E '^(summary|totals):' "$WORK/cg.out" | head -1 | awk '{print $2}')
  if [[ ${ANNOTATE:-0} == 1 ]]; then
    callgrind_annotate --inclusive=yes "$WORK/cg.out" 2>/dev/null | head -${ANNOTATE_LINES:-70}
  fi
fi
OK=$(python3 -c "import json,sys; r=json.load(open('$WORK/run.json')); print(r['requests']['ok'])")
echo "instructions: $TOTAL  requests: $REQS  ok: $OK  per request: $((TOTAL / REQS))"
