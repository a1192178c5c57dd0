"""test_ebpf_unwind.py — user stacks without frame pointers: the eBPF
sampler's unwinder with tables from .eh_frame (ebpf.unwind = "eh_frame").

test_debian_binaries_vs_perf_dwarf: Debian's own xz, gzip and python3
(no frame pointers) against perf's DWARF unwinder on the same run.

tests/gen/unwindwork, built -O2 -fomit-frame-pointer (rbp is an ordinary
register in it), runs a known call chain: main → chain_a → chain_b →
leaf_deep, main → chain_a → leaf_mid, main → leaf_top, measuring each
leaf's thread CPU time itself. With the tables, >= 99 % of its samples
reach main and each leaf's share of the samples is the workload's own
within 2 points; the call chain above leaf_deep is exactly chain_b,
chain_a, main. The same run with frame pointers only (ebpf.unwind = "fp")
is printed for comparison (it loses main in most samples).
"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness.edge import Edge, ROOT  # noqa: E402
from test_ebpf import requirements  # noqa: E402

SRC = os.path.join(ROOT, "tests", "gen", "unwindwork", "unwindwork.c")
LEAVES = ["leaf_deep", "leaf_mid", "leaf_top"]
PERIOD_NS = 1_000_000_000 // 997  # a sample's weight at 997 Hz (the perf comparison)


# the C runtime's frames below main as perf (with libc's debug symbols)
# and we (its dynamic symbols) name them
RUNTIME = {"_start", "__libc_start_main", "__libc_start_main_impl", "__libc_start_main_impl (inlined)",
           "__libc_start_call_main"}


def kernel_names():
    names = set()
    try:
        with open("/proc/kallsyms") as f:
            for ln in f:
                parts = ln.split()
                if len(parts) >= 3 and parts[1] in "tTwW":
                    names.add(parts[2])
    except OSError:
        pass
    return names


KERNEL = kernel_names()


def strip_kernel(path):
    """our flame path (root first) without the kernel frames at its leaf end"""
    while path and path[-1] in KERNEL:
        path = path[:-1]
    return path


def native_stack(frames):
    """root-first user frames → comparable key: everything up to the C
    runtime's last frame dropped (with our unnamed libc frame right above
    it, which perf names __libc_start_call_main from libc's debug
    symbols), frames without a name (perf's [unknown], our module+0xOFF or
    bare addresses) as "?"; a stack that never reached the runtime keeps
    all its frames (and our [truncated] marker: it then matches nothing)"""
    frames = [f.strip() for f in frames]
    last = max((i for i, f in enumerate(frames) if f in RUNTIME), default=-1)
    frames = frames[last + 1:]
    if last >= 0 and frames and frames[0].startswith("libc.so") and "+0x" in frames[0]:
        frames = frames[1:]
    return tuple("?" if f == "[unknown]" or "+0x" in f or f.startswith("0x") else f for f in frames)


def stacks_match(a, b):
    return len(a) == len(b) and all(x == y or x == "?" or y == "?" for x, y in zip(a, b))


def assign(ours, theirs):
    """each of our stacks counted for one of perf's: the one it matches
    (frame by frame, "?" matching any name) with the most frames named the
    same, then the most samples; → {perf key: our count}"""
    got = {}
    for o, v in ours.items():
        best = max((k for k in theirs if stacks_match(o, k)),
                   key=lambda k: (sum(x == y for x, y in zip(o, k)), theirs[k]), default=None)
        if best is not None:
            got[best] = got.get(best, 0) + v
    return got


class EbpfUnwind(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="wt-ebpf-unwind-")
        cls.work = os.path.join(cls.tmp, "unwindwork")
        subprocess.run(["cc", "-O2", "-fomit-frame-pointer", "-o", cls.work, SRC], check=True, timeout=60)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        why = requirements()
        if why:
            self.fail("the eBPF sampler cannot run here: " + "; ".join(why))

    def sample(self, unwind, seconds=12):
        e = Edge(self)
        with open(e.cfg, "a") as f:
            f.write(f'\nebpf = {{ enabled = true; frequency_hz = 997; offcpu = false; flush_interval_s = 1; '
                    f'unwind = "{unwind}"; }};\n')
        e.start()
        # a loaded machine: the rows array and the verifier take a while
        self.assertIsNone(e.wait_sampler())
        if unwind != "fp":
            # the tables of every process already running are built and
            # loaded right after the start: the workload's process is then
            # announced, captured and given its tables within moments
            self.settle(e)
            self.warm(e)
        out = subprocess.run([self.work, str(seconds)], capture_output=True, text=True, timeout=seconds + 60)
        self.assertEqual(out.returncode, 0, out.stderr)
        truth = json.loads(out.stdout.strip().splitlines()[-1])
        e.wait_flushes(3)
        st, js = e.query("table", service="unwindwork", type="cpu", **{"label.pid": str(truth["pid"])})
        self.assertEqual(st, 200, js)
        st, flame = e.query("flamegraph", service="unwindwork", type="cpu", **{"label.pid": str(truth["pid"])})
        self.assertEqual(st, 200, flame)
        self.log = e.read_log()
        e.stop()
        rows = {r["function"]: r for r in js["rows"]}
        self.assertGreater(js["total"], 0)
        return truth, js, rows, flame

    def test_eh_frame_reaches_main(self):
        truth, js, rows, flame = self.sample("eh_frame")
        share_main = rows.get("main", {}).get("total", 0) / js["total"]
        meas = truth["cpu_ns"]
        mtot = sum(meas.values())
        stot = sum(rows.get(f, {}).get("self", 0) for f in LEAVES)
        paths = []
        self.leaves(flame["root"], [], paths)
        for t, p in sorted(paths, reverse=True)[:8]:
            print(f"  {t}: {' <- '.join(reversed(p))}", file=sys.stderr)
        print(f"eh_frame: {100 * share_main:.2f} % of samples under main; top: "
              f"{[(r['function'], r['self']) for r in sorted(js['rows'], key=lambda r: -r['self'])[:6]]}",
              file=sys.stderr)
        for f in LEAVES:
            want = 100.0 * meas[f] / mtot
            got = 100.0 * rows.get(f, {}).get("self", 0) / stot if stot else 0
            print(f"  {f}: workload {want:.1f} % sampler {got:.1f} %", file=sys.stderr)
        self.assertGreaterEqual(share_main, 0.99, "\n".join(
            ln for ln in self.log.splitlines() if "unwind" in ln and f"tgid={truth['pid']}" in ln))
        for f in LEAVES:
            want = 100.0 * meas[f] / mtot
            got = 100.0 * rows.get(f, {}).get("self", 0) / stot
            self.assertLess(abs(got - want), 2.0, f"{f}: sampled {got:.1f} % vs measured {want:.1f} %")
        # the chain above leaf_deep: chain_b's total covers leaf_deep, chain_a's both
        self.assertGreaterEqual(rows["chain_b"]["total"], rows["leaf_deep"]["self"])
        self.assertGreaterEqual(rows["chain_a"]["total"], rows["leaf_deep"]["self"] + rows["leaf_mid"]["self"])

    def test_debian_binaries_vs_perf_dwarf(self):
        """Stock Debian binaries without frame pointers (xz, gzip, python3),
        each run under `perf record --call-graph dwarf` (perf's own DWARF
        unwinder over copied user stacks) while the edge samples the
        machine: the share of the run's samples whose user stack reaches
        the C runtime (__libc_start_main, _start) is at least perf's less
        1 point (a new process's first samples, before its capture, are
        walked by frame pointers), and perf's ten most frequent native
        stacks (those of at least 1 %) are ours too, each with its share
        within 3 points or four standard errors of the difference of two
        independent samplings of that share (sqrt(p(1-p)(1/n1+1/n2)): 1.5
        points for a 33 % stack of 2,000 samples each), whichever is
        larger; both sample the run's CPU time at the same rate,
        so our sample count is perf's within 10 %. Samples are counted
        from every node of our flame graph (a leaf's total and an inner
        node's self time). Frames are compared one by one (a frame
        one side could not name matches any name; kernel frames and the C
        runtime's below main left out; each of our stacks counts for the
        perf stack it matches with the most frames named the same). Each program runs once before (its
        tables built), as a program that ran before would. A missing
        binary or perf skips with the reason."""
        if not shutil.which("perf"):
            self.skipTest("perf not installed")
        small, big = os.path.join(self.tmp, "small.txt"), os.path.join(self.tmp, "big.txt")
        with open(small, "wb") as f:
            f.write(os.urandom(2 << 20).hex().encode())  # xz -9: several seconds
        with open(big, "wb") as f:
            f.write(os.urandom(24 << 20).hex().encode())  # gzip -9: several seconds
        progs = [("xz", ["/usr/bin/xz", "-9", "-T1", "-c", small]), ("gzip", ["/usr/bin/gzip", "-9", "-c", big]),
                 ("python3", ["/usr/bin/python3", "-S", "-c", "s = 0\nfor i in range(20000000): s += i * i % 7"])]
        missing = [n for n, c in progs if not shutil.which(c[0])]
        progs = [(n, c) for n, c in progs if shutil.which(c[0])]  # Debian's own: /usr/bin, not a pyenv shim
        if not progs:
            self.skipTest("none of xz, gzip, python3 installed")
        if missing:
            print(f"not installed, not checked: {missing}", file=sys.stderr)
        e = Edge(self)
        with open(e.cfg, "a") as f:
            # python = false: perf names the interpreter's native frames
            # (_PyEval_EvalFrameDefault), which the CPython walk replaces
            f.write('\nebpf = { enabled = true; frequency_hz = 997; offcpu = false; flush_interval_s = 1; '
                    'unwind = "eh_frame"; python = false; };\n')
        e.start(env={"WT_LOG_LEVEL": "debug"})  # the unwind-table lines per process, for a failure
        self.assertIsNone(e.wait_sampler())
        self.settle(e)
        roots = ("__libc_start_main", "_start", "__libc_start_call_main")
        top_diffs, missing, counts = [], [], []
        for name, cmd in progs:
            # warm: a run long enough to be sampled, so its files get tables
            subprocess.run(cmd, stdout=subprocess.DEVNULL, timeout=600)
            time.sleep(1.5)
            deadline = time.time() + 60  # until the loader has built them (python3.11: 4 MB of CFI)
            while time.time() < deadline and e.metrics().get("wt_edge_ebpf_unwind_pending_processes"):
                time.sleep(0.2)
            pdata = os.path.join(self.tmp, f"perf-{name}.data")
            subprocess.run(["perf", "record", "-q", "-F", "997", "--call-graph", "dwarf", "-o", pdata, "--"] + cmd,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600, check=True)
            out = subprocess.run(["perf", "script", "-i", pdata, "-F", "pid,ip,sym"], capture_output=True,
                                 text=True, timeout=600).stdout
            n = ok = 0
            pid = None
            perf_stacks = {}
            for blk in out.split("\n\n"):
                lines = blk.strip().splitlines()
                if not lines:
                    continue
                pid = pid or lines[0].split()[0]
                n += 1
                ok += any(len(ln.split()) >= 2 and ln.split()[1] in roots for ln in lines[1:])
                # user frames only (kernel addresses dropped), root first
                frames = [ln.split(None, 1) for ln in lines[1:]]
                user = [f[1] if len(f) > 1 else "[unknown]" for f in frames if int(f[0], 16) < 0xffff800000000000]
                key = native_stack(list(reversed(user)))
                perf_stacks[key] = perf_stacks.get(key, 0) + 1
            perf_share = ok / n
            e.wait_flushes(3)
            svc = os.path.basename(os.path.realpath(shutil.which(cmd[0])))
            st, fg = e.query("flamegraph", service=svc, type="cpu", **{"label.pid": pid})
            self.assertEqual(st, 200, fg)
            paths = []
            self.leaves(fg["root"], [], paths)
            tot = sum(t for t, _ in paths)
            ours = sum(t for t, p in paths if any(r in p for r in roots)) / tot if tot else 0
            print(f"{name}: samples reaching the C runtime: ours {100 * ours:.2f} % of {tot / PERIOD_NS:.0f}, "
                  f"perf --call-graph dwarf {100 * perf_share:.2f} % of {n}", file=sys.stderr)
            for t, p in sorted((x for x in paths if not any(r in x[1] for r in roots)), reverse=True)[:3]:
                print(f"  not reaching: {t / PERIOD_NS:.0f} x {' <- '.join(reversed(p))[:240]}", file=sys.stderr)
            # the top-10 native stacks: perf's ten most frequent, each
            # found in ours (frame by frame; a frame one side could not
            # name matches any) with its share within 3 points
            ours_stacks = {}
            for t, p in paths:
                key = native_stack(strip_kernel(p[1:]))
                ours_stacks[key] = ours_stacks.get(key, 0) + t
            top = sorted(perf_stacks.items(), key=lambda kv: -kv[1])[:10]
            got = assign(ours_stacks, perf_stacks)
            worst = 0
            ours_n = tot / PERIOD_NS
            for k, c in top:
                mine = got.get(k, 0) / tot if tot else 0
                d = abs(100 * mine - 100 * c / n)
                worst = max(worst, d)
                print(f"  {100 * c / n:5.1f} % perf, {100 * mine:5.1f} % ours: {' <- '.join(reversed(k))[:200]}",
                      file=sys.stderr)
                # every perf stack of 1 % must be among ours
                if c / n >= 0.01:
                    missing.append((name, mine, k))
                p = c / n
                se = 100 * math.sqrt(p * (1 - p) * (1 / n + 1 / max(ours_n, 1)))
                top_diffs.append((name, d, max(3.0, 4 * se), k))
            print(f"{name}: top-10 native stacks, largest share difference {worst:.2f} points; "
                  f"samples ours {ours_n:.0f}, perf {n}", file=sys.stderr)
            self.assertGreater(tot, 0, f"no samples of {name}")
            counts.append((name, ours_n, n))
            self.assertGreaterEqual(ours, perf_share - 0.01, f"{name}: ours {ours:.4f} vs perf {perf_share:.4f}\n" + "\n".join(
                ln for ln in e.read_log().splitlines() if "unwind" in ln and f"tgid={pid} " in ln))
        e.stop()
        for name, ours_n, n in counts:
            self.assertLess(abs(ours_n / n - 1), 0.10, f"{name}: {ours_n:.0f} samples, perf {n}")
        for name, mine, k in missing:
            self.assertGreater(mine, 0, f"{name}: perf's stack {' <- '.join(reversed(k))} is not among ours")
        for name, d, tol, k in top_diffs:
            self.assertLessEqual(d, tol, f"{name}: share of {' <- '.join(reversed(k))} differs by {d:.2f} points "
                                 f"(allowed {tol:.2f})")

    @staticmethod
    def leaves(n, path, out):
        """every stack of the flame graph as (value, root-first path): a
        leaf's total, and an inner node's own self time (a sample whose
        leaf is a function that also calls others)"""
        if not n["children"]:
            out.append((n["total"], path + [n["name"]]))
        elif n.get("self"):
            out.append((n["self"], path + [n["name"]]))
        for ch in n["children"]:
            EbpfUnwind.leaves(ch, path + [n["name"]], out)

    @staticmethod
    def settle(e):
        """wait until the tables of the processes running at the start are
        loaded (the loader's queue empty, the rows steady for 3 s)"""
        last, stable_since, deadline = -1, time.time(), time.time() + 90
        while time.time() < deadline and time.time() - stable_since < 3:
            m = e.metrics()
            rows = m.get("wt_edge_ebpf_unwind_rows")
            if rows != last or not rows or m.get("wt_edge_ebpf_unwind_pending_processes"):
                last, stable_since = rows, time.time()
            time.sleep(0.2)
        m = e.metrics()
        print(f"unwind tables: {m.get('wt_edge_ebpf_unwind_files')} files, {last} rows, "
              f"{m.get('wt_edge_ebpf_unwind_failed_files')} failed", file=sys.stderr)

    def warm(self, e):
        """run unwindwork once (as a program that ran before would), until
        its file's table is built: on a busy machine the loader thread
        builds the tables of every new binary in turn (CI saw a compile's
        cc1 and ld ahead of it: 5.7 % of the measured run's blocked time
        walked by frame pointers while it waited); a binary met before
        gets its process's entry at once"""
        subprocess.run([self.work, "0.5"], capture_output=True, timeout=60, check=True)
        time.sleep(1.5)
        deadline = time.time() + 60
        while time.time() < deadline and e.metrics().get("wt_edge_ebpf_unwind_pending_processes"):
            time.sleep(0.2)

    def offcpu_share(self, unwind, seconds=5):
        """unwindwork blocking in main → wait_a → wait_b → nanosleep: the
        share of its off-CPU time whose stack reaches main, and the table"""
        e = Edge(self)
        with open(e.cfg, "a") as f:
            f.write(f'\nebpf = {{ enabled = true; frequency_hz = 99; offcpu = true; offcpu_min_us = 0; '
                    f'flush_interval_s = 1; unwind = "{unwind}"; }};\n')
        e.start()
        deadline = time.time() + 60
        while time.time() < deadline and e.metrics().get("wt_edge_ebpf_offcpu_enabled") != 1:
            time.sleep(0.1)
        self.assertEqual(e.metrics().get("wt_edge_ebpf_offcpu_enabled"), 1, e.read_log()[-2000:])
        if unwind != "fp":
            self.settle(e)
            self.warm(e)
        out = subprocess.run([self.work, str(seconds), "sleep"], capture_output=True, text=True,
                             timeout=seconds + 60)
        self.assertEqual(out.returncode, 0, out.stderr)
        pid = json.loads(out.stdout.strip().splitlines()[-1])["pid"]
        e.wait_flushes(3)
        st, js = e.query("table", service="unwindwork", type="offcpu", **{"label.pid": str(pid)})
        self.assertEqual(st, 200, js)
        st, flame = e.query("flamegraph", service="unwindwork", type="offcpu", **{"label.pid": str(pid)})
        self.assertEqual(st, 200, flame)
        log = e.read_log()
        e.stop()
        self.assertGreater(js["total"], 0, log[-2000:])
        rows = {r["function"]: r for r in js["rows"]}
        if unwind != "fp":
            paths = []
            self.leaves(flame.get("root", {"name": "total", "total": 0, "children": []}), [], paths)
            for t, p in sorted((x for x in paths if "main" not in x[1]), reverse=True)[:3]:
                print(f"  not reaching main: {t} ns x {' <- '.join(reversed(p))[:240]}", file=sys.stderr)
        return rows.get("main", {}).get("total", 0) / js["total"], rows, js

    def test_offcpu_eh_frame_reaches_main(self):
        """Off-CPU stacks unwound with the tables too (from the user
        registers saved at kernel entry): >= 99 % of unwindwork's blocked
        time reaches main through wait_b and wait_a (default mode auto);
        frame pointers alone (the earlier behaviour of every off-CPU
        stack) are printed for comparison."""
        share, rows, js = self.offcpu_share("auto")
        fp, _, _ = self.offcpu_share("fp", seconds=3)
        print(f"offcpu: {100 * share:.2f} % of blocked time under main with tables (auto), "
              f"{100 * fp:.2f} % with frame pointers only", file=sys.stderr)
        self.assertGreaterEqual(share, 0.99)
        self.assertGreaterEqual(rows["wait_a"]["total"], 0.99 * js["total"])
        self.assertGreaterEqual(rows["wait_b"]["total"], 0.99 * js["total"])

    def test_fp_for_comparison(self):
        truth, js, rows, _ = self.sample("fp", seconds=3)
        share_main = rows.get("main", {}).get("total", 0) / js["total"]
        print(f"fp: {100 * share_main:.2f} % of samples under main", file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
