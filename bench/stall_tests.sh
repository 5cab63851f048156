#!/bin/bash
# The stall injector of bench/RESULTS.md, "stall6" (kept from /tmp/stall6/stall.sh).
# stall.sh RUNS RUN_S BINARY LOGDIR FILTER...: runs BINARY --test-threads=1 FILTER RUNS times,
# each run under the bench lock, stopping the process for 0.2 s after every RUN_S s of running.
runs=$1; run_s=$2; bin=$3; log=$4; shift 4
mkdir -p "$log"
for i in $(seq 1 "$runs"); do
  flock /tmp/rpcbench-bench.lock bash -c '
    bin=$1; run_s=$2; out=$3; shift 3
    timeout 600 "$bin" --test-threads=1 "$@" >"$out" 2>&1 &
    tpid=$!
    # the test binary itself (timeout forks it)
    sleep 0.05; pid=$(pgrep -P $tpid | head -1); [ -z "$pid" ] && pid=$tpid
    ( while kill -0 $pid 2>/dev/null; do sleep $run_s; kill -STOP $pid 2>/dev/null; sleep 0.2; kill -CONT $pid 2>/dev/null; done ) &
    spid=$!
    wait $tpid; rc=$?
    kill $spid 2>/dev/null; wait $spid 2>/dev/null
    echo "rc=$rc" >>"$out"
  ' _ "$bin" "$run_s" "$log/run$i.txt" "$@"
  echo "run $i: $(grep -E '^test result' "$log/run$i.txt") $(grep -E '^test .* FAILED' "$log/run$i.txt" | tr '\n' ' ')  load $(cut -d' ' -f1-3 /proc/loadavg)"
done
