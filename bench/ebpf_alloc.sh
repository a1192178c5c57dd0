#!/usr/bin/env bash
# bench/ebpf_alloc.sh — cost of the edge's native allocation sampling
# (bpf/alloc.bpf.c, edge/ebpf_alloc.c) on a malloc-heavy loop:
# tests/gen/allocwork `loop N` (N malloc(64)/free pairs, one thread), its
# process CPU time per pair
#   none       no probes
#   ours       an edge with ebpf.alloc = true (default 512 KiB sampling
#              interval), the loop's process sampled: uprobes on malloc,
#              calloc, realloc and free, uretprobes on the first three —
#              what a sampled service pays per malloc/free pair
#   ours, alloc_inuse = false  the same with the entry probes only (no
#              returns, no free): the loop hits the malloc entry probe,
#              the probe perf's has below
#   perf       perf's own uprobe on the same function: `perf probe -x LIBC
#              malloc` + `perf record -e probe_libc:malloc` (every call
#              recorded; tracefs mounted in a private mount namespace when
#              the machine has none mounted, as the edge's lock probe does)
#   perf, ours' probe points  the same with the points ours hits with the
#              in-use snapshot: malloc, malloc%return and free (at the
#              offset the edge logs as free_offset, past the instruction
#              the kernel would single-step) — the peer of "ours (all
#              probes)"
# and prints each beside none, one run (ALLOC_BENCH_CALLS pairs, default
# 300000). Needs root, BTF and perf; prints "skipped: …" otherwise. Ratios
# only, never fails on time.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export WT_ROOT=$PWD BUILD
if [[ $(id -u) != 0 || ! -r /sys/kernel/btf/vmlinux ]]; then
	echo "ebpf_alloc: skipped: needs root and /sys/kernel/btf/vmlinux"; exit 0
fi
[[ -x $BUILD/bin/wt-edge ]] || { echo "ebpf_alloc: $BUILD/bin/wt-edge missing (make first)"; exit 1; }
exec python3 - "$@" <<'PY'
import json, os, re, shutil, socket, subprocess, sys, tempfile, time, urllib.request

ROOT, BUILD = os.environ["WT_ROOT"], os.environ["BUILD"]
CALLS = int(os.environ.get("ALLOC_BENCH_CALLS", "300000"))
tmp = tempfile.mkdtemp(prefix="wt-alloc-bench-")
work = os.path.join(tmp, "allocwork")
subprocess.run(["cc", "-O2", "-fomit-frame-pointer", "-pthread", "-o", work,
                os.path.join(ROOT, "tests/gen/allocwork/allocwork.c")], check=True)
libc = next((ln.split("=>")[1].split()[0] for ln in subprocess.run(["ldd", work], capture_output=True,
            text=True).stdout.splitlines() if "libc.so" in ln and "=>" in ln), None)


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


def metrics(port):
    out = {}
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line and not line.startswith("#"):
                k, v = line.rsplit(" ", 1)
                out[k] = float(v)
    return out


def loop(prefix=(), go=None):
    r = subprocess.run(list(prefix) + [work, "loop", str(CALLS)] + ([go] if go else []),
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])["cpu_ns_per_pair"]


ours_free_offset = [0]


def ours(inuse=True):
    """loop under an edge with ebpf.alloc = true: its process met by the
    sampler (it spins first) and its libc probed before it starts"""
    d = tempfile.mkdtemp(dir=tmp)
    port = free_port()
    cfg, logf, go = os.path.join(d, "edge.cfg"), os.path.join(d, "log"), os.path.join(d, "go")
    with open(cfg, "w") as f:
        f.write(f'edge = {{ id = "bench"; listen = "127.0.0.1:{port}"; otlp_http_listen = ""; otlp_grpc_listen = ""; '
                f'data_dir = "{d}/data"; default_project = "demo"; }};\n'
                f'projects = ( {{ name = "demo"; upload_tokens = [ "u" ]; read_tokens = [ "r" ]; }} );\n'
                f'ebpf = {{ enabled = true; offcpu = false; lock = false; alloc = true; flush_interval_s = 1; '
                f'alloc_inuse = {"true" if inuse else "false"}; }};\n')
    env = dict(os.environ)
    log = open(logf, "w")
    p = subprocess.Popen([os.path.join(ROOT, BUILD, "bin", "wt-edge"), "--config", cfg], stdout=subprocess.DEVNULL,
                         stderr=log, env=env)
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                if metrics(port).get("wt_edge_ebpf_alloc_files", 0) >= 1:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        else:
            raise RuntimeError("libc not probed: " + open(logf).read()[-1000:])
        res = {}

        def run():
            res["v"] = loop(go=go)
        import threading
        t = threading.Thread(target=run)
        t.start()
        time.sleep(3)  # the spinning loop is sampled on-CPU, met, its pid entered
        with open(go, "w"):
            pass
        t.join()
        m = re.search(r"free_offset=(\d+)", open(logf).read())
        if m:
            ours_free_offset[0] = int(m.group(1))
        time.sleep(2.5)  # a flush: the loop's samples counted
        sampled = metrics(port).get('wt_edge_ebpf_samples_total{probe="alloc"}', 0)
        return res["v"], sampled
    finally:
        p.terminate()
        p.wait(30)
        log.close()


def perf(points=("malloc",)):
    """loop under perf record of uprobes at points (perf probe syntax)"""
    if not shutil.which("perf") or not libc:
        return None, "perf or libc not found"
    events = ",".join("probe_libc:" + re.sub(r"[%+].*", "", pt) + ("__return" if "%return" in pt else "")
                      for pt in points)
    script = (f"set -e; if ! [ -d /sys/kernel/tracing/events ]; then mount --make-rprivate / && "
              f"mount -t tracefs nodev /sys/kernel/tracing; fi; perf probe -q -d 'probe_libc:*' 2>/dev/null || true; "
              + "".join(f"perf probe -q -x {libc} '{pt}'; " for pt in points) +
              f"perf record -q -e {events} -o {tmp}/perf.data -- {work} loop {CALLS}; "
              f"perf probe -q -d 'probe_libc:*'")
    r = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True)
    if r.returncode:
        return None, r.stderr.strip()[-300:]
    return json.loads(r.stdout.strip().splitlines()[-1])["cpu_ns_per_pair"], None


try:
    base = loop()
    full, n_full = ours()
    entry, n_entry = ours(False)
    pv, why = perf()
    off = ours_free_offset[0]
    pf, whyf = perf(("malloc", "malloc%return", f"free+{off}" if off else "free"))
    print(f"ebpf_alloc: process CPU time per malloc(64)/free pair, {CALLS} pairs, one run "
          f"(ratio to no probes)")
    print(f"  none                      {base:8.1f} ns")
    print(f"  ours (all probes)         {full:8.1f} ns  x{full / base:.0f}"
          f"  ({n_full:.0f} allocations sampled on the machine)")
    print(f"  ours, alloc_inuse = false {entry:8.1f} ns  x{entry / base:.0f}")
    if pv is None:
        print(f"  perf probe_libc:malloc    not measured: {why}")
    else:
        print(f"  perf probe_libc:malloc    {pv:8.1f} ns  x{pv / base:.0f}  "
              f"(ours ÷ perf: {full / pv:.2f} with the in-use snapshot, {entry / pv:.2f} without)")
    if pf is None:
        print(f"  perf, ours' probe points  not measured: {whyf}")
    else:
        print(f"  perf, ours' probe points  {pf:8.1f} ns  x{pf / base:.0f}  "
              f"(malloc, malloc%return, free+{off}; ours (all probes) ÷ perf: {full / pf:.2f})")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
PY
