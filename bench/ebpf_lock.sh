#!/usr/bin/env bash
# bench/ebpf_lock.sh — cost of the edge's lock contention probe
# (bpf/lock.bpf.c): the same workloads under an edge with ebpf.lock = false
# and with ebpf.lock = true on each attach point — "futex": the
# syscalls/sys_*_futex tracepoints (the default), "raw": the raw syscall
# tracepoints, the fallback (forced with WT_EBPF_LOCK_ATTACH=raw) — sampling on-CPU at the default
# 19 Hz, off-CPU off. One edge per attach point; ROUNDS (5) rounds of the
# workloads with ebpf.lock = false then true (SIGHUP re-reads the ebpf
# section: the pair is measured within seconds); per workload the median
# of the rounds' process CPU time per operation with the probe ÷ without
# (1.000 = no cost; CPU time rather than throughput: the machine's other
# load moves throughput far more than the probe does):
#   loop      10^8 uncontended pthread_mutex_lock/unlock pairs, one thread
#             (no syscall: the probe must not be reached at all)
#   contended four threads on one mutex with a short critical section
#             (futex waits all the time: each runs the program twice)
#   syscalls  getppid() in a loop: where tracefs is not mounted the probe
#             sits on the raw syscall tracepoints, which every syscall
#             runs (docs/operations.md "Lock contention")
# Env: LOCK_BENCH_ROUNDS (5), LOCK_BENCH_SECONDS (2, the contended run). Needs root and BTF;
# prints "skipped: …" otherwise. One run, ratios, never fails on time.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export WT_ROOT=$PWD BUILD
if [[ $(id -u) != 0 || ! -r /sys/kernel/btf/vmlinux ]]; then
	echo "ebpf_lock: skipped: needs root and /sys/kernel/btf/vmlinux"; exit 0
fi
[[ -x $BUILD/bin/wt-edge ]] || { echo "ebpf_lock: $BUILD/bin/wt-edge missing (make first)"; exit 1; }
exec python3 - "$@" <<'PY'
import json, os, shutil, signal, socket, statistics, subprocess, sys, tempfile, time, urllib.request

ROOT, BUILD = os.environ["WT_ROOT"], os.environ["BUILD"]
ROUNDS = int(os.environ.get("LOCK_BENCH_ROUNDS", "5"))
SECS = float(os.environ.get("LOCK_BENCH_SECONDS", "2"))
tmp = tempfile.mkdtemp(prefix="wt-lock-bench-")
work = os.path.join(tmp, "lockwork")
subprocess.run(["cc", "-O2", "-fomit-frame-pointer", "-pthread", "-o", work,
                os.path.join(ROOT, "tests/gen/lockwork/lockwork.c")], check=True)
WORKLOADS = [("loop", ["loop", "100000000"], "cpu_ns_per_op"),
             ("contended", ["bench", str(SECS)], "cpu_ns_per_op"),
             ("syscalls", ["syscalls", "3000000"], "cpu_ns_per_op")]


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


def metric(port, name):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[-1])
    return None


VARIANTS = ["futex", "raw"]


def wait_lock(port, want, logf, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if metric(port, "wt_edge_ebpf_enabled") == 1 and metric(port, "wt_edge_ebpf_lock_enabled") == want:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"lock probe not {want}: " + open(logf).read()[-1000:])


def workloads():
    out = {}
    for name, args, key in WORKLOADS:
        r = subprocess.run([work] + args, capture_output=True, text=True, check=True)
        out[name] = json.loads(r.stdout)[key]
    return out


def variant_ratios(variant):
    """one edge; ebpf.lock toggled by SIGHUP (the ebpf section re-read):
    per round the workloads with the probe off, then on → ratios"""
    d = tempfile.mkdtemp(dir=tmp)
    port = free_port()
    cfg = os.path.join(d, "edge.cfg")
    logf = os.path.join(d, "log")

    def write(lock):
        with open(cfg, "w") as f:
            f.write(f'edge = {{ id = "bench"; listen = "127.0.0.1:{port}"; otlp_http_listen = ""; otlp_grpc_listen = ""; '
                    f'data_dir = "{d}/data"; default_project = "demo"; }};\n'
                    f'projects = ( {{ name = "demo"; upload_tokens = [ "u" ]; read_tokens = [ "r" ]; }} );\n'
                    f'ebpf = {{ enabled = true; offcpu = false; lock = {"true" if lock else "false"}; }};\n')

    write(False)
    log = open(logf, "w")
    cmd = [os.path.join(ROOT, BUILD, "bin", "wt-edge"), "--config", cfg]
    env = dict(os.environ, WT_EBPF_LOCK_ATTACH=variant)
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log, env=env)
    ratios = {w[0]: [] for w in WORKLOADS}
    try:
        wait_lock(port, 0, logf)
        time.sleep(3)  # past the start's table building
        for _ in range(ROUNDS):
            off = workloads()
            write(True)
            p.send_signal(signal.SIGHUP)
            wait_lock(port, 1, logf)
            on = workloads()
            write(False)
            p.send_signal(signal.SIGHUP)
            wait_lock(port, 0, logf)
            for k in ratios:
                ratios[k].append(on[k] / off[k])
        want = "syscalls/sys_*_futex" if variant == "futex" else "raw_syscalls"
        assert want in open(logf).read(), f"not attached to {want}"
        return ratios
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(30)
        log.close()


try:
    res = {v: variant_ratios(v) for v in VARIANTS}
    print(f"ebpf_lock: CPU time per operation with ebpf.lock = true ÷ with false (measured right before), median"
          f" of {ROUNDS} rounds [min-max] (1.000 = no cost), per attach point: " + ", ".join(VARIANTS))
    for name, _, _ in WORKLOADS:
        row = f"  {name:<10}"
        for v in VARIANTS:
            r = res[v][name]
            row += f" {v}: {statistics.median(r):.3f} [{min(r):.2f}-{max(r):.2f}]"
        print(row)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
PY
