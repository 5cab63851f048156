#!/usr/bin/env bash
# Peak RSS of `rpcbench tx` against the mock, N transactions at one rate, per binary and chain.
# Usage: bench/tx_memory.sh BINARY LABEL   (RATE=10000)
set -uo pipefail
BIN=$1; LABEL=$2; RATE=${RATE:-10000}
WORK=$(mktemp -d /tmp/txbook-mem.XXXXXX)
for chain in ethereum solana; do
  case $chain in
    ethereum) serve=(--chain ethereum --tx-pool --slot-time 100ms)
              send=(--dev --senders 10 --gas-price 1gwei --gas-limit 21000) ;;
    solana)   serve=(--chain solana --solana-tx --slot-time 100ms)
              send=(--senders 8 --commitment confirmed --skip-preflight --landing blocks) ;;
  esac
  for n in 10000 100000; do
    "$BIN" serve "${serve[@]}" --threads 1 --listen 127.0.0.1:0 >"$WORK/serve.out" 2>&1 &
    SERVER=$!
    for _ in $(seq 1 100); do grep -q listening "$WORK/serve.out" && break; sleep 0.05; done
    url=$(grep -o 'http://[0-9.:]*/' "$WORK/serve.out")
    flock /tmp/rpcbench-bench.lock /usr/bin/time -f "%M" -o "$WORK/rss" "$BIN" tx "$url" "${send[@]}" \
      --rate "$RATE" -n "$n" --inclusion-timeout 5s --grace 2s --no-tui -f json -o "$WORK/out.json" 2>"$WORK/err" \
      || { echo "tx exited $?"; tail -3 "$WORK/err"; }
    kill "$SERVER"; wait "$SERVER" 2>/dev/null
    python3 - "$WORK/out.json" "$(cat "$WORK/rss")" "$LABEL" "$chain" "$n" "$(cut -d' ' -f1 /proc/loadavg)" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
landed = r.get("included", r.get("landed"))
print(f"{sys.argv[3]:7} {sys.argv[4]:8} n={sys.argv[5]:>6}  peak RSS {int(sys.argv[2])/1024:7.1f} MiB  sent {r['sent']}  included/landed {landed}  dropped {r.get('dropped')}  expired {r.get('expired')}  pending {r['pending']}  rejected {r['rejected']}  identity {r['identity_holds']}  send s {r['send_seconds']:.1f}  load {sys.argv[6]}")
PY
  done
done
rm -rf "$WORK"
