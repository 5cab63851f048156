#!/usr/bin/env bash
# Instructions per request of the load generator's hot path (the README's callgrind command):
# `rpcbench serve --chain static` on a free port of 127.0.0.1, then callgrind over
#   rpcbench run URL --method getSlot -c 16 -n 20000 --threads 1 -q -f json
# and the total instruction count divided by the requests. Counts instructions, not time, so it
# holds on a busy machine. Usage: bench/client_cost.sh [BINARY] [EXTRA RUN FLAGS...]
# (default target/release/rpcbench; e.g. `--batch 10`). REQS=20000 CONNS=16.
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
valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.out" \
  "$BIN" run "$URL" --method getSlot -c "$CONNS" -n "$REQS" --threads 1 -q -f json "$@" >"$WORK/run.json" 2>"$WORK/vg.err"
TOTAL=$(grep -E '^(summary|totals):' "$WORK/cg.out" | head -1 | awk '{print $2}')
OK=$(python3 -c "import json,sys; r=json.load(open('$WORK/run.json')); print(r['requests']['ok'])")
echo "instructions: $TOTAL  requests: $REQS  ok: $OK  per request: $((TOTAL / REQS))"
