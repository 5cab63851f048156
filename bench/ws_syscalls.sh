#!/usr/bin/env bash
# WebSocket against HTTP/1.1 on the same node, counted: system calls, epoll waits, context
# switches and CPU per request of the generator and of the node, from `perf stat` tracepoints,
# for HTTP/1.1 with 64 connections and WebSocket with 16 sockets x 4 requests in flight against
# `rpcbench serve --chain static --threads 1`. The node on core 0, the generator on core 1, both
# under SCHED_FIFO 50 (a busy machine stays off their cores); counts hold on a busy machine.
# Usage: bench/ws_syscalls.sh [NODE_BINARY [GENERATOR_BINARY]]  (default target/release/rpcbench)
# Env:   N=800000 (requests per run, bounded), MODES="http ws"
# Only talks to the node it starts itself on 127.0.0.1 (port 0).
set -euo pipefail
cd "$(dirname "$0")/.."
NODE=$(realpath "${1:-target/release/rpcbench}"); GEN=$(realpath "${2:-$NODE}")
N=${N:-800000}; MODES=${MODES:-"http ws"}
WORK=$(mktemp -d /tmp/rpcbench-ws-syscalls.XXXXXX)
SERVER=""
trap '[[ -n $SERVER ]] && kill $SERVER 2>/dev/null; rm -rf "$WORK"' EXIT
echo '{"jsonrpc":"2.0","id":1,"method":"getSlot","params":[]}' >"$WORK/body.json"
chrt -f 50 taskset -c 0 "$NODE" serve --chain static --threads 1 --listen 127.0.0.1:0 >"$WORK/serve.out" 2>&1 &
SERVER=$!
for _ in $(seq 1 100); do grep -q listening "$WORK/serve.out" && break; sleep 0.05; done
url=$(grep -o 'http://[0-9.:]*/' "$WORK/serve.out")
events='syscalls:sys_enter_sendto,syscalls:sys_enter_recvfrom,syscalls:sys_enter_epoll_wait,context-switches,task-clock'
echo "# load average $(cut -d' ' -f1-3 /proc/loadavg); $N requests per run; node $NODE; generator $GEN"
echo "| wire | req/s | generator CPU µs/req | sendto | recvfrom | epoll_wait | context switches | node CPU µs/req | node sendto | node recvfrom |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for mode in $MODES; do
  case $mode in
    http) target=$url; load=(-c 64) ;;
    ws)   target=${url/http:/ws:}; load=(-c 16 --in-flight 4) ;;
    *) echo "unknown mode $mode" >&2; exit 2 ;;
  esac
  perf stat -e "$events" -p "$SERVER" -o "$WORK/node.$mode" &
  watcher=$!
  sleep 0.2
  chrt -f 50 taskset -c 1 perf stat -e "$events" -o "$WORK/gen.$mode" \
    "$GEN" run "$target" --body-file "$WORK/body.json" -n "$N" --threads 1 --format json -q "${load[@]}" >"$WORK/out.$mode.json"
  kill -INT $watcher; wait $watcher 2>/dev/null || true
  rate=$(python3 -c "import json,sys; print(round(json.load(open(sys.argv[1]))['requests']['rate']))" "$WORK/out.$mode.json")
  per() { awk -v n="$N" -v ev="$2" '$0 ~ ev {gsub(",", "", $1); v = $1} END {printf "%.2f", (ev == "task-clock" ? v * 1000 : v) / n}' "$1"; }
  echo "| $mode | $rate | $(per "$WORK/gen.$mode" task-clock) | $(per "$WORK/gen.$mode" sys_enter_sendto) | $(per "$WORK/gen.$mode" sys_enter_recvfrom) | $(per "$WORK/gen.$mode" epoll_wait) | $(per "$WORK/gen.$mode" context-switches) | $(per "$WORK/node.$mode" task-clock) | $(per "$WORK/node.$mode" sys_enter_sendto) | $(per "$WORK/node.$mode" sys_enter_recvfrom) |"
done
