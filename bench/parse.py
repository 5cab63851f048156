#!/usr/bin/env python3
"""bench/parse.py TOOL OUTFILE TIMEFILE -> one TSV line:
rate  p50_us  p99_us  requests  errors  cpu_s  rss_kb
TOOL: rpcbench, rpcbench-h2, rpcbench-ws, wrk, wrk2, h2load, oha. wrk2's percentiles are its
corrected ones (from each request's intended time, its "Recorded Latency" block)."""
import json, re, sys

tool, out, timef = sys.argv[1:4]
text = open(out, errors="replace").read()

def dur_us(v, unit):
    return float(v) * {"us": 1, "ms": 1e3, "s": 1e6, "m": 6e7, "h": 3.6e9}[unit]

rate = p50 = p99 = reqs = errs = float("nan")
try:
    if tool in ("rpcbench", "rpcbench-h2", "rpcbench-ws"):
        j = json.loads(text)
        rate = j["requests"]["rate"]; reqs = j["requests"]["total"]; errs = j["requests"]["errors"]
        p50 = j["latency"]["percentiles"]["p50"]; p99 = j["latency"]["percentiles"]["p99"]
    elif tool in ("wrk", "wrk2"):
        reqs = int(re.search(r"(\d+) requests in", text).group(1))
        rate = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
        for pct, name in (("50", "p50"), ("99", "p99")):
            # wrk prints "50%", wrk2 "50.000%" (the first such line: the corrected latencies).
            m = re.search(r"^\s+%s(?:\.0+)?%%\s+([\d.]+)(us|ms|s|m|h)\s*$" % pct, text, re.M)
            v = dur_us(m.group(1), m.group(2))
            if name == "p50": p50 = v
            else: p99 = v
        errs = 0
        m = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
        if m: errs += int(m.group(1))
        m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
        if m: errs += sum(int(x) for x in m.groups())
    elif tool == "h2load":
        rate = float(re.search(r"finished in [\d.]+\w+, ([\d.]+) req/s", text).group(1))
        m = re.search(r"requests: (\d+) total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout", text)
        # "failed" counts every request that did not succeed (errored and timed out included).
        reqs = int(m.group(2)); errs = int(m.group(4))
        # h2load prints min/max/mean/sd, not percentiles: p50 and p99 stay nan.
    elif tool == "oha":
        j = json.loads(text[text.index("{"):])
        s = j["summary"]
        codes = j.get("statusCodeDistribution", {}) or {}
        errd = j.get("errorDistribution", {}) or {}
        ok = sum(v for k, v in codes.items() if str(k).startswith("2"))
        bad = sum(v for k, v in codes.items() if not str(k).startswith("2"))
        # requests cut off by the -z deadline are not requests that completed
        e = sum(v for k, v in errd.items() if "deadline" not in k.lower())
        reqs = ok + bad + e; errs = bad + e
        rate = s["requestsPerSec"]
        lp = j["latencyPercentiles"]
        p50 = lp["p50"] * 1e6; p99 = lp["p99"] * 1e6
except Exception as ex:  # keep going; the cell shows nan
    print(f"parse error ({tool} {out}): {ex}", file=sys.stderr)

cpu = rss = float("nan")
try:
    last = [l for l in open(timef).read().splitlines() if l.strip()][-1].split()
    cpu = float(last[0]) + float(last[1]); rss = int(last[2])
except Exception as ex:
    print(f"time parse error ({timef}): {ex}", file=sys.stderr)
print("\t".join(str(x) for x in (rate, p50, p99, reqs, errs, cpu, rss)))
