#!/usr/bin/env bash
# bench/repl_throughput.sh — edge → hub replication throughput for a large
# backlog, and bytes on the wire per replicated sample / per original byte.
# An edge accepts BENCH_UPLOADS (default 400) real folded uploads while the
# hub is stopped; then the hub starts and the drain is timed until the hub's
# total equals the sum of the uploads. Baseline measured in the same run:
# the same uploads POSTed straight to the hub's /v1/profiles (direct ingest),
# so the ratio says what replication costs over direct ingest.
# Peak (VmHWM) and current RSS of the hub and the edge are printed after
# direct ingest and after the drain, and again 10 s later (steady).
# Starts a private ClickHouse, a hub with mTLS and an edge on loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
export WT_ROOT=$PWD BUILD=${BUILD:-build}
export WT_BIN=${WT_BIN:-$PWD/$BUILD/bin}
exec python3 - "$@" <<'PY'
import os, shutil, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.join(os.environ["WT_ROOT"], "tests", "integration"))
from harness.clickhouse import ClickHouse
from harness.edge import Edge
from harness.hub import Hub, CORPUS

N = int(os.environ.get("BENCH_UPLOADS", 400))
SRC = os.path.join(CORPUS, "folded/flamegraph__perf-vertx-java-collapsed-all.txt")
src = [l.rsplit(None, 1) for l in open(SRC).read().splitlines() if l.strip()]
lines = len(src)

def variant(i):
    """Upload i: the real file with each count raised by (i*7 + line) % 5, so
    uploads differ like successive profiles of one service (identical
    bodies would let zstd shrink a batch unrealistically)."""
    body = "".join(f"{st} {int(c) + (i * 7 + k) % 5}\n" for k, (st, c) in enumerate(src))
    return body.encode(), sum(int(c) + (i * 7 + k) % 5 for k, (st, c) in enumerate(src))

uploads = [variant(i) for i in range(N)]
expected = sum(t for _, t in uploads)
orig_bytes = sum(len(b) for b, _ in uploads)
wtctl = os.path.join(os.environ["WT_BIN"], "wtctl")
pki = tempfile.mkdtemp(prefix="wt-bench-pki-")
ch = ClickHouse().start()
hub = edge = None

def rss(proc):
    """peak (VmHWM) and current (VmRSS) RSS of a daemon in MB, from /proc"""
    out = {}
    with open(f"/proc/{proc.pid}/status") as f:
        for line in f:
            if line.startswith(("VmHWM:", "VmRSS:")):
                out[line[:5]] = int(line.split()[1]) / 1024
    return f"peak {out.get('VmHWM', 0):.0f} MB, now {out.get('VmRSS', 0):.0f} MB"

def total(h, tok, svc):
    st, js = h.query("demo", "table", tok, service=svc, **{"from": "0", "until": str(int(time.time()) + 3600)})
    return js["total"] if st == 200 else None

def wait_total(h, tok, svc, want, timeout=600):
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        if total(h, tok, svc) == want:
            return time.perf_counter() - t0
        time.sleep(0.1)
    raise SystemExit(f"{svc}: hub total never reached {want}")

try:
    subprocess.run([wtctl, "pki", "init", "--dir", pki], check=True, capture_output=True)
    subprocess.run([wtctl, "pki", "issue-edge", "--ca", pki, "--edge-id", "bench-edge"], check=True,
                   capture_output=True)
    hub = Hub(None, ch, pki=pki).start()
    hub.create_project("demo")
    rd, up = hub.create_token("demo", "read"), hub.create_token("demo", "upload")

    # baseline: direct ingest at the hub, one client, same uploads
    t = time.perf_counter()
    for data, _ in uploads:
        st, js = hub.upload(data, up, "direct", format="folded")
        assert st == 200, js
    direct_s = time.perf_counter() - t
    rss_direct = rss(hub.proc)
    time.sleep(10)
    rss_direct_quiet = rss(hub.proc)

    hub.allow_edge("bench-edge")
    edge = Edge(None, edge_id="bench-edge",
                hub={"url": hub.repl_url, "ca": f"{pki}/ca.crt", "cert": f"{pki}/bench-edge.crt",
                     "key": f"{pki}/bench-edge.key"},
                replication="backoff_initial_ms = 50; backoff_max_ms = 200; interval_ms = 50;")
    hub.stop()
    edge.start()
    for data, _ in uploads:
        st, body = edge.upload(data, service="repl", format="folded")
        assert st == 200, body
    m0 = edge.metrics()
    backlog = m0.get("wt_edge_repl_backlog_uploads", 0)
    hub.start()
    drain_s = wait_total(hub, rd, "repl", expected)
    rss_drain = (rss(edge.proc), rss(hub.proc))
    time.sleep(10)
    rss_quiet = (rss(edge.proc), rss(hub.proc))
    m = edge.metrics()
    wire = m.get("wt_edge_repl_bytes_sent_total", 0)
    raw = m.get("wt_edge_repl_bytes_uncompressed_total", 0)
    samples = N * lines
    print(f"backlog: {int(backlog)} uploads, {samples} distinct samples ({expected} sample counts)")
    print(f"direct ingest at the hub : {N / direct_s:8.1f} uploads/s  {samples / direct_s:10.0f} samples/s")
    print(f"replication drain        : {N / drain_s:8.1f} uploads/s  {samples / drain_s:10.0f} samples/s")
    print(f"ratio drain/direct       : {direct_s / drain_s:.2f}")
    print(f"hub RSS after direct ingest : {rss_direct}; 10 s later {rss_direct_quiet}")
    print(f"edge RSS after the drain    : {rss_drain[0]}; 10 s later {rss_quiet[0]}")
    print(f"hub RSS after the drain     : {rss_drain[1]}; 10 s later {rss_quiet[1]}")
    if wire:
        print(f"bytes on the wire        : {wire / samples:.1f} B per sample, {wire / orig_bytes:.3f} B per original byte"
              f" (uncompressed batches {raw / orig_bytes:.3f} B per original byte)")
finally:
    if edge:
        edge.cleanup()
    if hub:
        hub.cleanup()
    ch.cleanup()
    shutil.rmtree(pki, ignore_errors=True)
PY
