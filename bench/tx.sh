#!/usr/bin/env bash
# `rpcbench tx` at speed: the generator pinned to one core (GEN_CORE), the mock node with its
# mempool (Ethereum) or transactions (Solana) pinned to another (MOCK_CORE, one server thread),
# both on 127.0.0.1 (port 0). Each run is bounded: RATE x SECS transactions, then the wait for
# inclusions (at most --inclusion-timeout 20s). Prints, per chain: sent, included, the send
# rate reached, the send lag (how late each send left against its schedule) p50/p99/max, the
# ack p99, the generator's CPU (user + system, the whole process: signer, engine, head watch,
# the inclusion bookkeeping) per transaction, the mock's CPU, and the load average.
# Then the sign-only cost of each chain's transaction from the tx_sign_cost example (no
# network), to set beside the signing crates' own benchmark figures.
# Usage: bench/tx.sh [BINARY]   (default target/release/rpcbench)
#   RATE_ETH=20000 RATE_SOL=40000 SECS=3 GEN_CORE=0 MOCK_CORE=1 CHAINS="ethereum solana"
#   PRIO=50: mock and generator under SCHED_FIFO at that priority (`chrt -f`, as bench/run.sh),
#     which keeps other processes off the pinned cores on a busy machine; not how users run it
#     (unset: ordinary priority). The generator's helper threads then run one priority below.
#   BLOCK_GAS: the mock's --block-gas-limit (unset: 1.5 x the gas RATE_ETH sends in a block)
#   RECEIPTS=all|none|N%: Ethereum's --receipts (which included transactions' receipts are read;
#     unset: the binary's default, all)
#   SOL_LANDING=signatures|blocks SOL_COMMITMENT=processed (blocks: confirmed or finalized)
#   SIGN_COST=target/release/examples/tx_sign_cost (cargo build --release --example tx_sign_cost)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${1:-target/release/rpcbench}")
SIGN_COST=${SIGN_COST:-target/release/examples/tx_sign_cost}
RATE_ETH=${RATE_ETH:-20000}; RATE_SOL=${RATE_SOL:-40000}; SECS=${SECS:-3}
# Solana's landing: a signatureSubscribe per transaction (`signatures`) or one blockSubscribe
# (`blocks`, which nodes serve at confirmed or finalized only).
SOL_LANDING=${SOL_LANDING:-signatures}; SOL_COMMITMENT=${SOL_COMMITMENT:-processed}
GEN_CORE=${GEN_CORE:-0}; MOCK_CORE=${MOCK_CORE:-1}; CHAINS=${CHAINS:-"ethereum solana"}
PRIO=${PRIO:-}; RT=(); [[ -n $PRIO ]] && RT=(chrt -f "$PRIO")
RECEIPTS=${RECEIPTS:-}
# The mock's Ethereum blocks (one every 100 ms) hold half as many transfers again as the rate
# sends in a block time (30M gas, a mainnet block, holds 14,280/s of 21,000-gas transfers: at
# 20,000/s the blocks were full and a backlog grew).
BLOCK_GAS=${BLOCK_GAS:-$((RATE_ETH * 21000 * 3 / 20))}
WORK=$(mktemp -d /tmp/rpcbench-tx-bench.XXXXXX)
SERVER=""
trap '[[ -n $SERVER ]] && kill $SERVER 2>/dev/null; rm -rf "$WORK"' EXIT

# CPU seconds (user + system) a process has used so far, from /proc/PID/stat.
cpu_of() { awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$1/stat"; }

for chain in $CHAINS; do
  case $chain in
    ethereum) rate=$RATE_ETH; serve=(--chain ethereum --tx-pool --slot-time 100ms --block-gas-limit "$BLOCK_GAS")
              send=(--dev --senders 10 --gas-price 1gwei --gas-limit 21000 ${RECEIPTS:+--receipts "$RECEIPTS"}) ;;
    solana)   rate=$RATE_SOL; serve=(--chain solana --solana-tx --slot-time 100ms)
              send=(--senders 8 --commitment "$SOL_COMMITMENT" --skip-preflight --landing "$SOL_LANDING") ;;
    *) echo "unknown chain $chain" >&2; exit 2 ;;
  esac
  count=$((rate * SECS))
  "${RT[@]}" taskset -c "$MOCK_CORE" "$BIN" serve "${serve[@]}" --threads 1 --listen 127.0.0.1:0 >"$WORK/serve.out" 2>&1 &
  SERVER=$!
  for _ in $(seq 1 100); do grep -q listening "$WORK/serve.out" && break; sleep 0.05; done
  url=$(grep -o 'http://[0-9.:]*/' "$WORK/serve.out")
  mock_before=$(cpu_of "$SERVER")
  echo "# $chain: load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# ${RT[*]} taskset -c $MOCK_CORE $BIN serve ${serve[*]} --threads 1 --listen 127.0.0.1:0"
  echo "# ${RT[*]} taskset -c $GEN_CORE $BIN tx URL ${send[*]} --rate $rate -n $count --inclusion-timeout 20s --no-tui -f json"
  /usr/bin/time -f "%U %S %e" -o "$WORK/time" "${RT[@]}" taskset -c "$GEN_CORE" "$BIN" tx "$url" "${send[@]}" \
    --rate "$rate" -n "$count" --inclusion-timeout 20s --no-tui -f json -o "$WORK/$chain.json" 2>"$WORK/tx.err" \
    || { echo "tx exited $?:"; tail -5 "$WORK/tx.err"; }
  mock_cpu=$(awk -v a="$mock_before" -v b="$(cpu_of "$SERVER")" 'BEGIN {print b - a}')
  kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; SERVER=""
  python3 - "$WORK/$chain.json" "$WORK/time" "$mock_cpu" "$rate" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
user, system, wall = (float(x) for x in open(sys.argv[2]).read().split()[-3:])
mock_cpu, rate = float(sys.argv[3]), float(sys.argv[4])
included = report.get("included", report.get("landed", 0))
sent = report["sent"]
lag = report["send_lag_ms"]
print(f"sent {sent} at {report['sent_per_second']:.0f}/s (asked {rate:.0f}/s) over {report['send_seconds']:.2f} s; "
      f"included {included}; rejected {report['rejected']} {report['rejected_by_reason']}; pending {report['pending']}")
print(f"send lag ms p50 {lag['p50']} p99 {lag['p99']} max {lag['max']}; ack ms p99 {report['send_to_ack_ms']['p99']}"
      + (f"; receipts checked: {report['receipts_checked']}, reverted {report['reverted']}" if 'receipts_checked' in report else ""))
if 'late_sends' in report:
    late = report['late_sends']
    print(f"late sends (> 2 ms) {late['over_2ms']}, of them at the connection cap ({late['connection_cap']}) "
          f"{late['at_connection_cap']}; sends that waited for the signer {late['waited_for_signer']}")
print(f"generator CPU {user + system:.2f} s (user {user:.2f}, sys {system:.2f}) over {wall:.2f} s wall: "
      f"{(user + system) * 1e6 / max(sent, 1):.1f} us per transaction; mock CPU {mock_cpu:.2f} s: "
      f"{mock_cpu * 1e6 / max(sent, 1):.1f} us per transaction")
PY
done

if [[ -x $SIGN_COST ]]; then
  echo "# sign-only, one thread: taskset -c $GEN_CORE $SIGN_COST 20000"
  taskset -c "$GEN_CORE" "$SIGN_COST" 20000
else
  echo "# ($SIGN_COST not built: cargo build --release --example tx_sign_cost)"
fi
