#!/usr/bin/env python3
"""bench/edge_query.py — the edge's local flame graph over 1 M buffered
samples of eBPF shape (run by bench/edge_query.sh, which starts wt-edge).

Fills the edge through its own upload API with folded profiles: one upload
per (minute, host) over BENCH_MINUTES minutes (default 60) and 4 hosts,
1,000,000 samples in all, drawn Zipf-like from a pool of 2,000 stacks 12-40
frames deep over 3,000 function names (eBPF-like: few stacks repeated many
times). Then times GET /v1/projects/bench/profiles/flamegraph over the
whole range, BENCH_QUERIES times (default 15) on one keep-alive connection,
and prints the median and p99 beside the same query on the edge's per-minute
rows path (`edge.query_aggregates = false`, a second edge on a copy of the
same data dir, measured in the same run) and the ratio between them.

Usage: edge_query.py fill PORT | query PORT LABEL"""
import http.client
import json
import os
import random
import sys
import time

MINUTES = int(os.environ.get("BENCH_MINUTES", "60"))
HOSTS = 4
TOTAL = int(os.environ.get("BENCH_SAMPLES", "1000000"))
# the first minute: recent enough for the edge's retention (rollup_days),
# the same for fill and query (bench/edge_query.sh exports it)
T0 = int(os.environ.get("BENCH_T0", str(int(time.time()) // 60 * 60 - (MINUTES + 1) * 60)))


def pool():
    rng = random.Random(7)
    names = []
    for i in range(3000):
        kind = i % 3
        if kind == 0:
            names.append(f"github.com/acme/svc/internal/pkg{i % 37}.(*Handler{i % 11}).Serve{i}")
        elif kind == 1:
            names.append(f"libc.so.6`__libc_func_{i}")
        else:
            names.append(f"[kernel] do_syscall_{i}")
    roots = names[:20]
    stacks = []
    for s in range(2000):
        depth = rng.randint(12, 40)
        st = [rng.choice(roots)] + [rng.choice(names) for _ in range(depth - 1)]
        stacks.append(";".join(st))
    # Zipf-like weights: a few stacks dominate, as with a steady service
    weights = [1.0 / (k + 1) ** 1.1 for k in range(len(stacks))]
    return stacks, weights


def fill(port):
    stacks, weights = pool()
    rng = random.Random(11)
    per = TOTAL // (MINUTES * HOSTS)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    total = 0
    for m in range(MINUTES):
        for h in range(HOSTS):
            n = per if (m, h) != (MINUTES - 1, HOSTS - 1) else TOTAL - per * (MINUTES * HOSTS - 1)
            counts = {}
            for s in rng.choices(range(len(stacks)), weights=weights, k=n):
                counts[s] = counts.get(s, 0) + 1
            body = "".join(f"{stacks[s]} {c}\n" for s, c in counts.items()).encode()
            frm = T0 + m * 60
            conn.request("POST", f"/v1/profiles?format=folded&service=svc&from={frm}&until={frm + 59}"
                         f"&label.host=h{h}", body=body,
                         headers={"Authorization": "Bearer bench-up"})
            r = conn.getresponse()
            out = r.read()
            if r.status != 200:
                sys.exit(f"edge_query: upload failed: {r.status} {out[:200]!r}")
            total += n
    print(f"  filled: {total} samples in {MINUTES * HOSTS} uploads ({MINUTES} minutes x {HOSTS} hosts)")


def query(port, label):
    q = int(os.environ.get("BENCH_QUERIES", "15"))
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    path = (f"/v1/projects/bench/profiles/flamegraph?service=svc&from={T0}"
            f"&until={T0 + MINUTES * 60 - 1}")
    times, total = [], None
    for i in range(q + 1):
        t = time.perf_counter()
        conn.request("GET", path, headers={"Authorization": "Bearer bench-read"})
        r = conn.getresponse()
        body = r.read()
        dt = time.perf_counter() - t
        if r.status != 200:
            sys.exit(f"edge_query: query failed: {r.status} {body[:200]!r}")
        j = json.loads(body)
        total = j.get("total")
        if i:  # the first one warms the caches
            times.append(dt)
    times.sort()
    med = times[len(times) // 2] if len(times) % 2 else (times[len(times) // 2 - 1] + times[len(times) // 2]) / 2
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
    print(f"  {label:<34} median {med * 1e3:8.1f} ms  p99 {p99 * 1e3:8.1f} ms  total {total}")
    return med


if __name__ == "__main__":
    if sys.argv[1] == "fill":
        fill(int(sys.argv[2]))
    else:
        m = query(int(sys.argv[2]), sys.argv[3])
        with open(os.environ.get("BENCH_OUT", "/dev/null"), "a") as f:
            f.write(f"{sys.argv[3]} {m}\n")
