#!/usr/bin/env bash
# bench/pyroscope_api.sh — latency of Pyroscope's SelectMergeStacktraces
# (Connect, application/proto) on the hub against the hub's own
# /profiles/flamegraph for the same selection and node budget, measured in
# the same run: the ratio is the cost of the Pyroscope layer (selector
# parsing, tree → levels re-encoding, protobuf). Data: the corpus' largest
# pprof (google-pprof__large.cpu.pb.gz) uploaded BENCH_UPLOADS times (default
# 20) under distinct hosts. Starts its own private ClickHouse and hub on
# free loopback ports and stops them. BENCH_RUNS (default 15) per query.
set -euo pipefail
cd "$(dirname "$0")/.."
export WT_ROOT=$PWD BUILD=${BUILD:-build}
export WT_BIN=${WT_BIN:-$PWD/$BUILD/bin}
exec python3 - "$@" <<'PY'
import os, statistics, sys, time, urllib.parse, urllib.request
sys.path.insert(0, os.path.join(os.environ["WT_ROOT"], "tests", "integration"))
from harness.clickhouse import ClickHouse
from harness.hub import CORPUS, Hub

UPLOADS = int(os.environ.get("BENCH_UPLOADS", 20))
RUNS = int(os.environ.get("BENCH_RUNS", 15))
T0 = (int(time.time()) - 7200) // 600 * 600

def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)

def field(num, wt, payload):
    return varint(num << 3 | wt) + payload

def request(type_id, selector, start_ms, end_ms, max_nodes):
    s = lambda n, v: field(n, 2, varint(len(v)) + v.encode())  # noqa: E731
    return (s(1, type_id) + s(2, selector) + field(3, 0, varint(start_ms)) + field(4, 0, varint(end_ms))
            + field(5, 0, varint(max_nodes)))

def timed2(f, g):
    """medians of f and g, called alternately (a shared machine's load
    then weighs on both alike)"""
    f(), g()  # warm
    xs, ys = [], []
    for _ in range(RUNS):
        for fn, acc in ((f, xs), (g, ys)):
            t = time.perf_counter()
            fn()
            acc.append(time.perf_counter() - t)
    return statistics.median(xs), statistics.median(ys)

ch = ClickHouse(None).start()
hub = Hub(None, ch)
try:
    hub.start()
    hub.create_project("bench")
    up, rd = hub.create_token("bench", "upload"), hub.create_token("bench", "read")
    data = open(os.path.join(CORPUS, "pprof", "google-pprof__large.cpu.pb.gz"), "rb").read()
    for i in range(UPLOADS):
        st, js = hub.upload(data, up, "big", format="pprof", **{"from": str(T0 + 60 * i), "label.host": f"h{i}"})
        assert st == 200, js
    body = request("process_cpu:cpu:nanoseconds:cpu:nanoseconds", '{service_name="big", host=~"h.*"}',
                   T0 * 1000, (T0 + 3600) * 1000, 2048)
    def pyro():
        r = urllib.request.Request(hub.url + "/querier.v1.QuerierService/SelectMergeStacktraces", data=body,
                                   headers={"Content-Type": "application/proto", "Authorization": "Bearer " + rd})
        with urllib.request.urlopen(r, timeout=120) as resp:
            assert resp.status == 200
            return len(resp.read())
    qs = urllib.parse.urlencode({"service": "big", "type": "cpu", "from": T0, "until": T0 + 3600,
                                 "max_nodes": 2048})
    def ours():
        r = urllib.request.Request(hub.url + "/v1/projects/bench/profiles/flamegraph?" + qs,
                                   headers={"Authorization": "Bearer " + rd})
        with urllib.request.urlopen(r, timeout=120) as resp:
            assert resp.status == 200
            return len(resp.read())
    a, b = timed2(ours, pyro)
    print(f"uploads={UPLOADS} runs={RUNS} max_nodes=2048")
    print(f"flamegraph (ours)          median {a * 1000:8.1f} ms  ({ours()} bytes JSON)")
    print(f"SelectMergeStacktraces     median {b * 1000:8.1f} ms  ({pyro()} bytes protobuf)")
    print(f"ratio pyroscope/ours       {b / a:.2f}x")
finally:
    hub.cleanup()
    ch.cleanup()
PY
