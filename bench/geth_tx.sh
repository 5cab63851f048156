#!/usr/bin/env bash
# `rpcbench tx` against a real Ethereum node by hand: geth in dev mode (`geth --dev --dev.period 1`,
# go-ethereum v1.17.10: `go install github.com/ethereum/go-ethereum/cmd/geth@v1.17.10`) on
# 127.0.0.1 (HTTP and WebSocket on port 0, read from its log), a fresh data directory whose one
# account (imported from a key made here) is the prefunded developer account. Sends N transfers
# (default 500) at RATE/s (default 100) from 10 senders (the developer account funds the nine
# others first), then reads every block back from the node and checks: each transaction is
# included exactly once, each sender's nonces run without a gap, and the report's inclusion p50 is
# within the block time. Bounded: N transactions, a 30 s inclusion timeout, geth stopped at exit.
# Usage: bench/geth_tx.sh [BINARY]   (default target/release/rpcbench); N=500 RATE=100 GETH=geth
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${1:-target/release/rpcbench}")
GETH=${GETH:-$(command -v geth || echo "$HOME/go/bin/geth")}
N=${N:-500}; RATE=${RATE:-100}
WORK=$(mktemp -d /tmp/rpcbench-geth.XXXXXX)
GETH_PID=""
trap '[[ -n $GETH_PID ]] && kill $GETH_PID 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"' EXIT
: >"$WORK/empty"
# Ten fresh keys; the first becomes geth's developer account (imported before geth starts).
for _ in $(seq 10); do od -An -N32 -tx1 /dev/urandom | tr -d ' \n'; echo; done >"$WORK/keys"
head -1 "$WORK/keys" >"$WORK/dev.key"
"$GETH" account import --datadir "$WORK/data" --password "$WORK/empty" "$WORK/dev.key" >/dev/null 2>&1
"$GETH" --dev --dev.period 1 --datadir "$WORK/data" --password "$WORK/empty" \
  --http --http.addr 127.0.0.1 --http.port 0 --http.api eth,net,web3 \
  --ws --ws.addr 127.0.0.1 --ws.port 0 --ws.api eth,net,web3 \
  --ipcdisable --nodiscover --maxpeers 0 --port 0 >"$WORK/geth.log" 2>&1 &
GETH_PID=$!
for _ in $(seq 1 100); do grep -q "HTTP server started" "$WORK/geth.log" && break; sleep 0.1; done
port=$(grep -o 'HTTP server started *endpoint=127.0.0.1:[0-9]*' "$WORK/geth.log" | grep -o '[0-9]*$')
url="http://127.0.0.1:$port/"
echo "# $("$GETH" version | grep -m1 '^Version'), dev period 1 s, $url; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $BIN tx URL --key-file KEYS --senders 10 --rate $RATE -n $N --inclusion-timeout 30s --no-tui -f json"
"$BIN" tx "$url" --key-file "$WORK/keys" --senders 10 --rate "$RATE" -n "$N" --inclusion-timeout 30s \
  --no-tui -f json -o "$WORK/tx.json" 2>"$WORK/tx.err" || { echo "tx exited $?:"; tail -5 "$WORK/tx.err"; exit 1; }
python3 - "$url" "$WORK/tx.json" "$N" <<'PY'
import json, sys, urllib.request
url, report, n = sys.argv[1], json.load(open(sys.argv[2])), int(sys.argv[3])
def call(method, params):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    request = urllib.request.Request(url, data=body, headers={"content-type": "application/json"})
    return json.load(urllib.request.urlopen(request))["result"]
head = int(call("eth_blockNumber", []), 16)
hashes, nonces = [], {}
for number in range(1, head + 1):
    for tx in call("eth_getBlockByNumber", [hex(number), True])["transactions"]:
        hashes.append(tx["hash"])
        nonces.setdefault(tx["from"], []).append(int(tx["nonce"], 16))
once = len(hashes) == len(set(hashes))
gapless = all(sorted(ns) == list(range(len(ns))) for ns in nonces.values())
inc = report["send_to_included_ms"]
print(f"sent {report['sent']}, included {report['included']}, dropped {report['dropped']}, rejected {report['rejected']}, "
      f"pending {report['pending']}, identity {report['identity_holds']}")
print(f"on chain: {len(hashes)} transactions in blocks 1..{head} ({n} + the funding transfers), "
      f"each once: {once}; {len(nonces)} senders, nonces without a gap: {gapless}")
print(f"send -> included ms p50 {inc['p50']} p90 {inc['p90']} p99 {inc['p99']} (block time 1000 ms); "
      f"blocks after the head at send p50 {report['blocks_after_head_at_send']['p50']}; "
      f"send lag ms p99 {report['send_lag_ms']['p99']}; ack ms p99 {report['send_to_ack_ms']['p99']}")
ok = report["included"] == n and once and gapless and inc["p50"] <= 1000
print("OK" if ok else "FAILED")
sys.exit(0 if ok else 1)
PY
