#!/usr/bin/env bash
# Instruction-count mode: what one request costs rpcbench and its peers, in counts that hold on
# a busy machine (wall-clock CPU time does not).
#
# For every case the same node serves both tools, and each tool runs twice with different
# request counts, so start-up and tear-down cancel:
#   user-space instructions per request = (Ir(long) - Ir(short)) / (requests(long) - requests(short))
# with Ir from `valgrind --tool=callgrind` (every thread of the process), and
#   system calls per request            = the same difference over `strace -c -f` totals.
# wrk and wrk2 run for a duration (D1, D2 seconds; a Lua `response` hook to stop them after N
# requests would add a Lua call per response to their count), and rpcbench then runs for
# exactly the requests wrk completed (-n), so both tools do the same number of requests.
#
# Cases (CASES, default "closed large ws open"):
#   closed  nginx and `rpcbench serve --chain static`, getSlot, 64 connections: rpcbench vs wrk
#   large   `rpcbench serve --chain solana`, getBlock with full transactions (~40 KB), 64
#           connections: rpcbench vs wrk
#   ws      `serve --chain static`, WebSocket 16 sockets x 4 in flight vs HTTP/1.1 64 connections
#           (both rpcbench; WS_N1/WS_N2 requests)
#   open    nginx, open loop: callgrind and strace at OPEN_CG_RATE (callgrind cannot keep 60k/s),
#           rpcbench --rate vs wrk2 -R, 64 connections; then at OPEN_RATE (60,000/s) without
#           valgrind: system calls and context switches per request from `perf stat` tracepoints
#           (strace would slow both tools below the rate), CPU per request (busy machine: wall
#           clock) and rpcbench's send lag p99.
# Usage: bench/icount.sh [BINARY]   (default target/release/rpcbench; prints a Markdown report)
# Env:   KEEP=1 (keep the raw files) CASES D1=2 D2=6 WS_N1=4000 WS_N2=12000 OPEN_CG_RATE=2000 OPEN_RATE=60000 OPEN_DUR=5
#        WRK2=/work/shared/tools/wrk2
# Only talks to servers it starts itself on 127.0.0.1; every run is bounded in count or time.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=$(realpath "${1:-target/release/rpcbench}")
CASES=${CASES:-"closed large ws open"}
D1=${D1:-2}; D2=${D2:-6}
WS_N1=${WS_N1:-4000}; WS_N2=${WS_N2:-12000}
OPEN_CG_RATE=${OPEN_CG_RATE:-2000}; OPEN_RATE=${OPEN_RATE:-60000}; OPEN_DUR=${OPEN_DUR:-5}
WRK2=${WRK2:-/work/shared/tools/wrk2}
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
has_case() { [[ " $CASES " == *" $1 "* ]]; }
for tool in valgrind strace wrk python3; do
  command -v "$tool" >/dev/null || { echo "icount.sh: $tool not found" >&2; exit 2; }
done
WORK=$(mktemp -d /tmp/rpcbench-icount.XXXXXX)
chmod 755 "$WORK"
SRV=""
log() { echo "[$(date +%T)] $*" >&2; }
stop_server() { [[ -n $SRV ]] && { kill "$SRV" 2>/dev/null || true; wait "$SRV" 2>/dev/null || true; }; SRV=""; }
cleanup() { stop_server; if [[ -n ${KEEP:-} ]]; then log "raw files in $WORK"; else rm -rf "$WORK"; fi; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# ------------------------------------------------------------------ servers (port 0 or a free port)
URL=""
start_server() {  # kind: nginx | static | solana
  local kind=$1 i
  case $kind in
    nginx)
      local port h2port
      port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
      h2port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
      mkdir -p "$WORK/nginx"
      sed -e "s|@DIR@|$WORK/nginx|g" -e "s|@PORT@|$port|g" -e "s|@H2PORT@|$h2port|g" \
        "$ROOT/bench/nginx.conf" >"$WORK/nginx/nginx.conf"
      "$NGINX" -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" >"$WORK/server.out" 2>&1 &
      SRV=$!; URL="http://127.0.0.1:$port/"
      for i in $(seq 100); do
        curl -s -o /dev/null -d '{}' "$URL" && break; sleep 0.05
      done ;;
    static|solana)
      "$BIN" serve --chain "$kind" --listen 127.0.0.1:0 --threads 1 >"$WORK/server.out" 2>&1 &
      SRV=$!
      for i in $(seq 200); do grep -q listening "$WORK/server.out" && break; sleep 0.05; done
      URL=$(grep -o 'http://[0-9.:]*/' "$WORK/server.out" | head -1) ;;
  esac
  [[ -n $URL ]] || { echo "icount.sh: the $kind server did not start" >&2; exit 1; }
}

# ------------------------------------------------------------------ counting runs
# Each run appends: case node tool load kind requests total breakdown (kind: ir | sys)
ROWS=$WORK/rows.tsv; : >"$ROWS"
requests_of() {  # tool outfile
  python3 - "$1" "$2" <<'EOF'
import json, re, sys
tool, out = sys.argv[1:3]
text = open(out, errors="replace").read()
if tool.startswith("rpcbench"):
    print(json.loads(text)["requests"]["total"])
else:
    print(re.search(r"(\d+) requests in", text).group(1))
EOF
}
counted() {  # case node tool load kind -- command...   (prints the requests completed)
  local case=$1 node=$2 tool=$3 load=$4 kind=$5; shift 6
  # (called in $(...): a unique name per run, not a counter)
  local run; run=$(mktemp -u "$WORK/run.XXXXXX")
  local out=$run.out total breakdown=""
  if [[ $kind == ir ]]; then
    valgrind --tool=callgrind --callgrind-out-file="$run.cg" "$@" >"$out" 2>"$run.err"
    total=$(grep -E '^(summary|totals):' "$run.cg" | head -1 | awk '{print $2}')
    rm -f "$run.cg"
  else
    strace -c -f -o "$run.st" "$@" >"$out" 2>"$run.err"
    total=$(awk '$NF == "total" {print $4}' "$run.st")
    breakdown=$(awk 'NR > 2 && $1 ~ /^[0-9.]+$/ && $NF != "total" {printf "%s=%s,", $NF, $4}' "$run.st")
  fi
  local reqs; reqs=$(requests_of "$tool" "$out")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$case" "$node" "$tool" "$load" "$kind" "$reqs" "$total" "$breakdown" >>"$ROWS"
  log "$case $node $tool $load $kind: $reqs requests, $total"
  echo "$reqs"
}

lua_post() {  # bodyfile -> lua script path
  local lua=$WORK/post-$(basename "$1" .json).lua
  printf 'wrk.method = "POST"\nwrk.body = [[%s]]\nwrk.headers["Content-Type"] = "application/json"\n' "$(cat "$1")" >"$lua"
  echo "$lua"
}

# rpcbench vs wrk, closed loop, 64 connections: wrk for D1 and D2 seconds, rpcbench for the
# same numbers of requests.
closed_pair() {  # case node bodyfile [extra rpcbench flags...]
  local case=$1 node=$2 body=$3; shift 3
  local lua kind d n
  lua=$(lua_post "$body")
  for kind in ir sys; do
    for d in "$D1" "$D2"; do
      n=$(counted "$case" "$node" wrk 64 "$kind" -- wrk -t1 -c64 -d"${d}s" -s "$lua" "$URL")
      counted "$case" "$node" rpcbench 64 "$kind" -- "$BIN" run "$URL" --body-file "$body" -c 64 -n "$n" \
        --threads 1 -q -f json "$@" >/dev/null
    done
  done
}

SMALL=$WORK/small.json
echo '{"jsonrpc":"2.0","id":1,"method":"getSlot"}' >"$SMALL"

if has_case closed; then
  start_server nginx; closed_pair closed nginx "$SMALL" --fixed-id 1; stop_server
  start_server static; closed_pair closed static "$SMALL"; stop_server
fi

if has_case large; then
  start_server solana
  SLOT=$(curl -s -H 'content-type: application/json' -d '{"jsonrpc":"2.0","id":1,"method":"getBlocks","params":[900,1000]}' "$URL" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["result"][0])')
  BLOCK=$WORK/getblock.json
  echo "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"getBlock\",\"params\":[$SLOT,{\"encoding\":\"json\",\"maxSupportedTransactionVersion\":0,\"transactionDetails\":\"full\",\"rewards\":false}]}" >"$BLOCK"
  BLOCK_BYTES=$(curl -s -H 'content-type: application/json' -d @"$BLOCK" "$URL" | wc -c)
  echo "block_bytes=$BLOCK_BYTES" >"$WORK/meta"
  closed_pair large solana "$BLOCK"
  stop_server
fi

if has_case ws; then
  start_server static
  for kind in ir sys; do
    for n in "$WS_N1" "$WS_N2"; do
      counted ws static rpcbench-h1 64 "$kind" -- "$BIN" run "$URL" --body-file "$SMALL" -c 64 -n "$n" \
        --threads 1 -q -f json >/dev/null
      counted ws static rpcbench-ws 16x4 "$kind" -- "$BIN" run "${URL/http:/ws:}" --body-file "$SMALL" -c 16 \
        --in-flight 4 -n "$n" --threads 1 -q -f json >/dev/null
    done
  done
  stop_server
fi

OPEN_WALL=$WORK/open_wall.tsv; : >"$OPEN_WALL"
if has_case open; then
  start_server nginx
  lua=$(lua_post "$SMALL")
  for kind in ir sys; do
    for d in "$D1" "$D2"; do
      [[ -x $WRK2 ]] && counted open nginx wrk2 "$OPEN_CG_RATE" "$kind" -- "$WRK2" -t1 -c64 -R"$OPEN_CG_RATE" \
        -d"${d}s" -s "$lua" "$URL" >/dev/null
      counted open nginx rpcbench "$OPEN_CG_RATE" "$kind" -- "$BIN" run "$URL" --body-file "$SMALL" --fixed-id 1 \
        --rate "$OPEN_CG_RATE" --max-connections 64 -d "${d}s" --threads 1 -q -f json >/dev/null
    done
  done
  # At the full rate: perf's tracepoints count system calls without slowing the tool.
  if perf stat -e raw_syscalls:sys_enter -- true >/dev/null 2>&1; then
    tools=(rpcbench); [[ -x $WRK2 ]] && tools+=(wrk2)
    for tool in "${tools[@]}"; do
      run=$WORK/open-$tool; out=$run.out
      if [[ $tool == wrk2 ]]; then
        cmd=("$WRK2" -t1 -c64 -R"$OPEN_RATE" -d"${OPEN_DUR}s" --latency -s "$lua" "$URL")
      else
        cmd=("$BIN" run "$URL" --body-file "$SMALL" --fixed-id 1 --rate "$OPEN_RATE" --max-connections 64
          -d "${OPEN_DUR}s" --threads 1 -q -f json)
      fi
      perf stat -x, -o "$run.perf" -e raw_syscalls:sys_enter,context-switches,task-clock -- "${cmd[@]}" >"$out" 2>"$run.err"
      python3 - "$tool" "$out" "$run.perf" "$OPEN_RATE" >>"$OPEN_WALL" <<'EOF'
import json, re, sys
tool, out, perf, rate = sys.argv[1:5]
text = open(out, errors="replace").read()
counts = {}
for line in open(perf):
    parts = line.strip().split(",")
    if len(parts) > 2 and parts[0] and parts[0][0].isdigit():
        counts[parts[2]] = float(parts[0])
lag = "n/a"
if tool == "rpcbench":
    j = json.loads(text)
    reqs = j["requests"]["total"]; got = j["requests"]["rate"]
    p99 = j["latency"]["percentiles"]["p99"]
    sl = j.get("send_lag") or {}
    lag = (sl.get("percentiles") or {}).get("p99", "n/a")
else:
    reqs = int(re.search(r"(\d+) requests in", text).group(1))
    got = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    m = re.search(r"^\s+99\.0+%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
    p99 = float(m.group(1)) * {"us": 1, "ms": 1e3, "s": 1e6}[m.group(2)] if m else float("nan")
print("\t".join(str(x) for x in (tool, rate, reqs, round(float(got)), counts.get("raw_syscalls:sys_enter", 0) / reqs,
      counts.get("context-switches", 0) / reqs, counts.get("task-clock", 0) * 1e3 / reqs, p99, lag)))
EOF
      log "open $OPEN_RATE/s $tool: $(tail -1 "$OPEN_WALL")"
    done
  fi
  stop_server
fi

# ------------------------------------------------------------------ report
python3 - "$ROWS" "$OPEN_WALL" "$WORK/meta" "$BIN" <<'EOF'
import collections, os, sys
rows_f, wall_f, meta_f, binary = sys.argv[1:5]
runs = collections.defaultdict(list)
for line in open(rows_f):
    case, node, tool, load, kind, reqs, total, breakdown = line.rstrip("\n").split("\t")
    calls = dict(kv.split("=") for kv in breakdown.strip(",").split(",") if kv)
    runs[(case, node, tool, load, kind)].append((int(reqs), int(total), {k: int(v) for k, v in calls.items()}))

def marginal(key):
    got = sorted(runs.get(key, []))
    if len(got) < 2 or got[-1][0] == got[0][0]:
        return None, {}
    (r1, t1, b1), (r2, t2, b2) = got[0], got[-1]
    per = {k: (b2.get(k, 0) - b1.get(k, 0)) / (r2 - r1) for k in set(b1) | set(b2)}
    return (t2 - t1) / (r2 - r1), per

meta = dict(l.strip().split("=", 1) for l in open(meta_f)) if os.path.exists(meta_f) else {}
peers = {"wrk": "rpcbench", "wrk2": "rpcbench", "rpcbench-h1": "rpcbench-ws"}
print(f"Binary: `{binary}`. Per request = (count of the long run - count of the short run) / "
      "(requests of the long run - requests of the short run).\n")
print("| case | node | tool | load | requests (short, long) | user instructions / request | system calls / request | main calls / request |")
print("|---|---|---|---|---|---:|---:|---|")
order = []
for key in runs:
    if key[:4] not in order:
        order.append(key[:4])
result = {}
for case, node, tool, load in order:
    ir, _ = marginal((case, node, tool, load, "ir"))
    sc, per = marginal((case, node, tool, load, "sys"))
    result[(case, node, tool)] = (ir, sc)
    reqs = ", ".join(str(r[0]) for r in sorted(runs.get((case, node, tool, load, "ir"), [])))
    main = ", ".join(f"{k} {v:.2f}" for k, v in sorted(per.items(), key=lambda kv: -kv[1]) if v >= 0.05)
    label = node + (f" ({meta['block_bytes']} B)" if case == "large" and "block_bytes" in meta else "")
    print(f"| {case} | {label} | {tool} | {load} | {reqs} | {ir:,.0f} | {sc:.2f} | {main} |"
          if ir is not None and sc is not None else f"| {case} | {label} | {tool} | {load} | {reqs} | n/a | n/a | |")
print("\n| case | node | rpcbench / peer: instructions | system calls |")
print("|---|---|---:|---:|")
for (case, node, tool), (ir, sc) in result.items():
    if tool not in peers:
        continue
    mine = result.get((case, node, peers[tool]))
    if not mine or None in (ir, sc) + mine or not ir or not sc:
        continue
    who = "WebSocket 16x4 / HTTP/1.1 64" if tool == "rpcbench-h1" else f"rpcbench / {tool}"
    print(f"| {case} | {node} ({who}) | {mine[0] / ir:.3f}x | {mine[1] / sc:.3f}x |")
walls = [l.rstrip("\n").split("\t") for l in open(wall_f) if l.strip()]
if walls:
    print("\nOpen loop at the full rate against nginx, 64 connections (`perf stat`; CPU and latency are "
          "wall clock on a busy machine, counts are not):\n")
    print("| tool | rate | requests | achieved/s | system calls / request | context switches / request | CPU us / request | p99 us | send lag p99 us |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for tool, rate, reqs, got, sc, cs, cpu, p99, lag in walls:
        print(f"| {tool} | {rate} | {reqs} | {got} | {float(sc):.2f} | {float(cs):.3f} | {float(cpu):.1f} | {float(p99):.0f} | {lag} |")
EOF
