#!/usr/bin/env python3
"""bench/report.py WORKDIR OUT.md -- turns the raw runs collected by bench/run.sh into RESULTS.md."""
import math, statistics, sys, os, collections

work, outpath = sys.argv[1:3]
meta = {}
for line in open(os.path.join(work, "meta.txt")):
    if "=" in line:
        k, v = line.rstrip("\n").split("=", 1); meta[k] = v

runs = collections.defaultdict(list)   # (case, target, tool, load) -> [row]
for line in open(os.path.join(work, "results.tsv")):
    f = line.rstrip("\n").split("\t")
    case, target, tool, load, rep = f[:5]
    vals = [float(x) for x in f[5:]]
    runs[(case, target, tool, load)].append(dict(zip(
        ("rate", "p50", "p99", "reqs", "errs", "cpu", "rss"), vals)))

def med(key, field):
    rows = runs.get(key)
    if not rows: return float("nan")
    if field == "cpu_us":
        xs = [r["cpu"] / r["reqs"] * 1e6 if r["reqs"] else float("nan") for r in rows]
    elif field == "rss_mb":
        xs = [r["rss"] / 1024 for r in rows]
    else:
        xs = [r[field] for r in rows]
    xs = [x for x in xs if not math.isnan(x)]
    return statistics.median(xs) if xs else float("nan")

def total(key, field):
    return sum(r[field] for r in runs.get(key, []) if not math.isnan(r[field]))

def fmt(x, nd=0):
    if x is None or (isinstance(x, float) and math.isnan(x)): return "n/a"
    return f"{x:,.{nd}f}"

def ratio(a, b):
    if any(isinstance(v, float) and math.isnan(v) for v in (a, b)) or not b: return float("nan")
    return a / b

L = []
P = L.append
P("# rpcbench benchmark results\n")
P(f"- Date: {meta.get('date')}")
P(f"- Machine: {meta.get('nproc')} cores, {meta.get('cpu')}, kernel {meta.get('kernel')}, {meta.get('mem')} RAM")
P("- 2 cores only: the server is pinned to core 0 and the generator to core 1 with `taskset -c`; anything else "
  "running on the machine during the run shows in the load average below and makes the numbers noisy.")
P(f"- Mode: {'QUICK smoke run' if meta.get('quick') == '1' else 'full run'}: DUR={meta.get('dur')}, "
  f"repetitions={meta.get('reps')} (median reported), LONG={meta.get('long')}s (RSS sampled at {meta.get('sample_at')}s and at the end)")
if meta.get("long_note"): P(f"- Note: {meta['long_note']}")
P(f"- Tool versions: {meta.get('v_rpcbench')}; {meta.get('v_wrk')}; {meta.get('v_oha')}; {meta.get('v_nginx')}")
if meta.get("oha_note"): P(f"- {meta['oha_note']}")
if meta.get("v_wrk2"): P(f"- Open-loop peer: {meta['v_wrk2']}")
if meta.get("wrk2_note"): P(f"- {meta['wrk2_note']}")
P("- CPU µs/req = generator (user+sys) seconds from `/usr/bin/time -f '%U %S %M'` / requests × 1e6; "
  "peak RSS = `%M` (max resident set, KB) / 1024. Latencies in µs. "
  "Requests: rpcbench `requests.total`, wrk `N requests in`, oha sum of `statusCodeDistribution` plus errors "
  "(requests aborted by the `-z` deadline are not counted).")
if meta.get("prio", "none") != "none":
    P(f"- Server and generator ran under SCHED_FIFO priority {meta['prio']} (`chrt -f`, PRIO={meta['prio']}), to keep the rest of a busy machine off their cores.")
P(f"- Load average at the end of the run (/proc/loadavg): {open('/proc/loadavg').read().strip()}")
P("")
P("Notes:")
P("- nginx always answers `\"id\":1`, so rpcbench runs against it with `--fixed-id 1` (it sends id 1 and checks that "
  "id 1 comes back); every response is still classified in full. wrk and oha do not look at the body.")
P("- Case 2 is bound by the mock solana node on core 0 (all three generators reach about the same req/s); "
  "there the meaningful comparison is CPU µs/req and RSS.")
P("- /usr/bin/time has 10 ms resolution for user/sys.")
P("")

tools = ["rpcbench", "wrk", "oha"]
P("## 1. Closed loop, small responses\n")
P("| target | conns | tool | req/s | p50 µs | p99 µs | CPU µs/req | peak RSS MB | errors (sum of runs) |")
P("|---|---|---|---:|---:|---:|---:|---:|---:|")
for target in ("nginx", "static"):
    for c in ("64", "256"):
        for t in tools:
            k = ("closed", target, t, c)
            if k not in runs: continue
            P(f"| {target} | {c} | {t} | {fmt(med(k,'rate'))} | {fmt(med(k,'p50'))} | {fmt(med(k,'p99'))} | "
              f"{fmt(med(k,'cpu_us'),2)} | {fmt(med(k,'rss_mb'),1)} | {fmt(total(k,'errs'))} |")
P("\n`nginx` = nginx 1 worker returning the static body; `static` = `rpcbench serve --chain static --threads 1`.\n")

P("## 2. Closed loop, large responses (solana mock getBlock, full transactions, 64 connections)\n")
if meta.get("block_bytes"): P(f"Slot {meta.get('slot')}, response size {meta.get('block_bytes')} bytes.\n")
P("| tool | req/s | p50 µs | p99 µs | CPU µs/req | peak RSS MB | errors (sum of runs) |")
P("|---|---:|---:|---:|---:|---:|---:|")
for t in tools:
    k = ("large", "solana", t, "64")
    if k not in runs: continue
    P(f"| {t} | {fmt(med(k,'rate'))} | {fmt(med(k,'p50'))} | {fmt(med(k,'p99'))} | {fmt(med(k,'cpu_us'),2)} | "
      f"{fmt(med(k,'rss_mb'),1)} | {fmt(total(k,'errs'))} |")
P("")

h2keys = sorted({k for k in runs if k[0] == "h2"})
if h2keys:
    P("## 6. HTTP/2 cleartext (h2c), closed loop, connections x streams\n")
    P("rpcbench `--h2c -c C --streams S --threads 1` against h2load `-c C -m S -t 1`, same core, same duration. "
      "h2load prints no percentiles (min/max/mean only), so its p50/p99 are empty.\n")
    P("| target | C x S | tool | req/s | p50 µs | p99 µs | CPU µs/req | peak RSS MB | errors (sum of runs) |")
    P("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for target in ("nginx", "static"):
        for k in [k for k in h2keys if k[1] == target]:
            P(f"| {target} | {k[3]} | {k[2]} | {fmt(med(k,'rate'))} | {fmt(med(k,'p50'))} | {fmt(med(k,'p99'))} | "
              f"{fmt(med(k,'cpu_us'),2)} | {fmt(med(k,'rss_mb'),1)} | {fmt(total(k,'errs'))} |")
        rk = [k for k in h2keys if k[1] == target and k[2] == "rpcbench-h2"]
        hk = [k for k in h2keys if k[1] == target and k[2] == "h2load"]
        if rk and hk:
            P(f"\n{target}: rpcbench / h2load req/s {fmt(ratio(med(rk[0],'rate'), med(hk[0],'rate')),2)}x, "
              f"CPU µs/req {fmt(ratio(med(rk[0],'cpu_us'), med(hk[0],'cpu_us')),2)}x.\n")
    P("`nginx` = nginx 1 worker, `listen ... http2` (h2c with prior knowledge); `static` = `rpcbench serve --chain static "
      "--threads 1` (h2c on its HTTP/1.1 port).\n")

wskeys = sorted({k for k in runs if k[0] == "ws"})
if wskeys:
    P("## 7. WebSocket against HTTP/1.1 on the same node (static mock), closed loop\n")
    P("`rpcbench` = HTTP/1.1 with 64 connections; `rpcbench-ws` = the same requests over WebSocket, "
      "SOCKETSxIN_FLIGHT (64x1: 64 sockets, one request in flight each; 16x4: 16 sockets, 4 each).\n")
    P("| tool | load | req/s | p50 µs | p99 µs | CPU µs/req | peak RSS MB | errors (sum of runs) |")
    P("|---|---|---:|---:|---:|---:|---:|---:|")
    for k in wskeys:
        P(f"| {k[2]} | {k[3]} | {fmt(med(k,'rate'))} | {fmt(med(k,'p50'))} | {fmt(med(k,'p99'))} | "
          f"{fmt(med(k,'cpu_us'),2)} | {fmt(med(k,'rss_mb'),1)} | {fmt(total(k,'errs'))} |")
    base = ("ws", "static", "rpcbench", "64")
    for k in wskeys:
        if k[2] == "rpcbench-ws" and base in runs:
            P(f"\nWebSocket {k[3]} / HTTP/1.1 64: req/s {fmt(ratio(med(k,'rate'), med(base,'rate')),2)}x, "
              f"CPU µs/req {fmt(ratio(med(k,'cpu_us'), med(base,'cpu_us')),2)}x.")
    P("")

P("## 3. Open loop against nginx (latency corrected)\n")
P("| target req/s | tool | achieved req/s | achieved/target | p50 µs | p99 µs | CPU µs/req | peak RSS MB | errors (sum) |")
P("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
rates = sorted({k[3] for k in runs if k[0] == "open"}, key=int)
for r in rates:
    for t in ("rpcbench", "wrk2", "oha"):
        k = ("open", "nginx", t, r)
        if k not in runs: continue
        a = med(k, "rate")
        P(f"| {int(r):,} | {t} | {fmt(a)} | {fmt(ratio(a, int(r)),4)} | {fmt(med(k,'p50'))} | {fmt(med(k,'p99'))} | "
          f"{fmt(med(k,'cpu_us'),2)} | {fmt(med(k,'rss_mb'),1)} | {fmt(total(k,'errs'))} |")
P("")

# rpcbench's own open-loop bookkeeping (row i of results.tsv is run{i}.out)
extra = []
for i, line in enumerate(open(os.path.join(work, "results.tsv")), 1):
    f = line.rstrip("\n").split("\t")
    if f[0] == "open" and f[2] == "rpcbench":
        try:
            import json
            j = json.load(open(os.path.join(work, f"run{i}.out")))
            sl = j.get("send_lag") or {}
            extra.append((f[3], f[4], j["requests"]["total"], j["duration_us"], j["elapsed_us"], j["requests"]["late"],
                          j["requests"]["unsent"], sl.get("mean_us"), (sl.get("percentiles") or {}).get("p99"),
                          j["latency_uncorrected"]["percentiles"]["p99"], j["outcomes"]["invalid"]))
        except Exception as ex:
            extra.append((f[3], f[4], "n/a", str(ex), "", "", "", "", "", "", ""))
if extra:
    P("rpcbench open-loop details per run (`requests.rate` = total / elapsed_us, and elapsed includes draining after the last send; "
      "sent/duration = total / duration_us):\n")
    P("| target | rep | total | sent/duration | elapsed µs | late | unsent | send lag mean µs | send lag p99 µs | p99 uncorrected µs | invalid |")
    P("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for e in extra:
        sd = fmt(e[2] / e[3] * 1e6) if isinstance(e[2], int) else "n/a"
        P(f"| {e[0]} | {e[1]} | {e[2]} | {sd} | {e[4]} | {e[5]} | {e[6]} | {e[7]} | {e[8]} | {e[9]} | {e[10]} |")
    P("")

P("## 4. Memory over time (rpcbench, closed loop, 64 connections, nginx)\n")
mem = {}
mp = os.path.join(work, "memory.txt")
if os.path.exists(mp):
    for line in open(mp):
        if "=" in line:
            k, v = line.strip().split("=", 1); mem[k] = v
rss1 = float(mem.get("rss_at_sample_kb", "nan")); rssend = float(mem.get("rss_end_kb", "nan"))
growth = (rssend - rss1) / 1024
P(f"| duration | VmRSS at {meta.get('sample_at')}s | VmRSS at end ({mem.get('end_s','?')}s) | growth | VmHWM | requests | errors |")
P("|---:|---:|---:|---:|---:|---:|---:|")
P(f"| {meta.get('long')}s | {fmt(rss1/1024,2)} MB | {fmt(rssend/1024,2)} MB | {fmt(growth,2)} MiB | "
  f"{fmt(float(mem.get('hwm_kb','nan'))/1024,2)} MB | {mem.get('requests','n/a')} | {mem.get('errors','n/a')} |")
if mem.get("series"): P(f"\nVmRSS samples (s:KB): {mem['series']}")
P("")

P("## 5. Server comparison (wrk -t1 -c64 on core 1, server on core 0)\n")
P("Same measurement as the wrk rows at 64 connections in case 1 (identical setup), not run twice.\n")
ws = med(("closed", "static", "wrk", "64"), "rate"); wn = med(("closed", "nginx", "wrk", "64"), "rate")
P("wrk is itself CPU-bound near 100k req/s on one core, so the req/s column measures wrk about as much as the "
  "servers. The server's own CPU per request (user + system from /proc/PID/stat of the server and its workers, "
  "during the same runs) says how many requests one core of each serves; `bench/serve_cost.sh` adds instruction "
  "and system-call counts (bench/ANALYSIS.md).\n")
# The servers' own CPU per request during those wrk runs (bench/run.sh samples /proc/PID/stat).
srv = {}
path = os.path.join(work, "server_cpu.tsv")
if os.path.exists(path):
    for i, line in enumerate(open(path)):
        f = line.rstrip("\n").split("\t")
        srv[tuple(f[:5])] = float(f[5])
def server_us(target):
    vals = []
    for line in open(os.path.join(work, "results.tsv")):
        f = line.rstrip("\n").split("\t")
        if f[0] == "closed" and f[1] == target and f[2] == "wrk" and f[3] == "64" and tuple(f[:5]) in srv:
            reqs = float(f[8])
            if reqs > 0: vals.append(srv[tuple(f[:5])] / reqs * 1e6)
    return statistics.median(vals) if vals else float("nan")
ss, sn = server_us("static"), server_us("nginx")
P("| server | req/s (median) | server CPU µs/req (median) | requests per second of one core |")
P("|---|---:|---:|---:|")
P(f"| rpcbench serve --chain static --threads 1 | {fmt(ws)} | {fmt(ss,2)} | {fmt(1e6/ss if ss == ss else ss)} |")
P(f"| nginx, 1 worker | {fmt(wn)} | {fmt(sn,2)} | {fmt(1e6/sn if sn == sn else sn)} |")
P("")

P("## Ratios and goals\n")
P("| goal | measured | result |")
P("|---|---|---|")
def goal(name, val, ok, shown=None):
    res = "n/a" if (isinstance(val, float) and math.isnan(val)) else ("met" if ok(val) else "missed")
    P(f"| {name} | {shown if shown is not None else fmt(val,3) + 'x'} | {res} |")
for target in ("nginx", "static"):
    for c in ("64", "256"):
        r = ratio(med(("closed", target, "rpcbench", c), "rate"), med(("closed", target, "wrk", c), "rate"))
        goal(f"closed loop req/s rpcbench/wrk ≥ 1.0 ({target}, c={c})", r, lambda v: v >= 1.0)
for target in ("nginx", "static"):
    for c in ("64", "256"):
        r = ratio(med(("closed", target, "rpcbench", c), "rate"), med(("closed", target, "oha", c), "rate"))
        goal(f"closed loop req/s rpcbench/oha ≥ 1.5 ({target}, c={c})", r, lambda v: v >= 1.5)
for (case, target, c, lab) in (("closed", "nginx", "64", "small, nginx c=64"), ("closed", "nginx", "256", "small, nginx c=256"),
                               ("closed", "static", "64", "small, static c=64"), ("closed", "static", "256", "small, static c=256"),
                               ("large", "solana", "64", "large, getBlock c=64")):
    a = med((case, target, "rpcbench", c), "cpu_us"); b = med((case, target, "wrk", c), "cpu_us")
    goal(f"CPU µs/req rpcbench ≤ wrk ({lab})", ratio(a, b), lambda v: v <= 1.0,
         f"{fmt(a,2)} vs {fmt(b,2)} µs ({fmt(ratio(a,b),3)}x)")
for r in rates:
    a = med(("open", "nginx", "rpcbench", r), "rate")
    v = ratio(a, int(r))
    goal(f"open loop achieved within 1% of {int(r):,} req/s (rpcbench)", v, lambda x: abs(x - 1) <= 0.01,
         f"{fmt(a)} req/s ({fmt(v,4)}x)")
for r in rates:
    a = med(("open", "nginx", "rpcbench", r), "cpu_us"); b = med(("open", "nginx", "wrk2", r), "cpu_us")
    if b == b:  # wrk2 ran
        goal(f"open loop CPU µs/req rpcbench ≤ wrk2 ({int(r):,} req/s)", ratio(a, b), lambda v: v <= 1.0,
             f"{fmt(a,2)} vs {fmt(b,2)} µs ({fmt(ratio(a,b),3)}x)")
for r in rates:
    a = med(("open", "nginx", "rpcbench", r), "cpu_us"); b = med(("open", "nginx", "oha", r), "cpu_us")
    goal(f"open loop CPU µs/req rpcbench ≤ 0.5x oha ({int(r):,} req/s)", ratio(a, b), lambda v: v <= 0.5,
         f"{fmt(a,2)} vs {fmt(b,2)} µs ({fmt(ratio(a,b),3)}x)")
goal(f"RSS growth ≤ 5 MiB between {meta.get('sample_at')}s and end", growth, lambda v: v <= 5.0, f"{fmt(growth,2)} MiB")
for (case, target, c, lab) in (("closed", "nginx", "64", "nginx c=64"), ("closed", "nginx", "256", "nginx c=256"),
                               ("large", "solana", "64", "getBlock c=64")):
    a = med((case, target, "rpcbench", c), "rss_mb"); b = med((case, target, "oha", c), "rss_mb")
    goal(f"peak RSS rpcbench ≤ 0.1x oha ({lab})", ratio(a, b), lambda v: v <= 0.1,
         f"{fmt(a,1)} vs {fmt(b,1)} MB ({fmt(ratio(a,b),3)}x)")
goal("static serve ≥ 1.0x nginx req/s (wrk -t1 -c64)", ratio(ws, wn), lambda v: v >= 1.0)
goal("static serve ≥ 1.0x nginx requests per second of one core (server CPU µs/req, wrk -c64)",
     ratio(sn, ss), lambda v: v >= 1.0, f"{fmt(ss,2)} vs {fmt(sn,2)} µs ({fmt(ratio(sn,ss),3)}x)")
P("")

P("For every goal missed, bench/ANALYSIS.md gives the measured ratio and what the profile says stands in the way.\n")
P("## Raw runs\n")
P("| case | target | tool | load | rep | req/s | p50 µs | p99 µs | requests | errors | CPU s | RSS KB |")
P("|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
for line in open(os.path.join(work, "results.tsv")):
    f = line.rstrip("\n").split("\t")
    P("| " + " | ".join(f[:5] + [fmt(float(x), 2 if i == 10 else 0) for i, x in enumerate(f[5:], 5)]) + " |")
P("")
P("## Exact commands\n")
P("```")
P(open(os.path.join(work, "commands.txt")).read().rstrip())
P("```")
open(outpath, "w").write("\n".join(L) + "\n")
print(f"wrote {outpath}")
