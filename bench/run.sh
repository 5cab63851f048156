#!/usr/bin/env bash
# rpcbench benchmark harness: rpcbench vs wrk vs oha (HTTP/1.1), vs wrk2 and oha in open loop,
# vs h2load (h2c), rpcbench serve vs nginx.
# Usage: bench/run.sh                 full run (DUR=10s, 3 repetitions, LONG=600s), ~20-25 min
#        QUICK=1 bench/run.sh         smoke run (DUR=2s, 1 repetition, LONG=20s)
# Env:   DUR=10s REPS=3 LONG=600 SAMPLE_AT=60 RATES="5000 20000 60000" PORT_BASE=18080 OUT=bench/RESULTS.md
#        WRK2=/work/shared/tools/wrk2 (the open-loop peer; skipped, and said so, when absent)
#        PRIO=50: server and generator under SCHED_FIFO at that priority (`chrt -f`), which keeps
#        other work on a busy machine off their cores while they run (not set: ordinary priority)
#        CASES="closed large open memory h2 ws" (a subset runs only those; write it to another OUT);
#        "proxy" (not in the default set) runs bench/proxy_cost.sh: direct vs rpcbench proxy vs nginx
#        H2_CONNS=4 H2_STREAMS=16
#        TUI=1: rpcbench's runs with its live dashboard on (on a pseudo-terminal from `script`, the
#        report written with --output), to set beside a run without it (TUI unset: -q, as before);
#        GENERATORS="rpcbench" runs only the generators listed
# Server pinned to core 0, generator to core 1. Only talks to 127.0.0.1 servers it starts itself.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
QUICK=${QUICK:-0}
if [[ $QUICK == 1 ]]; then
  DUR=${DUR:-2s}; REPS=${REPS:-1}; LONG=${LONG:-20}; SAMPLE_AT=${SAMPLE_AT:-5}
else
  DUR=${DUR:-10s}; REPS=${REPS:-3}; LONG=${LONG:-600}; SAMPLE_AT=${SAMPLE_AT:-60}
fi
RATES=${RATES:-"5000 20000 60000"}
CASES=${CASES:-"closed large open memory h2 ws"}
H2_CONNS=${H2_CONNS:-4}; H2_STREAMS=${H2_STREAMS:-16}
has_case() { [[ " $CASES " == *" $1 "* ]]; }
PORT_BASE=${PORT_BASE:-18080}
OUT=${OUT:-$ROOT/bench/RESULTS.md}
SRV_CPU=0; GEN_CPU=1
PRIO=${PRIO:-}; RT=(); [[ -n $PRIO ]] && RT=(chrt -f "$PRIO")
P_NGINX=$PORT_BASE; P_STATIC=$((PORT_BASE + 1)); P_SOLANA=$((PORT_BASE + 2)); P_NGINX_H2=$((PORT_BASE + 3))
WORK=$(mktemp -d /tmp/rpcbench-bench.XXXXXX)
chmod 755 "$WORK"
PIDS=()
log() { echo "[$(date +%T)] $*" >&2; }
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- peers
apt_missing=()
command -v wrk >/dev/null || apt_missing+=(wrk)
command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]] || apt_missing+=(nginx)
[[ -x /usr/bin/time ]] || apt_missing+=(time)
command -v jq >/dev/null || apt_missing+=(jq)
command -v curl >/dev/null || apt_missing+=(curl)
has_case h2 && ! command -v h2load >/dev/null && apt_missing+=(nghttp2-client)
if ((${#apt_missing[@]})); then
  log "apt-get install ${apt_missing[*]}"
  apt-get install -y "${apt_missing[@]}" || { apt-get update && apt-get install -y "${apt_missing[@]}"; }
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
OHA_NOTE=""
OHA=$(command -v oha || true); [[ -z $OHA && -x $HOME/.cargo/bin/oha ]] && OHA=$HOME/.cargo/bin/oha
if [[ -z $OHA ]]; then
  log "cargo install oha --locked"
  if cargo install oha --locked >"$WORK/oha-install.log" 2>&1; then
    OHA=$HOME/.cargo/bin/oha
  else
    OHA_NOTE="oha: not installed ($(grep -m1 -i error "$WORK/oha-install.log" || tail -1 "$WORK/oha-install.log"))"
    log "$OHA_NOTE"; OHA=""
  fi
fi
log "cargo build --release"
cargo build --release -q
RPCB=$ROOT/target/release/rpcbench
TOOLS=(rpcbench wrk); [[ -n $OHA ]] && TOOLS+=(oha)
if [[ -n ${GENERATORS:-} ]]; then read -ra TOOLS <<<"$GENERATORS"; fi
TUI=${TUI:-0}
# wrk2 (constant throughput, coordinated-omission-correct) for the open-loop case.
WRK2=${WRK2:-/work/shared/tools/wrk2}; WRK2_NOTE=""
if [[ ! -x $WRK2 ]]; then
  WRK2_NOTE="wrk2: not found at $WRK2 (see /work/shared/tools/README.md); the open-loop case runs without it"
  log "$WRK2_NOTE"; WRK2=""
fi

# ---------------------------------------------------------------- meta
{
  echo "date=$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "nproc=$(nproc)"
  echo "cpu=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)"
  echo "kernel=$(uname -r)"
  echo "mem=$(free -g | awk '/^Mem:/{print $2" GiB"}')"
  echo "prio=${PRIO:-none}"; echo "quick=$QUICK"; echo "dur=$DUR"; echo "reps=$REPS"; echo "long=$LONG"; echo "sample_at=$SAMPLE_AT"
  echo "v_rpcbench=$($RPCB --version) (git $(git rev-parse --short HEAD))"
  echo "v_wrk=$(wrk --version 2>&1 | head -1 | awk '{print $1" "$2}')"
  echo "v_oha=$([[ -n $OHA ]] && $OHA --version || echo 'oha not installed')"
  echo "v_nginx=$($NGINX -v 2>&1)"
  echo "oha_note=$OHA_NOTE"
  echo "v_wrk2=$([[ -n $WRK2 ]] && echo "wrk2 ($WRK2)" || echo 'wrk2 not found')"
  echo "wrk2_note=$WRK2_NOTE"
  [[ $QUICK != 1 && $LONG -lt 600 ]] && echo "long_note=LONG was shortened to ${LONG}s (instead of 600s) to fit the time budget."
} >"$WORK/meta.txt"
: >"$WORK/results.tsv"; : >"$WORK/commands.txt"; : >"$WORK/server_cpu.tsv"

# ---------------------------------------------------------------- servers
wait_port() {  # port
  local i
  for i in $(seq 100); do
    curl -s -o /dev/null -X POST -H 'content-type: application/json' -d '{"jsonrpc":"2.0","id":1,"method":"getSlot"}' "http://127.0.0.1:$1/" && return 0
    sleep 0.1
  done
  log "server on port $1 did not come up"; return 1
}
SRV_PID=""
start_server() {  # kind port
  local kind=$1 port=$2 cmd
  case $kind in
    nginx)
      mkdir -p "$WORK/nginx"
      sed -e "s|@DIR@|$WORK/nginx|g" -e "s|@PORT@|$port|g" -e "s|@H2PORT@|$P_NGINX_H2|g" \
        "$ROOT/bench/nginx.conf" >"$WORK/nginx/nginx.conf"
      cmd="taskset -c $SRV_CPU ${RT[*]} $NGINX -p $WORK/nginx -c $WORK/nginx/nginx.conf" ;;
    static|solana)
      cmd="taskset -c $SRV_CPU ${RT[*]} $RPCB serve --chain $kind --listen 127.0.0.1:$port --threads 1" ;;
  esac
  echo "# server: $cmd" >>"$WORK/commands.txt"
  $cmd >"$WORK/server-$kind.log" 2>&1 &
  SRV_PID=$!; PIDS+=("$SRV_PID")
  wait_port "$port"
}
server_ticks() {  # user + system clock ticks of the server process and its children (nginx workers)
  local p t=0
  for p in $SRV_PID $(pgrep -P "$SRV_PID" 2>/dev/null || true); do
    t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
  done
  echo "$t"
}
stop_server() {
  kill "$SRV_PID" 2>/dev/null || true; wait "$SRV_PID" 2>/dev/null || true; SRV_PID=""
}

# ---------------------------------------------------------------- generators
RUN_N=0
# gen CASE TARGET TOOL URL BODYFILE MODE(closed|open) LOAD(conns|rate)
gen() {
  local case=$1 target=$2 tool=$3 url=$4 bodyf=$5 mode=$6 load=$7 rep cmd=() out tf
  local body; body=$(cat "$bodyf")
  case $tool in
    rpcbench)
      cmd=("$RPCB" run "$url" --body-file "$bodyf" -d "$DUR" --threads 1 --format json -q)
      # Open loop: at most 64 connections, as wrk2 -c64 and oha -c 64 have.
      if [[ $mode == closed ]]; then cmd+=(-c "$load"); else cmd+=(--rate "$load" --max-connections 64); fi
      # nginx answers id 1 to everything: send id 1 and expect it back, so every response is
      # still classified (and counted ok) rather than flagged as an id mismatch.
      if [[ $target == nginx ]]; then cmd+=(--fixed-id 1); fi
      # TUI=1: the dashboard on, on a pseudo-terminal; the report goes to a file of its own.
      if [[ $TUI == 1 ]]; then
        local plain=() arg; for arg in "${cmd[@]}"; do [[ $arg == -q ]] || plain+=("$arg"); done
        cmd=(script -qec "env -u CI $(printf '%q ' "${plain[@]}") --output $WORK/tui-report.json" /dev/null)
      fi ;;
    wrk)
      printf 'wrk.method = "POST"\nwrk.body = [[%s]]\nwrk.headers["Content-Type"] = "application/json"\n' "$body" >"$WORK/wrk-$target.lua"
      cmd=(wrk -t1 -c"$load" -d"$DUR" --latency -s "$WORK/wrk-$target.lua" "$url") ;;
    wrk2)
      printf 'wrk.method = "POST"\nwrk.body = [[%s]]\nwrk.headers["Content-Type"] = "application/json"\n' "$body" >"$WORK/wrk-$target.lua"
      cmd=("$WRK2" -t1 -c64 -R"$load" -d"$DUR" --latency -s "$WORK/wrk-$target.lua" "$url") ;;
    rpcbench-h2)
      # load = CONNSxSTREAMS
      cmd=("$RPCB" run "$url" --body-file "$bodyf" -d "$DUR" --threads 1 --format json -q --h2c
        -c "${load%x*}" --streams "${load#*x}")
      if [[ $target == nginx ]]; then cmd+=(--fixed-id 1); fi ;;
    rpcbench-ws)
      # The same node over WebSocket: load = SOCKETSxIN_FLIGHT
      cmd=("$RPCB" run "${url/http:/ws:}" --body-file "$bodyf" -d "$DUR" --threads 1 --format json -q
        -c "${load%x*}" --in-flight "${load#*x}") ;;
    h2load)
      cmd=(h2load -c "${load%x*}" -m "${load#*x}" -t 1 -D "${DUR%s}" -d "$bodyf" -H 'content-type: application/json' "$url") ;;
    oha)
      cmd=("$OHA" -z "$DUR" -m POST -d "$body" -T application/json --no-tui --output-format json)
      if [[ $mode == closed ]]; then cmd+=(-c "$load"); else cmd+=(-c 64 -q "$load" --latency-correction); fi
      cmd+=("$url") ;;
  esac
  printf '# %s %s %s %s x%s:\ntaskset -c %s /usr/bin/time -f "%%U %%S %%M" %s\n' "$case" "$target" "$tool" "$load" "$REPS" \
    "$GEN_CPU" "$(printf '%q ' "${cmd[@]}")" >>"$WORK/commands.txt"
  for rep in $(seq "$REPS"); do
    RUN_N=$((RUN_N + 1)); out=$WORK/run$RUN_N.out; tf=$WORK/run$RUN_N.time
    local srv_before; srv_before=$(server_ticks)
    taskset -c "$GEN_CPU" "${RT[@]}" /usr/bin/time -o "$tf" -f '%U %S %M' "${cmd[@]}" >"$out" 2>"$WORK/run$RUN_N.err" \
      || log "run $RUN_N ($tool) exited with $? (see $WORK/run$RUN_N.err)"
    if [[ $TUI == 1 && $tool == rpcbench && -f $WORK/tui-report.json ]]; then mv "$WORK/tui-report.json" "$out"; fi
    # The server's own CPU during the run (user + system clock ticks of it and its children).
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$case" "$target" "$tool" "$load" "$rep" \
      "$(awk -v a="$srv_before" -v b="$(server_ticks)" -v hz="$(getconf CLK_TCK)" 'BEGIN{printf "%.3f", (b-a)/hz}')" \
      >>"$WORK/server_cpu.tsv"
    local row; row=$(python3 "$ROOT/bench/parse.py" "$tool" "$out" "$tf")
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$case" "$target" "$tool" "$load" "$rep" "$row" >>"$WORK/results.tsv"
    log "$case $target $tool $load rep $rep: $(echo "$row" | awk -F'\t' '{printf "%.0f req/s p50 %s p99 %s reqs %s err %s cpu %s s rss %s KB", $1,$2,$3,$4,$5,$6,$7}')"
  done
}

SMALL=$WORK/small.json
echo '{"jsonrpc":"2.0","id":1,"method":"getSlot"}' >"$SMALL"

# ---------------------------------------------------------------- case 1 + 5: closed loop, small responses
has_case closed && for target in nginx static; do
  if [[ $target == nginx ]]; then port=$P_NGINX; else port=$P_STATIC; fi
  start_server "$target" "$port"
  for c in 64 256; do
    for t in "${TOOLS[@]}"; do gen closed "$target" "$t" "http://127.0.0.1:$port/" "$SMALL" closed "$c"; done
  done
  stop_server
done

# ---------------------------------------------------------------- case 2: large responses
if has_case large; then
start_server solana "$P_SOLANA"
SLOT=$(curl -s -H 'content-type: application/json' -d '{"jsonrpc":"2.0","id":1,"method":"getBlocks","params":[900,1000]}' \
  "http://127.0.0.1:$P_SOLANA/" | jq '.result[0]')
BLOCK=$WORK/getblock.json
echo "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"getBlock\",\"params\":[$SLOT,{\"encoding\":\"json\",\"maxSupportedTransactionVersion\":0,\"transactionDetails\":\"full\",\"rewards\":false}]}" >"$BLOCK"
BYTES=$(curl -s -H 'content-type: application/json' -d @"$BLOCK" "http://127.0.0.1:$P_SOLANA/" | wc -c)
echo "slot=$SLOT" >>"$WORK/meta.txt"; echo "block_bytes=$BYTES" >>"$WORK/meta.txt"
log "getBlock slot $SLOT: $BYTES bytes"
for t in "${TOOLS[@]}"; do gen large solana "$t" "http://127.0.0.1:$P_SOLANA/" "$BLOCK" closed 64; done
stop_server
fi

# ---------------------------------------------------------------- case 6: HTTP/2 (h2c), rpcbench vs h2load
if has_case h2; then
  for target in nginx static; do
    if [[ $target == nginx ]]; then start_server nginx "$P_NGINX"; port=$P_NGINX_H2
    else start_server static "$P_STATIC"; port=$P_STATIC; fi
    for t in rpcbench-h2 h2load; do gen h2 "$target" "$t" "http://127.0.0.1:$port/" "$SMALL" closed "${H2_CONNS}x${H2_STREAMS}"; done
    stop_server
  done
fi

# ---------------------------------------------------------------- case 7: WebSocket against HTTP/1.1, same node
if has_case ws; then
  start_server static "$P_STATIC"
  gen ws static rpcbench "http://127.0.0.1:$P_STATIC/" "$SMALL" closed 64
  gen ws static rpcbench-ws "http://127.0.0.1:$P_STATIC/" "$SMALL" closed 64x1
  gen ws static rpcbench-ws "http://127.0.0.1:$P_STATIC/" "$SMALL" closed 16x4
  stop_server
fi

# ---------------------------------------------------------------- case 3: open loop, + case 4: memory
if has_case open || has_case memory; then
start_server nginx "$P_NGINX"
has_case open && for r in $RATES; do
  for t in rpcbench wrk2 oha; do
    [[ $t == oha && -z $OHA ]] && continue
    [[ $t == wrk2 && -z $WRK2 ]] && continue
    gen open nginx "$t" "http://127.0.0.1:$P_NGINX/" "$SMALL" open "$r"
  done
done

if has_case memory; then
log "memory run: rpcbench closed loop c=64 for ${LONG}s"
lcmd=("$RPCB" run "http://127.0.0.1:$P_NGINX/" --body-file "$SMALL" -c 64 -d "${LONG}s" --threads 1 --fixed-id 1 --format json -q)
echo "# memory over time (VmRSS from /proc/PID/status at ${SAMPLE_AT}s and at the end):" >>"$WORK/commands.txt"
echo "taskset -c $GEN_CPU $(printf '%q ' "${lcmd[@]}")" >>"$WORK/commands.txt"
taskset -c "$GEN_CPU" "${lcmd[@]}" >"$WORK/long.json" 2>"$WORK/long.err" &
LP=$!; PIDS+=("$LP")
t0=$(date +%s.%N); rss1=""; rsslast=""; hwm=""; tlast=0; series=""; next_mark=$SAMPLE_AT
while kill -0 "$LP" 2>/dev/null; do
  st=$(cat "/proc/$LP/status" 2>/dev/null || true)
  r=$(awk '/^VmRSS/{print $2}' <<<"$st"); h=$(awk '/^VmHWM/{print $2}' <<<"$st")
  el=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN{printf "%d", a-b}')
  if [[ -n $r ]]; then
    rsslast=$r; hwm=$h; tlast=$el
    if [[ -z $rss1 && $el -ge $SAMPLE_AT ]]; then rss1=$r; fi
    if ((el >= next_mark)); then series+="${el}:${r} "; next_mark=$((next_mark + SAMPLE_AT)); fi
  fi
  sleep 0.5
done
wait "$LP" || log "memory run exited with $?"
{
  echo "rss_at_sample_kb=${rss1:-nan}"; echo "rss_end_kb=${rsslast:-nan}"; echo "end_s=$tlast"; echo "hwm_kb=${hwm:-nan}"
  echo "series=$series"
  echo "requests=$(jq '.requests.total' "$WORK/long.json" 2>/dev/null || echo n/a)"
  echo "errors=$(jq '.requests.errors' "$WORK/long.json" 2>/dev/null || echo n/a)"
} >"$WORK/memory.txt"
log "memory: $(tr '\n' ' ' <"$WORK/memory.txt")"
fi
stop_server
fi

# ---------------------------------------------------------------- case 8: relay overhead, rpcbench proxy vs nginx
if has_case proxy; then
  log "proxy case: direct, rpcbench proxy, nginx proxy_pass (bench/proxy_cost.sh)"
  DUR=$DUR REPS=$REPS PORT_BASE=$((PORT_BASE + 100)) bash "$ROOT/bench/proxy_cost.sh" "$RPCB" >"$WORK/proxy.md"
  cat "$WORK/proxy.md" >&2
fi

# ---------------------------------------------------------------- report
python3 "$ROOT/bench/report.py" "$WORK" "$OUT"
if [[ -s $WORK/proxy.md ]]; then
  { echo; echo "## Relay overhead (rpcbench proxy vs nginx, closed loop c=64)"; echo; cat "$WORK/proxy.md"; } >>"$OUT"
fi
log "raw files in $WORK"
