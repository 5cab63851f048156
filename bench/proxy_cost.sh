#!/usr/bin/env bash
# The `proxy` case of bench/run.sh: the same closed-loop load (rpcbench run -c CONNS) against
# the static mock directly, through `rpcbench proxy`, and through nginx as a reverse proxy
# (one worker, upstream keepalive 64), reporting the added latency at p50/p99 and the proxy
# process's CPU time per request (/proc/PID/stat utime+stime before and after the run).
# Upstream and proxy are pinned to core 0, the generator to core 1.
# Usage: bench/proxy_cost.sh [RPCBENCH_BINARY]  (default target/release/rpcbench)
# Env:   DUR=10s CONNS=64 REPS=3 PORT_BASE=18180
# Prints one Markdown row per run: target, req/s, p50, p99, added p50, added p99, CPU us/req.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${1:-target/release/rpcbench}")
DUR=${DUR:-10s}; CONNS=${CONNS:-64}; REPS=${REPS:-3}; PORT_BASE=${PORT_BASE:-18180}
P_UP=$PORT_BASE; P_PROXY=$((PORT_BASE + 1)); P_NGINX=$((PORT_BASE + 2))
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
WORK=$(mktemp -d /tmp/rpcbench-proxy.XXXXXX)
chmod 755 "$WORK"
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM
wait_port() {
  local i
  for i in $(seq 1 600); do
    (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0
    sleep 0.1
  done
  echo "nothing listens on $1" >&2; return 1
}
mkdir -p "$WORK/nginx"
cat >"$WORK/nginx/nginx.conf" <<CONF
worker_processes 1;
daemon off;
master_process off;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $WORK/nginx/body;
    proxy_temp_path $WORK/nginx/proxy;
    fastcgi_temp_path $WORK/nginx/fastcgi;
    uwsgi_temp_path $WORK/nginx/uwsgi;
    scgi_temp_path $WORK/nginx/scgi;
    keepalive_requests 1000000000;
    keepalive_timeout 600s;
    upstream node {
        server 127.0.0.1:$P_UP;
        keepalive 64;
        keepalive_requests 1000000000;
    }
    server {
        listen 127.0.0.1:$P_NGINX backlog=4096;
        location / {
            proxy_pass http://node;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
}
CONF

taskset -c 0 "$BIN" serve --chain static --listen "127.0.0.1:$P_UP" --threads 1 2>"$WORK/upstream.log" &
PIDS+=($!)
wait_port "$P_UP"

# target -> one Markdown row (and the direct run's p50/p99 kept for the added figures)
DIRECT_P50=0; DIRECT_P99=0
measure() {
  local target=$1 port=$2 pid=$3 rep=$4
  local ticks0 ticks1 out=$WORK/$target.$rep.json
  ticks0=$([[ $pid == 0 ]] && echo 0 || awk '{print $14 + $15}' "/proc/$pid/stat")
  taskset -c 1 "$BIN" run "http://127.0.0.1:$port/" -c "$CONNS" -d "$DUR" --warmup 1s -m getSlot -f json >"$out" 2>"$WORK/$target.$rep.log"
  ticks1=$([[ $pid == 0 ]] && echo 0 || awk '{print $14 + $15}' "/proc/$pid/stat")
  local requests rate p50 p99 cpu
  requests=$(jq '.requests.total' "$out")
  rate=$(jq '.requests.rate // .throughput.rate // 0 | floor' "$out")
  p50=$(jq '.latency.percentiles.p50' "$out")
  p99=$(jq '.latency.percentiles.p99' "$out")
  if [[ $target == direct ]]; then DIRECT_P50=$p50; DIRECT_P99=$p99; fi
  cpu=$([[ $pid == 0 ]] && echo "-" || awk -v t=$((ticks1 - ticks0)) -v hz="$(getconf CLK_TCK)" -v n="$requests" 'BEGIN {printf "%.2f", t / hz * 1e6 / n}')
  echo "| $rep | $target | $requests | $rate | $p50 | $p99 | $((p50 - DIRECT_P50)) | $((p99 - DIRECT_P99)) | $cpu |"
}

echo "| rep | target | requests | req/s | p50 us | p99 us | added p50 us | added p99 us | proxy CPU us/request |"
echo "|---|---|---|---|---|---|---|---|---|"
for rep in $(seq 1 "$REPS"); do
  measure direct "$P_UP" 0 "$rep"
  taskset -c 0 "$BIN" proxy --listen "127.0.0.1:$P_PROXY" --upstream "http://127.0.0.1:$P_UP/" >"$WORK/proxy.$rep.txt" 2>"$WORK/proxy.$rep.log" &
  pid=$!; PIDS+=($pid)
  wait_port "$P_PROXY"
  measure rpcbench-proxy "$P_PROXY" "$pid" "$rep"
  kill -TERM "$pid"; wait "$pid" || true
  taskset -c 0 "$NGINX" -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" &
  pid=$!; PIDS+=($pid)
  wait_port "$P_NGINX"
  measure nginx "$P_NGINX" "$pid" "$rep"
  kill -TERM "$pid"; wait "$pid" || true
done
echo "raw files: $WORK" >&2
