#!/usr/bin/env bash
# The highest open-loop rate one generator core paces exactly, for rpcbench and wrk2, against
# nginx (bench/nginx.conf) on the other core, next to rpcbench's closed-loop maximum there.
#   1. closed loop: `rpcbench run URL -c 64 --threads 1` gives the core's maximum C (req/s);
#   2. open loop: rates FRACS x C in increasing order, for each tool, until the first that is not
#      paced exactly; the last one that was is the tool's highest exact rate.
# Paced exactly:
#   rpcbench  sent/duration within 1% of the rate, send lag p99 < 1 ms, no unsent ticket;
#   wrk2      (no send-lag figure) corrected p99 minus uncorrected p99 < 5 ms (`--u_latency`): its
#             timer events have 1 ms granularity, which alone puts 1-2 ms between the two, and a
#             wrk2 that falls behind shows tens of ms; and Requests/sec >= 97% of the rate: wrk2
#             starts sending ~150 ms into its run and divides by the whole run.
# Usage: bench/rate_sweep.sh [BINARY]   (default target/release/rpcbench)
# Env:   DUR=10s FRACS="0.3 0.4 0.45 0.5 0.6 0.7 0.8 0.85 0.9 0.95 1.0" PORT=18280 WRK2=/work/shared/tools/wrk2
#        PRIO=50: server and generators under SCHED_FIFO (`chrt -f`), to keep a busy machine's
#        other work off their cores
# Server pinned to core 0, generator to core 1. Only talks to the 127.0.0.1 server it starts.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=$(realpath "${1:-target/release/rpcbench}")
DUR=${DUR:-10s}; PORT=${PORT:-18280}
FRACS=${FRACS:-"0.3 0.4 0.45 0.5 0.6 0.7 0.8 0.85 0.9 0.95 1.0"}
WRK2=${WRK2:-/work/shared/tools/wrk2}
PRIO=${PRIO:-}; RT=(); [[ -n $PRIO ]] && RT=(chrt -f "$PRIO")
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
WORK=$(mktemp -d /tmp/rpcbench-sweep.XXXXXX)
SRV=""
cleanup() { [[ -n $SRV ]] && { kill "$SRV" 2>/dev/null || true; wait "$SRV" 2>/dev/null || true; }; }
trap cleanup EXIT
log() { echo "[$(date +%T)] $*" >&2; }

mkdir -p "$WORK/nginx"
sed -e "s|@DIR@|$WORK/nginx|g" -e "s|@PORT@|$PORT|g" -e "s|@H2PORT@|$((PORT + 1))|g" \
  "$ROOT/bench/nginx.conf" >"$WORK/nginx/nginx.conf"
taskset -c 0 "${RT[@]}" "$NGINX" -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" >"$WORK/nginx.log" 2>&1 &
SRV=$!
URL=http://127.0.0.1:$PORT/
for _ in $(seq 100); do curl -s -o /dev/null -X POST "$URL" && break; sleep 0.1; done
BODY=$WORK/small.json
echo '{"jsonrpc":"2.0","id":1,"method":"getSlot"}' >"$BODY"
printf 'wrk.method = "POST"\nwrk.body = [[%s]]\nwrk.headers["Content-Type"] = "application/json"\n' "$(cat "$BODY")" >"$WORK/post.lua"

# rpcbench's closed-loop maximum on the generator core.
taskset -c 1 "${RT[@]}" "$BIN" run "$URL" --body-file "$BODY" --fixed-id 1 -c 64 -d "$DUR" --threads 1 -q -f json >"$WORK/closed.json"
CLOSED=$(python3 -c "import json; print(round(json.load(open('$WORK/closed.json'))['requests']['rate']))")
log "closed loop maximum: $CLOSED req/s"

# run TOOL RATE -> "PASS|FAIL achieved lag_or_gap_us cpu_us_per_req"
run() {
  local tool=$1 rate=$2 out=$WORK/$1-$2.out tf=$WORK/$1-$2.time
  if [[ $tool == rpcbench ]]; then
    taskset -c 1 "${RT[@]}" /usr/bin/time -o "$tf" -f '%U %S' "$BIN" run "$URL" --body-file "$BODY" --fixed-id 1 \
      --rate "$rate" --max-connections 64 -d "$DUR" --threads 1 -q -f json >"$out"
  else
    taskset -c 1 "${RT[@]}" /usr/bin/time -o "$tf" -f '%U %S' "$WRK2" -t1 -c64 -R"$rate" -d"$DUR" --latency --u_latency \
      -s "$WORK/post.lua" "$URL" >"$out"
  fi
  python3 - "$tool" "$rate" "$out" "$tf" <<'PY'
import json, re, sys
tool, rate, out, tf = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
u, s = (float(x) for x in open(tf).read().split()[-2:])
def us(v, unit): return float(v) * {"us": 1, "ms": 1e3, "s": 1e6, "m": 6e7}[unit]
if tool == "rpcbench":
    j = json.load(open(out)); r = j["requests"]
    achieved = r["total"] / j["duration_us"] * 1e6
    lag = j["send_lag"]["percentiles"]["p99"]
    ok = abs(achieved / rate - 1) <= 0.01 and lag < 1000 and r["unsent"] == 0
    n = r["total"]
else:
    t = open(out).read()
    n = int(re.search(r"(\d+) requests in", t).group(1))
    achieved = float(re.search(r"Requests/sec:\s+([\d.]+)", t).group(1))
    p99 = [us(*m) for m in re.findall(r"^\s+99\.000%\s+([\d.]+)(us|ms|s|m)\s*$", t, re.M)]
    lag = p99[0] - p99[1] if len(p99) >= 2 else float("nan")
    ok = achieved >= 0.97 * rate and lag < 5000
print("PASS" if ok else "FAIL", round(achieved), round(lag), round((u + s) / max(n, 1) * 1e6, 2))
PY
}

echo -e "tool\trate\tverdict\tachieved\tlag_us\tcpu_us_per_req" >"$WORK/sweep.tsv"
declare -A BEST
for tool in rpcbench wrk2; do
  [[ $tool == wrk2 && ! -x $WRK2 ]] && { log "wrk2: not found at $WRK2; skipped"; continue; }
  BEST[$tool]=0
  for f in $FRACS; do
    rate=$(python3 -c "print(int($CLOSED * $f))")
    read -r verdict achieved lag cpu < <(run "$tool" "$rate")
    echo -e "$tool\t$rate\t$verdict\t$achieved\t$lag\t$cpu" >>"$WORK/sweep.tsv"
    log "$tool $rate: $verdict achieved $achieved lag p99 $lag us cpu $cpu us/req"
    [[ $verdict == PASS ]] || break
    BEST[$tool]=$rate
  done
done

echo "| tool | highest exactly paced rate (req/s) | x rpcbench closed-loop max ($CLOSED req/s) |"
echo "|---|---:|---:|"
for tool in rpcbench wrk2; do
  [[ -n ${BEST[$tool]:-} ]] || continue
  echo "| $tool | ${BEST[$tool]} | $(python3 -c "print(f'{${BEST[$tool]} / $CLOSED:.2f}')") |"
done
echo
echo "Steps (verdict, achieved req/s, send lag p99 us (wrk2: corrected minus uncorrected p99), CPU us/req):"
echo '```'
column -t "$WORK/sweep.tsv"
echo '```'
log "raw files in $WORK"
