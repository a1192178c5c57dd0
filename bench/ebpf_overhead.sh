#!/usr/bin/env bash
# bench/ebpf_overhead.sh — overhead of the edge's eBPF sampler against
# `perf record -F F -a -g` on the same CPU-bound workload (ebpfwork spin on
# every CPU), at 19, 99 and 999 Hz, side by side in one run, in two
# scenarios: "quiet" (the workload alone) and "churn" (a compile loop beside
# it: new short-lived processes all the time, each to be symbolized):
#   slowdown  = workload iterations/s unprofiled ÷ iterations/s profiled
#               (the workload runs on every CPU, so it pays for everything
#               the profiler does: its process, the kernel-side sampling
#               and unwinding charged to the interrupted tasks)
#   cpu%      = CPU time ÷ wall time, % of one CPU, in the steady state: both
#               profilers run WARMUP_S (5) s before the window (their start:
#               our ELF cache filling with the machine's binaries, perf
#               synthesizing the existing processes), then utime+stime
#               deltas (/proc/PID/stat, all threads) over the window. Ours:
#               wt-edge, the window holding two flushes at the default
#               flush_interval_s = 10, PLUS the BPF program's own run time
#               (fdinfo run_time_ns of the programs the edge holds,
#               kernel.bpf_stats_enabled on for the run) — it runs in the
#               interrupted task's context and shows in no process's CPU
#               time. Perf: the perf record process (writing its file);
#               its kernel-side sampling shows only in the slowdown.
#   perf      = steady (the window), session (its whole run: startup,
#               recording, the build-id pass at exit), +report (`perf
#               report` of the file: the symbolizing and aggregating the
#               edge does online, perf defers)
#   ratio     = ours ÷ perf (below 1: cheaper than perf)
# Env: EBPF_BENCH_SECONDS (20), EBPF_BENCH_FREQS ("19 99 999"),
# EBPF_BENCH_SCENARIOS ("quiet churn"), EBPF_BENCH_MODES ("hash"; add
# "ring" for the ring-buffer mode; MODE:UNWIND for ebpf.unwind, e.g.
# "hash hash:eh_frame" = frame pointers vs unwind tables side by side;
# after each run: edge RSS, BPF map memory (fdinfo memlock, the unwinding
# maps apart), the tables' files, rows, KiB per file, and build time per
# MiB of CFI),
# EBPF_BENCH_PERF_CALLGRAPH ("fp": perf record -g; "dwarf": perf record
# --call-graph dwarf, perf's own DWARF unwinding of copied user stacks, the
# baseline for the eh_frame mode), EBPF_BENCH_WORKLOAD ("c": ebpfwork spin;
# "python": Debian's /usr/bin/python3 running tests/gen/python/pywork.py
# rate, pure-Python loops; "node": Debian's node --perf-basic-prof running
# tests/gen/node/jsthree.js rate, JIT-compiled loops; several, e.g.
# "python node", run one after the other in the same run). A mode's third
# part "nointerp" (alias "nopython"), e.g. "hash hash:fp:nointerp", is the
# same edge without the interpreter's names: Python with ebpf.python =
# false (no CPython frame walk), Node without --perf-basic-prof (no map
# written, none read); each mode's slowdown is against the unprofiled rate
# of its own command, and with both modes a line of ratios (interpreter
# names ÷ none: CPU of edge + BPF, BPF ns per sample) follows each row,
# with the workload's slowdown per second of wall time and per second of
# its own CPU time (the Python and Node workloads report both), and edge +
# BPF ÷ CPUs: the share of CPU a workload filling every CPU loses to the
# profiler, which a loaded machine's noise does not blur;
# "warm", e.g. "hash:eh_frame:warm",
# starts the edge with the unwind tables already in its disk cache
# (data_dir/unwind, filled once by an unmeasured priming run), as after a
# restart: the steady state without the table building of a fresh edge;
# "nointerp,warm" combines both). Needs root, BTF and perf; prints
# "skipped: …" otherwise. One run, ratios, never fails on time.
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
SECS = float(os.environ.get("EBPF_BENCH_SECONDS", "20"))
WARMUP_S = 5.0
FREQS = [int(x) for x in os.environ.get("EBPF_BENCH_FREQS", "19 99 999").split()]
SCENARIOS = os.environ.get("EBPF_BENCH_SCENARIOS", "quiet churn").split()
MODES = os.environ.get("EBPF_BENCH_MODES", "hash").split()
PERF_CG = os.environ.get("EBPF_BENCH_PERF_CALLGRAPH", "fp")
PERF_G = ["--call-graph", "dwarf"] if PERF_CG == "dwarf" else ["-g"]
WORKLOADS = os.environ.get("EBPF_BENCH_WORKLOAD", "c").split()
WORKLOAD = WORKLOADS[0]  # the one being measured (the loop below sets it)
PYWORK = os.path.join(ROOT, "tests/gen/python/pywork.py")
JSWORK = os.path.join(ROOT, "tests/gen/node/jsthree.js")
NCPU = os.cpu_count()
tmp = tempfile.mkdtemp(prefix="wt-ebpf-bench-")
work = os.path.join(tmp, "ebpfwork")
subprocess.run(["cc", "-O1", "-fno-omit-frame-pointer", "-fno-inline", "-o", work,
                os.path.join(ROOT, "tests/gen/ebpfwork/ebpfwork.c")], check=True)
HZ = os.sysconf("SC_CLK_TCK")
STATS = "/proc/sys/kernel/bpf_stats_enabled"


class Churn:
    """A compile loop (cc → cc1, as, collect2, ld: short-lived processes of
    several binaries) running beside the workload, like a build would."""
    def __init__(self):
        src = os.path.join(tmp, "churn.c")
        with open(src, "w") as f:
            f.write("#include <stdio.h>\nint main(void) { puts(\"x\"); return 0; }\n")
        self.p = subprocess.Popen(["sh", "-c", f"while :; do cc -O0 -o {tmp}/churn.out {src} || exit 1; done"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

    def stop(self):
        os.killpg(self.p.pid, signal.SIGKILL)
        self.p.wait()


CPU_RATE = [None]  # iterations per CPU second of the last spin() (None: not reported)


def no_interp(mode):
    """the mode's options ask for no interpreter names (nointerp, nopython)"""
    opts = mode.split(":")[2].split(",") if mode.count(":") >= 2 else []
    return "nointerp" in opts or "nopython" in opts


def work_cmd(interp=True):
    if WORKLOAD == "python":
        return ["/usr/bin/python3", PYWORK, "rate", str(SECS)]
    if WORKLOAD == "node":  # no perf map without the flag: nothing for the edge to read
        return ["node"] + (["--perf-basic-prof"] if interp else []) + [JSWORK, "rate", str(SECS)]
    return [work, "spin", str(SECS)]


def spin(scenario, interp=True):
    """iterations/s summed over one spinner per CPU"""
    churn = Churn() if scenario == "churn" else None
    try:
        cmd = work_cmd(interp)
        # (in tmp: node --perf-basic-prof also writes a V8 log to its cwd)
        ps = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=tmp) for _ in range(NCPU)]
        outs = [json.loads(p.communicate()[0]) for p in ps]
        # per second of the spinners' own CPU time, where they report it:
        # what the profiler costs them while they run, without the time
        # other processes of a shared machine take from them
        CPU_RATE[0] = (sum(o["iters_per_cpu_s"] for o in outs) / len(outs)
                       if all("iters_per_cpu_s" in o for o in outs) else None)
        return sum(o["iters_per_s"] for o in outs)
    finally:
        for p in ps if "ps" in locals() else ():
            p.kill()
            p.wait()
            if os.path.exists(f"/tmp/perf-{p.pid}.map"):  # node --perf-basic-prof's map of this spinner
                os.unlink(f"/tmp/perf-{p.pid}.map")
        if churn:
            churn.stop()


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / HZ


BPF_PROG_TYPE_PERF_EVENT = 7


def bpf_ns(pid):
    """(run_time_ns summed over the BPF programs pid holds, run_cnt of its
    perf-event program = on-CPU samples, run_time_ns of that program):
    the lock program's runs (every futex system call, most returning at
    once) are cost, not samples"""
    total = cnt = ptime = 0
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                text = f.read()
        except OSError:
            continue
        if "prog_id:" in text:
            kv = dict((ln.split(":", 1)[0], ln.split(":", 1)[1].strip()) for ln in text.splitlines() if ":" in ln)
            total += int(kv.get("run_time_ns", "0"))
            if kv.get("prog_type") == str(BPF_PROG_TYPE_PERF_EVENT):
                cnt += int(kv.get("run_cnt", "0"))
                ptime += int(kv.get("run_time_ns", "0"))
    return total, cnt, ptime


UNWIND_SEEN = {}


def map_memory(pid):
    """{map name: memlock bytes} of the BPF maps pid holds (fdinfo)"""
    out = {}
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                text = f.read()
        except OSError:
            continue
        if "map_id:" not in text:
            continue
        kv = dict(ln.split(":", 1) for ln in text.splitlines() if ":" in ln)
        mid = kv.get("map_id", "").strip()
        try:
            info = json.loads(subprocess.run(["bpftool", "-j", "map", "show", "id", mid], capture_output=True,
                                             text=True, timeout=10).stdout or "{}")
            name = info.get("name") or mid
        except (OSError, ValueError, subprocess.TimeoutExpired):
            name = mid
        out[name] = max(out.get(name, 0), int(kv.get("memlock", "0").strip() or 0))
    return out


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        st = dict(ln.split(":", 1) for ln in f.read().splitlines() if ":" in ln)
    return int(st["VmRSS"].split()[0]), int(st["VmHWM"].split()[0])


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


def metric(port, name):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[-1])
    return None


WARM_CACHE = os.path.join(tmp, "unwind-warm")


def ours(freq, mode, scenario, priming=False):
    full = mode
    mode, _, unwind = mode.partition(":")
    unwind, _, pyopt = unwind.partition(":")
    opts = pyopt.split(",")
    if "warm" in opts and not priming and not os.path.isdir(WARM_CACHE):
        # one unmeasured run of the same edge fills the shared table cache
        os.makedirs(WARM_CACHE)
        ours(freq, full, scenario, priming=True)
    d = tempfile.mkdtemp(dir=tmp)
    if "warm" in opts:
        os.makedirs(os.path.join(d, "data"))
        os.symlink(WARM_CACHE, os.path.join(d, "data", "unwind"))
    port = free_port()
    cfg = os.path.join(d, "edge.cfg")
    with open(cfg, "w") as f:
        f.write(f'edge = {{ id = "bench"; listen = "127.0.0.1:{port}"; otlp_http_listen = ""; otlp_grpc_listen = ""; '
                f'data_dir = "{d}/data"; default_project = "demo"; }};\n'
                f'projects = ( {{ name = "demo"; upload_tokens = [ "u" ]; read_tokens = [ "r" ]; }} );\n'
                f'ebpf = {{ enabled = true; frequency_hz = {freq}; offcpu = false; mode = "{mode}"; '
                f'unwind = "{unwind or "fp"}"; python = {"false" if no_interp(full) else "true"}; }};\n')
    p = subprocess.Popen([os.path.join(ROOT, BUILD, "bin", "wt-edge"), "--config", cfg],
                         stdout=subprocess.DEVNULL, stderr=open(os.path.join(d, "log"), "w"))
    try:
        deadline = time.time() + 90  # the verifier takes long on a loaded machine
        while time.time() < deadline:
            try:
                if metric(port, "wt_edge_ebpf_enabled") == 1:
                    break
            except OSError:
                pass
            time.sleep(0.1)
        else:
            raise RuntimeError("sampler did not start: " + open(os.path.join(d, "log")).read()[-1000:])
        if priming:
            # until every running process's tables are built and written
            last, since, deadline = -1, time.time(), time.time() + 120
            while time.time() < deadline and time.time() - since < 5:
                rows = metric(port, "wt_edge_ebpf_unwind_rows")
                if rows != last or metric(port, "wt_edge_ebpf_unwind_pending_processes"):
                    last, since = rows, time.time()
                time.sleep(0.5)
            return None
        time.sleep(WARMUP_S)
        c0, b0, t0 = cpu_s(p.pid), bpf_ns(p.pid), time.time()
        ips = spin(scenario, not no_interp(full))
        c1, b1, t1 = cpu_s(p.pid), bpf_ns(p.pid), time.time()
        lost = metric(port, "wt_edge_ebpf_processes_lost_total") or 0
        cap = metric(port, "wt_edge_ebpf_processes_captured_total") or 0
        runs = max(b1[1] - b0[1], 1)  # on-CPU samples
        mm = map_memory(p.pid)
        UNWIND_SEEN[mode + ":" + (unwind or "fp") + (":" + pyopt if pyopt else "")] = (
            metric(port, "wt_edge_ebpf_unwind_files") or 0, metric(port, "wt_edge_ebpf_unwind_rows") or 0,
            metric(port, "wt_edge_ebpf_unwind_failed_files") or 0, rss_kb(p.pid), sum(mm.values()),
            mm.get("wt_unwind_rows", 0) + mm.get("wt_unwind_procs", 0),
            metric(port, "wt_edge_ebpf_unwind_built_files") or 0, metric(port, "wt_edge_ebpf_unwind_build_ns") or 0,
            metric(port, "wt_edge_ebpf_unwind_cfi_bytes") or 0)
        return (ips, 100.0 * (c1 - c0) / (t1 - t0), 100.0 * (b1[0] - b0[0]) / 1e9 / (t1 - t0), cap, lost,
                (b1[2] - b0[2]) / runs)
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(30)


def perf(freq, scenario):
    """(iterations/s, steady cpu%, session cpu%, report cpu%, MB)"""
    out = os.path.join(tmp, f"perf-{freq}.data")
    start = time.time()
    p = subprocess.Popen(["perf", "record", "-F", str(freq), "-a"] + PERF_G + ["-o", out],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(WARMUP_S)  # perf's startup (ring buffers, synthesizing the running processes)
    c0, t0 = cpu_s(p.pid), time.time()
    ips = spin(scenario)
    c1, t1 = cpu_s(p.pid), time.time()
    p.send_signal(signal.SIGINT)
    _, _, ru = os.wait4(p.pid, 0)
    session = time.time() - start
    recorded = t1 - start
    size = os.path.getsize(out) if os.path.exists(out) else 0
    # what perf defers: turning the samples into a profile (symbolizing,
    # aggregating by stack) is `perf report`'s work, as it is the edge's
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(["perf", "report", "-i", out, "--stdio", "-g", "caller", "--sort", "comm,dso,sym"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    rep = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
    os.unlink(out) if os.path.exists(out) else None
    return (ips, 100.0 * (c1 - c0) / (t1 - t0), 100.0 * (ru.ru_utime + ru.ru_stime) / session,
            100.0 * rep / recorded, size)


def ratio(a, b):
    return f"{a / b:.2f}" if b > 0 else "inf"


try:
    with open(STATS) as f:
        stats_before = f.read().strip()
    with open(STATS, "w") as f:
        f.write("1")
    for WORKLOAD in WORKLOADS:
        wl = {"python": f"python3 pywork.py rate {SECS:g}",
              "node": f"node --perf-basic-prof jsthree.js rate {SECS:g}"}.get(WORKLOAD, f"ebpfwork spin {SECS:g}")
        print(f"ebpf_overhead: workload `{wl}` on each of {NCPU} CPUs; ours: default flush_interval_s (10),"
              f" offcpu off (perf -a -g samples on-CPU only)")
        for sc in SCENARIOS:
            print(f"== {sc}")
            cols = "".join(f" | ours {m}: slowdown  edge%  bpf% total% procs(lost) ns/sample" for m in MODES)
            pname = "-a --call-graph dwarf" if PERF_CG == "dwarf" else "-a -g"
            print(f"{'Hz':>5}{cols} | perf {pname}: slowdown steady% session% +report%    MB"
                  f" | ours/perf: slowdown cpu÷session cpu÷(session+report)")
            for fr in FREQS:
                row = f"{fr:>5}"
                res = {}
                for m in MODES:
                    # the unprofiled rate of the same command right before
                    # each profiled run: the machine's load drifts
                    base = spin(sc, not no_interp(m))
                    cbase = CPU_RATE[0]
                    ips, edge, bpf, cap, lost, per = ours(fr, m, sc)
                    cslow = cbase / CPU_RATE[0] if cbase and CPU_RATE[0] else None
                    res[m] = (base / ips, edge + bpf, per, base, cslow)
                    procs = f"{cap:.0f}({lost:.0f})"
                    row += (f" | {'':>{len(m) - 4}}{base / ips:>17.3f} {edge:>6.2f} {bpf:>5.2f} {edge + bpf:>5.2f}"
                            f" {procs:>12} {per:>9.0f}")
                m0 = MODES[0]
                base = res[m0][3]
                ips, steady, session, rep, size = perf(fr, sc)
                row += (f" | {base / ips:>19.3f} {steady:>7.2f} {session:>8.2f} {rep:>8.2f} {size / 1e6:>5.1f}"
                        f" | {res[m0][0] / (base / ips):>18.3f} {ratio(res[m0][1], session):>11}"
                        f" {ratio(res[m0][1], session + rep):>20}")
                print(row, flush=True)
                on = [m for m in MODES if not no_interp(m)]
                off = [m for m in MODES if no_interp(m)]
                if WORKLOAD in ("python", "node") and on and off:
                    a, b = res[on[0]], res[off[0]]
                    what = "CPython frame walk" if WORKLOAD == "python" else "perf map written and read"
                    print(f"      {WORKLOAD} {fr} Hz, {what} ÷ without ({on[0]} ÷ {off[0]}): edge+BPF CPU"
                          f" {a[1]:.2f} % ÷ {b[1]:.2f} % = {ratio(a[1], b[1])}, BPF ns/sample {ratio(a[2], b[2])};"
                          f" workload slowdown {a[0]:.3f} with it, {b[0]:.3f} without"
                          + (f" (per CPU second of the workload: {a[4]:.3f} with it, {b[4]:.3f} without)"
                             if a[4] and b[4] else "")
                          + f"; CPU taken from a workload on all {NCPU} CPUs (edge+BPF ÷ {NCPU}):"
                            f" {a[1] / NCPU:.2f} % with it, {b[1] / NCPU:.2f} % without"
                          + (f"; unprofiled rate without ÷ with --perf-basic-prof {ratio(b[3], a[3])}"
                             if WORKLOAD == "node" else ""), flush=True)
                for k, (files, rows, failed, (rss, hwm), maps, umaps, built, bns, cfi) in sorted(UNWIND_SEEN.items()):
                    per = rows * 8 / files / 2**10 if files else 0  # 8-byte rows (bpf/unwind.h)
                    print(f"      {k}: edge RSS {rss / 1024:.1f} MiB (peak {hwm / 1024:.1f}); BPF maps {maps / 2**20:.1f} MiB"
                          f" of which unwinding {umaps / 2**20:.1f} MiB", flush=True)
                    if files:
                        print(f"      {k}: unwind tables of {files:.0f} files, {rows:.0f} rows = {rows * 8 / 2**20:.1f} MiB"
                              f" in use ({per:.0f} KiB per file: 200 such files = {200 * per / 1024:.1f} MiB),"
                              f" {failed:.0f} files without; {built:.0f} built from {cfi / 2**20:.1f} MiB of CFI in"
                              f" {bns / 1e6:.0f} ms = {bns / 1e6 / (cfi / 2**20) if cfi else 0:.0f} ms per MiB", flush=True)
                UNWIND_SEEN.clear()
    print("slowdown: unprofiled rate (measured right before) ÷ profiled rate (1.000 = no effect); edge%: wt-edge process"
          " CPU; bpf%: BPF programs' run time (ns/sample: the on-CPU program's run time per sample); total = edge + bpf; procs: process images captured (lost: gone before"
          " capture); perf steady%: perf record's CPU in the window; session%: its whole run (startup, recording, the"
          " build-id pass at exit) ÷ its wall time; +report%: `perf report` of the file ÷ the recorded wall time;"
          " all % of one CPU")
finally:
    try:
        with open(STATS, "w") as f:
            f.write(stats_before)
    except (OSError, NameError):
        pass
    shutil.rmtree(tmp, ignore_errors=True)
PY
