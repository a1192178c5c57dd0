#!/usr/bin/env bash
# bench/ebpf_lock.sh — cost of the edge's lock contention probe
# (bpf/lock.bpf.c): the same workloads under an edge with ebpf.lock = false
# and with ebpf.lock = true on each attach point — "futex": the
# syscalls/sys_*_futex tracepoints (the edge runs in a private mount
# namespace with tracefs mounted there, unshare -m, when the machine has
# none mounted), "raw": the raw syscall tracepoints (the machine's own
# mounts, when tracefs is not mounted) — all sampling on-CPU at the default
# 19 Hz, off-CPU off, alternating, ROUNDS (3) rounds; per workload the
# median process CPU time per operation with the probe ÷ the median
# without (1.000 = no cost; CPU time rather than throughput: the machine's
# other load moves throughput far more than the probe does):
#   loop      10^8 uncontended pthread_mutex_lock/unlock pairs, one thread
#             (no syscall: the probe must not be reached at all)
#   contended four threads on one mutex with a short critical section
#             (futex waits all the time: each runs the program twice)
#   syscalls  getppid() in a loop: where tracefs is not mounted the probe
#             sits on the raw syscall tracepoints, which every syscall
#             runs (docs/operations.md "Lock contention")
# Env: LOCK_BENCH_ROUNDS (3), LOCK_BENCH_SECONDS (2, the contended run). Needs root and BTF;
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
ROUNDS = int(os.environ.get("LOCK_BENCH_ROUNDS", "3"))
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


TRACEFS = any(os.path.exists(p + "/events/syscalls/sys_enter_futex/id")
              for p in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing"))
VARIANTS = ["futex"] if TRACEFS else ["futex", "raw"]
if not TRACEFS and not shutil.which("unshare"):
    VARIANTS = ["raw"]


def measure(lock, variant=None):
    d = tempfile.mkdtemp(dir=tmp)
    port = free_port()
    cfg = os.path.join(d, "edge.cfg")
    with open(cfg, "w") as f:
        f.write(f'edge = {{ id = "bench"; listen = "127.0.0.1:{port}"; otlp_http_listen = ""; otlp_grpc_listen = ""; '
                f'data_dir = "{d}/data"; default_project = "demo"; }};\n'
                f'projects = ( {{ name = "demo"; upload_tokens = [ "u" ]; read_tokens = [ "r" ]; }} );\n'
                f'ebpf = {{ enabled = true; offcpu = false; lock = {"true" if lock else "false"}; }};\n')
    log = open(os.path.join(d, "log"), "w")
    cmd = [os.path.join(ROOT, BUILD, "bin", "wt-edge"), "--config", cfg]
    if variant == "futex" and not TRACEFS:
        cmd = ["unshare", "-m", "--propagation", "private", "sh", "-c",
               'mount -t tracefs nodev /sys/kernel/tracing && exec "$@"', "sh"] + cmd
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.time() + 90
        while time.time() < deadline:
            try:
                if metric(port, "wt_edge_ebpf_enabled") == 1:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        else:
            raise RuntimeError("sampler did not start: " + open(os.path.join(d, "log")).read()[-1000:])
        assert metric(port, "wt_edge_ebpf_lock_enabled") == (1 if lock else 0)
        if lock:
            want = "syscalls/sys_*_futex" if variant == "futex" else "raw_syscalls"
            assert want in open(os.path.join(d, "log")).read(), f"not attached to {want}"

        time.sleep(3)  # past the start's table building
        out = {}
        for name, args, key in WORKLOADS:
            r = subprocess.run([work] + args, capture_output=True, text=True, check=True)
            out[name] = json.loads(r.stdout)[key]
        return out
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(30)
        log.close()


try:
    runs = {v: {w[0]: [] for w in WORKLOADS} for v in ["off"] + VARIANTS}
    for _ in range(ROUNDS):
        for v in ["off"] + VARIANTS:
            for k, r in measure(v != "off", v).items():
                runs[v][k].append(r)
    print(f"ebpf_lock: CPU time per operation with ebpf.lock = true ÷ with false, median of {ROUNDS}"
          f" (1.000 = no cost), per attach point: " + ", ".join(VARIANTS))
    print(f"  {'workload':<10}" + "".join(f" {v:>7}" for v in VARIANTS))
    for name, _, key in WORKLOADS:
        off = statistics.median(runs["off"][name])
        print(f"  {name:<10}" + "".join(f" {statistics.median(runs[v][name]) / off:>7.3f}" for v in VARIANTS)
              + f"   (without: {off:.1f} ns)")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
PY
