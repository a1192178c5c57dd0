#!/usr/bin/env bash
# bench/ebpf_overhead.sh — overhead of the edge's eBPF sampler against
# `perf record -F F -a -g` on the same CPU-bound workload (ebpfwork spin),
# at 19, 99 and 999 Hz, side by side in one run:
#   slowdown  = workload iterations/s unprofiled ÷ iterations/s profiled
#   cpu%      = profiler CPU time (utime+stime) ÷ wall time, % of one CPU
#               (wt-edge: /proc/PID/stat deltas over the window, which
#               includes one drain + symbolize + commit; perf: rusage of
#               the perf record process, incl. writing its file)
# Our sampler runs in both modes (hash: in-kernel aggregation drained every
# flush; ring: every sample streamed to user space). Needs root, BTF and
# perf; prints "skipped: …" otherwise. One run, ratios, never fails on time.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export WT_ROOT=$PWD BUILD
if [[ $(id -u) != 0 || ! -r /sys/kernel/btf/vmlinux ]]; then
	echo "ebpf_overhead: skipped: needs root and /sys/kernel/btf/vmlinux"; exit 0
fi
command -v perf >/dev/null || { echo "ebpf_overhead: skipped: perf not installed"; exit 0; }
[[ -x $BUILD/bin/wt-edge ]] || { echo "ebpf_overhead: $BUILD/bin/wt-edge missing (make first)"; exit 1; }
exec python3 - "$@" <<'PY'
import json, os, resource, shutil, signal, socket, subprocess, sys, tempfile, time, urllib.request

ROOT = os.environ["WT_ROOT"]
BUILD = os.environ["BUILD"]
SECS = float(os.environ.get("EBPF_BENCH_SECONDS", "8"))
FREQS = [int(x) for x in os.environ.get("EBPF_BENCH_FREQS", "19 99 999").split()]
tmp = tempfile.mkdtemp(prefix="wt-ebpf-bench-")
work = os.path.join(tmp, "ebpfwork")
subprocess.run(["cc", "-O1", "-fno-omit-frame-pointer", "-fno-inline", "-o", work,
                os.path.join(ROOT, "tests/gen/ebpfwork/ebpfwork.c")], check=True)
HZ = os.sysconf("SC_CLK_TCK")


def spin():
    out = subprocess.run([work, "spin", str(SECS)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["iters_per_s"]


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / HZ


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


def metric(port, name):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[-1])
    return None


def ours(freq, mode):
    d = tempfile.mkdtemp(dir=tmp)
    port = free_port()
    cfg = os.path.join(d, "edge.cfg")
    with open(cfg, "w") as f:
        f.write(f'edge = {{ id = "bench"; listen = "127.0.0.1:{port}"; otlp_http_listen = ""; otlp_grpc_listen = ""; '
                f'data_dir = "{d}/data"; default_project = "demo"; }};\n'
                f'projects = ( {{ name = "demo"; upload_tokens = [ "u" ]; read_tokens = [ "r" ]; }} );\n'
                f'ebpf = {{ enabled = true; frequency_hz = {freq}; offcpu = false; mode = "{mode}"; '
                f'flush_interval_s = {max(1, int(SECS / 2))}; }};\n')
    p = subprocess.Popen([os.path.join(ROOT, BUILD, "bin", "wt-edge"), "--config", cfg],
                         stdout=subprocess.DEVNULL, stderr=open(os.path.join(d, "log"), "w"))
    try:
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                if metric(port, "wt_edge_ebpf_enabled") == 1:
                    break
            except OSError:
                pass
            time.sleep(0.1)
        else:
            raise RuntimeError("sampler did not start: " + open(os.path.join(d, "log")).read()[-1000:])
        c0, t0 = cpu_s(p.pid), time.time()
        ips = spin()
        c1, t1 = cpu_s(p.pid), time.time()
        lost = metric(port, 'wt_edge_ebpf_lost_samples_total{probe="cpu"}')
        return ips, 100.0 * (c1 - c0) / (t1 - t0), lost
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(30)


def perf(freq):
    out = os.path.join(tmp, f"perf-{freq}.data")
    p = subprocess.Popen(["perf", "record", "-F", str(freq), "-a", "-g", "-o", out],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # perf's own startup (mmap of the ring buffers) is not the workload's cost
    t0 = time.time()
    ips = spin()
    t1 = time.time()
    p.send_signal(signal.SIGINT)
    _, _, ru = os.wait4(p.pid, 0)
    wall = time.time() - t0 + 1.0
    size = os.path.getsize(out) if os.path.exists(out) else 0
    os.unlink(out) if os.path.exists(out) else None
    return ips, 100.0 * (ru.ru_utime + ru.ru_stime) / wall, size


try:
    base = spin()
    print(f"ebpf_overhead: workload `ebpfwork spin {SECS:g}` unprofiled: {base:.0f} iterations/s ({os.cpu_count()} CPUs)")
    print(f"{'Hz':>5} | {'ours hash: slowdown':>19} {'cpu%':>6} {'lost':>5} | {'ours ring: slowdown':>19} {'cpu%':>6} {'lost':>5} |"
          f" {'perf -a -g: slowdown':>20} {'cpu%':>6} {'MB':>6}")
    for f in FREQS:
        h = ours(f, "hash")
        r = ours(f, "ring")
        q = perf(f)
        print(f"{f:>5} | {base / h[0]:>19.3f} {h[1]:>6.2f} {h[2]:>5.0f} | {base / r[0]:>19.3f} {r[1]:>6.2f} {r[2]:>5.0f} |"
              f" {base / q[0]:>20.3f} {q[1]:>6.2f} {q[2] / 1e6:>6.1f}")
    print("slowdown: unprofiled rate ÷ profiled rate (1.000 = no effect; machine noise is ±2-3 %);"
          " cpu%: profiler process CPU time ÷ wall time (one CPU = 100)")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
PY
