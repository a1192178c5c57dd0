#!/usr/bin/env bash
# bench/repl_backlog.sh — how fast an edge drains a backlog after a hub
# outage, against how fast uploads arrive. With the hub stopped, an edge
# accepts BENCH_BACKLOG_UPLOADS (default 200) uploads of a real 3.2 MB
# folded profile (the chaos soak's file; 16 variants with perturbed counts)
# from 4 client threads: that is the
# arrival rate. Then the hub starts and the drain is timed until the hub's
# total equals the awk sum of the uploads. Prints drain/arrival (above 1 =
# an edge catches up while uploads keep coming), batches, the CPU seconds
# of edge, hub and ClickHouse during the drain and where the hub's apply
# time went (its "batch applied" log fields).
# BENCH_BASELINE_BIN=DIR (a bin/ directory of another build, e.g. main)
# runs the same backlog with those binaries first and prints new/old.
# Starts a private ClickHouse, a hub with mTLS and an edge on loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
export WT_ROOT=$PWD BUILD=${BUILD:-build}
export WT_BIN=${WT_BIN:-$PWD/$BUILD/bin}
exec python3 - "$@" <<'PY'
import os, re, shutil, subprocess, sys, tempfile, threading, time
sys.path.insert(0, os.path.join(os.environ["WT_ROOT"], "tests", "integration"))
import harness.edge
import harness.hub
from harness.clickhouse import ClickHouse
from harness.edge import Edge
from harness.hub import Hub, CORPUS

N = int(os.environ.get("BENCH_BACKLOG_UPLOADS", 200))
SRC = os.path.join(CORPUS, "folded/cargo-flamegraph__rust-rayon-stacks.folded")
with open(SRC) as f:
    src = [line.rsplit(None, 1) for line in f.read().splitlines() if line.strip()]
nsamples = len(src)


def variant(i):
    """Upload i: the real file with each count raised by (i*7 + line) % 5, so
    uploads differ like successive profiles of one service (identical bodies
    would let zstd shrink a batch unrealistically)."""
    return "".join(f"{st} {int(c) + (i * 7 + k) % 5}\n" for k, (st, c) in enumerate(src)).encode()


VARIANTS = [variant(i) for i in range(16)]
data = VARIANTS[0]
vdir = tempfile.mkdtemp(prefix="wt-bench-backlog-")
VTOTAL = []
for i, body in enumerate(VARIANTS):  # the expected totals, summed by awk
    path = os.path.join(vdir, f"v{i}.folded")
    with open(path, "wb") as f:
        f.write(body)
    VTOTAL.append(int(subprocess.run(["awk", "{s+=$NF} END {printf \"%d\", s}", path], check=True,
                                     capture_output=True, text=True).stdout))
shutil.rmtree(vdir)
TCK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        st = f.read().rsplit(")", 1)[1].split()
    return (int(st[11]) + int(st[12])) / TCK


def run(bindir):
    harness.edge.BIN = harness.hub.BIN = bindir
    wtctl = os.path.join(bindir, "wtctl")
    pki = tempfile.mkdtemp(prefix="wt-bench-pki-")
    ch = ClickHouse().start()
    hub = edge = None
    try:
        subprocess.run([wtctl, "pki", "init", "--dir", pki], check=True, capture_output=True)
        subprocess.run([wtctl, "pki", "issue-edge", "--ca", pki, "--edge-id", "bl-edge"], check=True,
                       capture_output=True)
        hub = Hub(None, ch, pki=pki).start()
        hub.create_project("demo")
        rd = hub.create_token("demo", "read")
        hub.allow_edge("bl-edge")
        edge = Edge(None, edge_id="bl-edge",
                    hub={"url": hub.repl_url, "ca": f"{pki}/ca.crt", "cert": f"{pki}/bl-edge.crt",
                         "key": f"{pki}/bl-edge.key"},
                    replication="backoff_initial_ms = 50; backoff_max_ms = 200; " + os.environ.get("BENCH_REPL_EXTRA", ""))
        hub.stop()
        edge.start()
        left = [N]
        lock = threading.Lock()

        def client():
            while True:
                with lock:
                    if not left[0]:
                        return
                    left[0] -= 1
                    i = left[0]
                st, body = edge.upload(VARIANTS[i % 16], service="backlog", format="folded")
                assert st == 200, body

        t = time.perf_counter()
        threads = [threading.Thread(target=client) for _ in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        accept_s = time.perf_counter() - t
        hub.start()
        pids = {"edge": edge.proc.pid, "hub": hub.proc.pid, "clickhouse": ch.pid}
        c0 = {k: cpu_s(p) for k, p in pids.items()}
        t = time.perf_counter()
        want, got = sum(VTOTAL[i % 16] for i in range(N)), None
        while got != want:
            if time.perf_counter() - t > 1200:
                raise SystemExit(f"backlog: hub total {got} never reached {want}")
            time.sleep(0.1)
            st, js = hub.query("demo", "table", rd, service="backlog",
                               **{"from": "0", "until": str(int(time.time()) + 3600)})
            got = js.get("total") if st == 200 else None
        drain_s = time.perf_counter() - t
        cpu = {k: cpu_s(p) - c0[k] for k, p in pids.items()}
        m = edge.metrics()
        phases = {k: 0.0 for k in ("ms", "ledger_ms", "prepare_ms", "objstore_ms", "objstore_wait_ms", "insert_ms")}
        for line in hub.read_log().splitlines():
            if 'msg="batch applied"' in line:
                for k in phases:
                    mm = re.search(r"\b" + k + r"=([0-9.]+)", line)
                    phases[k] += float(mm.group(1)) if mm else 0
        return accept_s, drain_s, cpu, m, phases
    finally:
        if edge:
            edge.cleanup()
        if hub:
            hub.cleanup()
        ch.cleanup()
        shutil.rmtree(pki, ignore_errors=True)


def report(name, r):
    accept_s, drain_s, cpu, m, ph = r
    batches = m.get("wt_edge_repl_batches_sent_total", 0) or 1
    print(f"{name}: arrival {N / accept_s:6.1f} uploads/s, drain {N / drain_s:6.1f} uploads/s"
          f" ({N * nsamples / drain_s:,.0f} samples/s, {batches / drain_s:.1f} batches/s,"
          f" {N / batches:.1f} uploads/batch) -> drain/arrival {accept_s / drain_s:.2f}")
    print(f"{name}: CPU s during the {drain_s:.1f} s drain: "
          + ", ".join(f"{k} {v:.1f}" for k, v in cpu.items()))
    if ph["ms"]:
        print(f"{name}: hub apply {ph['ms'] / 1000:.1f} s: ledger {ph['ledger_ms'] / 1000:.1f},"
              f" prepare {ph['prepare_ms'] / 1000:.1f}, object store {ph['objstore_ms'] / 1000:.1f}"
              f" (waited for {ph['objstore_wait_ms'] / 1000:.1f}), inserts {ph['insert_ms'] / 1000:.1f}")


print(f"backlog: {N} uploads of {os.path.basename(SRC)} ({len(data):,} B, {nsamples} samples each)")
base = os.environ.get("BENCH_BASELINE_BIN")
old = run(base) if base else None
new = run(os.environ["WT_BIN"])
if old:
    report("baseline", old)
report("this build", new)
if old:
    print(f"drain new/old: {old[1] / new[1]:.2f}")
PY
