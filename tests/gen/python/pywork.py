"""pywork.py — CPython workload with known truth for the eBPF sampler's
interpreter frames (tests/integration/test_ebpf_python.py).

`pywork.py cpu SECONDS`: hot_alpha, hot_beta and hot_gamma spin in pure
Python for 50 / 30 / 20 % of the CPU time, in short interleaved slices,
called from run_cpu ← main ← <module>; each slice is measured with
time.process_time. Prints one JSON line: {"pid", "cpu_ns": {fn: ns}}.
`pywork.py zlib SECONDS`: compress_loop calls zlib.compress on a 4 MiB
buffer (digits) until SECONDS of CPU have passed (native deflate under the Python
frame). `pywork.py short SECONDS`: like cpu, for a short-lived process.
`pywork.py sleep SECONDS`: sleep_in_python sleeps 20 ms at a time for
SECONDS (off-CPU time under a Python frame); prints {"pid", "slept_ns"}.
`pywork.py cut SECONDS`: blocked_behind_big sleeps SECONDS (20 ms at a
time) called from big ← walk_cut ← main ← <module>, while the memory page
holding walk_cut's interpreter frame is PROT_NONE (mprotect through
ctypes; big's 2,100 locals put it and the frames it calls on another data
stack chunk, which stays readable): a sampler cannot read walk_cut's frame
or its callers' while it sleeps. Prints {"pid", "slept_ns"}.
`pywork.py rate SECONDS`: the cpu mix for SECONDS of wall time, printing
{"pid", "iters_per_s", "iters_per_cpu_s"} (per second of wall time and of
the process's CPU time; bench/ebpf_overhead.sh's Python workload).
"""
import json
import os
import sys
import time
import zlib


def spin(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


def hot_alpha(n):
    return spin(n)


def hot_beta(n):
    return spin(n)


def hot_gamma(n):
    return spin(n)


def run_cpu(seconds):
    shares = ((hot_alpha, 0.5), (hot_beta, 0.3), (hot_gamma, 0.2))
    spent = {f.__name__: 0.0 for f, _ in shares}
    unit = 2000  # iterations per step; calibrated below to ~1 ms
    t0 = time.process_time()
    spin(unit)
    step = max(time.process_time() - t0, 1e-5)
    slice_s = 0.01  # 10 ms of the whole round; each function gets its share
    end = time.process_time() + seconds
    while time.process_time() < end:
        for f, share in shares:
            n = max(1, int(unit * slice_s * share / step))
            a = time.process_time()
            f(n)
            spent[f.__name__] += time.process_time() - a
    return {k: int(v * 1e9) for k, v in spent.items()}


def compress_loop(seconds):
    data = b" ".join(str(i * 7919 % 100003).encode() for i in range(700000))  # ~4 MiB of digits
    end = time.process_time() + seconds
    n = 0
    while time.process_time() < end:
        n += len(zlib.compress(data, 9))
    return n


def rate(seconds):
    n = 0
    c0 = time.process_time()
    end = time.time() + seconds
    while time.time() < end:
        hot_alpha(500)
        hot_beta(300)
        hot_gamma(200)
        n += 1000
    return n / seconds, n / max(time.process_time() - c0, 1e-9)


def sleep_in_python(seconds):
    slept = 0.0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        a = time.monotonic()
        time.sleep(0.02)
        slept += time.monotonic() - a
    return int(slept * 1e9)


BIG_SRC = "def big(fn):\n" + "".join(f"    v{i} = {i}\n" for i in range(2100)) + "    return fn()\n"


def walk_cut(seconds):
    import ctypes
    import mmap
    import sys
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    # PyFrameObject (3.11-3.13): f_frame, the _PyInterpreterFrame, after
    # the object header and f_back
    frame = ctypes.c_void_p.from_address(id(sys._getframe()) + 24).value
    page = frame & ~(mmap.PAGESIZE - 1)
    ns = {}
    exec(BIG_SRC, ns)

    def blocked_behind_big():
        slept = 0.0
        if libc.mprotect(page, mmap.PAGESIZE, 0):
            raise OSError(ctypes.get_errno(), "mprotect")
        try:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                a = time.monotonic()
                time.sleep(0.02)
                slept += time.monotonic() - a
        finally:
            libc.mprotect(page, mmap.PAGESIZE, 3)
        return int(slept * 1e9)

    return ns["big"](blocked_behind_big)


def main():
    mode, seconds = sys.argv[1], float(sys.argv[2])
    out = {"pid": os.getpid()}
    if mode in ("cpu", "short"):
        out["cpu_ns"] = run_cpu(seconds)
    elif mode == "sleep":
        out["slept_ns"] = sleep_in_python(seconds)
    elif mode == "cut":
        out["slept_ns"] = walk_cut(seconds)
    elif mode == "rate":
        out["iters_per_s"], out["iters_per_cpu_s"] = rate(seconds)
    elif mode == "zlib":
        out["bytes"] = compress_loop(seconds)
    print(json.dumps(out))


main()
