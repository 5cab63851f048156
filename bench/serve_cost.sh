#!/usr/bin/env bash
# CPU and system calls per request of `rpcbench serve --chain static` and of nginx with
# bench/nginx.conf, both loaded by wrk with the same POST body (the measure behind the
# static-server bullet of bench/ANALYSIS.md). Counts instructions, not time, so it holds on
# a busy machine:
#   callgrind: total instructions (Ir) of the server while wrk runs, divided by the requests
#              wrk completed (instrumentation is switched on only once the server is listening);
#   strace -c -f: system calls of the server (all threads) while wrk runs, per request.
#   wrk req/s: then REPS (default 3) alternating wall-clock runs of WALL_DUR (default 5s), the
#              server pinned to core 0 and wrk to core 1 (noisy when the machine is busy).
# Usage: bench/serve_cost.sh [RPCBENCH_BINARY]   (default target/release/rpcbench)
# Env:   DUR=3s CONNS=64 PORT=18090 TARGETS="nginx static" REPS=3 WALL_DUR=5s
#        COUNTS=0 skips callgrind and strace, REPS=0 the wall-clock runs.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${1:-target/release/rpcbench}")
DUR=${DUR:-3s}; CONNS=${CONNS:-64}; PORT=${PORT:-18090}; TARGETS=${TARGETS:-"nginx static"}
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
WORK=$(mktemp -d /tmp/rpcbench-cost.XXXXXX)
chmod 755 "$WORK"
printf 'wrk.method = "POST"\nwrk.body = [[%s]]\nwrk.headers["Content-Type"] = "application/json"\n' \
  '{"jsonrpc":"2.0","id":1,"method":"getSlot"}' >"$WORK/post.lua"
mkdir -p "$WORK/nginx"
# master_process off: the one process measured is the worker that answers.
sed -e "s|@DIR@|$WORK/nginx|g" -e "s|@PORT@|$PORT|g" -e "s|@H2PORT@|$((PORT + 1))|g" \
  -e 's|^daemon off;|daemon off;\nmaster_process off;|' \
  bench/nginx.conf >"$WORK/nginx/nginx.conf"

server() {  # target -> command words
  case $1 in
    nginx) echo "$NGINX -p $WORK/nginx -c $WORK/nginx/nginx.conf" ;;
    static) echo "$BIN serve --chain static --listen 127.0.0.1:$PORT --threads 1" ;;
  esac
}
wait_port() {
  local i
  for i in $(seq 1 600); do
    (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && return 0
    sleep 0.1
  done
  echo "server did not listen on $PORT" >&2; return 1
}
load() {  # -> requests completed
  taskset -c 1 wrk -t1 -c"$CONNS" -d"$DUR" -s "$WORK/post.lua" "http://127.0.0.1:$PORT/" >"$WORK/wrk.txt"
  awk '/requests in/ {print $1}' "$WORK/wrk.txt"
}

for target in $TARGETS; do
  [[ ${COUNTS:-1} == 1 ]] || break
  # callgrind
  # shellcheck disable=SC2046
  taskset -c 0 valgrind --tool=callgrind --instr-atstart=no \
    --callgrind-out-file="$WORK/callgrind.$target.out" $(server "$target") 2>"$WORK/callgrind.$target.log" &
  pid=$!
  wait_port; sleep 0.5
  # An idle server may not see the command until something wakes it up: poke it meanwhile.
  callgrind_control -i on "$pid" >/dev/null &
  cpid=$!
  for _ in $(seq 1 100); do
    kill -0 "$cpid" 2>/dev/null || break
    (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null || true
    sleep 0.1
  done
  wait "$cpid"
  requests=$(load)
  # Stopped right away: the shutdown counted with the load is a few thousand instructions.
  kill -INT "$pid"; wait "$pid" || true
  ir=$(grep -h -E '^totals:' "$WORK"/callgrind.$target.out* | awk '{s+=$2} END {print s}')
  echo "$target callgrind: requests=$requests Ir=$ir Ir/request=$((ir / requests))"

  # strace
  # shellcheck disable=SC2046
  taskset -c 0 $(server "$target") 2>"$WORK/server.$target.log" &
  pid=$!
  wait_port; sleep 0.3
  strace -c -f -p "$pid" -o "$WORK/strace.$target.txt" 2>/dev/null &
  spid=$!
  sleep 0.5
  requests=$(load)
  kill -INT "$spid"; wait "$spid" || true
  kill -INT "$pid"; wait "$pid" || true
  echo "$target strace: requests=$requests, calls per request:"
  awk -v n="$requests" '$1 ~ /^[0-9.]+$/ && NF >= 5 {c = ($4 ~ /^[0-9]+$/ && NF >= 6) ? $4 : $4; printf "  %-16s %.3f\n", $NF, c / n}' \
    "$WORK/strace.$target.txt" | sort -k2 -nr | head -8
done

REPS=${REPS:-3}; WALL_DUR=${WALL_DUR:-5s}
for rep in $(seq 1 "$REPS"); do
  for target in $TARGETS; do
    # shellcheck disable=SC2046
    taskset -c 0 $(server "$target") 2>"$WORK/server.$target.log" &
    pid=$!
    wait_port; sleep 0.3
    ticks0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    taskset -c 1 wrk -t1 -c"$CONNS" -d"$WALL_DUR" -s "$WORK/post.lua" "http://127.0.0.1:$PORT/" >"$WORK/wrk.$target.$rep.txt"
    ticks1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    kill -INT "$pid"; wait "$pid" || true
    requests=$(awk '/requests in/ {print $1}' "$WORK/wrk.$target.$rep.txt")
    # Server CPU time per request (user + system), less sensitive to a busy machine than req/s.
    cpu_us=$(awk -v t=$((ticks1 - ticks0)) -v hz="$(getconf CLK_TCK)" -v n="$requests" 'BEGIN {printf "%.2f", t / hz * 1e6 / n}')
    echo "wrk run $rep $target: $(awk '/Requests\/sec/ {print $2}' "$WORK/wrk.$target.$rep.txt") req/s, server CPU ${cpu_us} us/request"
  done
done
echo "raw files: $WORK"
