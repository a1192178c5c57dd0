"""test_ebpf_jit.py — Node.js and JVM function names in the edge's eBPF
profiles from the runtimes' JIT perf maps (/tmp/perf-PID.map,
edge/perfmap.c), with no agent in the process and shares known by
construction.

One wt-edge samples the machine at 499 Hz (flush every second):
  - node: tests/gen/node/jsthree.js under Debian's node with
    --perf-basic-prof: hotAlpha / hotBeta / hotGamma spend 50 / 30 / 20 %
    of the CPU (the program times each slice itself); the profile names
    them as V8 writes them (`JS:*hotAlpha /…/jsthree.js:LINE:COL`, the
    frames' mapping being `[jit]`) with shares within 3 points of the
    program's own and within 7 of `node --cpu-prof` of the same run; the
    stacks run on through the JIT frames to runCpu.
    --perf-basic-prof-only-functions names them too.
  - node, map that grows: lateDelta is made (new Function) only after
    several flushes have read the map; it is named too (its entries are
    appended later and read then), with its share of the run.
  - node, short-lived: runs of 0.4 s, gone by the flush, keep the names
    (of their samples in JIT code, named or bare, over 90 % named).
  - jvm: tests/gen/java/JitThree.java (compiled here with javac) on
    Debian's JDK 17, its three methods 50 / 30 / 20 % (thread CPU time
    measured by the program); the test runs `jcmd PID Compiler.perfmap`
    every second (each run rewrites the whole file) and the JVM dumps it
    once more at exit (-XX:+DumpPerfMapAtExit), with
    -XX:+PreserveFramePointer; the profile names them
    as HotSpot writes them (`long JitThree.hotAlpha(long)`) for over 75 %
    of the time the program measured in them after a 2 s warm-up (with the
    same split), with shares of the whole run within 3 points
    of the program's own and within 7 of a JFR recording of the same run
    (jdk.ExecutionSample every 1 ms; `jfr print --json`, top frames);
    over 90 % of their samples reach the interpreted main (`Interpreter`)
    through their compiled caller (`long JitThree.call(int, long)`,
    named in over half of them).
A missing runtime skips its tests with the reason (appliance/install-deps
installs node and openjdk-17-jdk-headless); missing privileges fail them.
"""
import collections
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness.edge import Edge, ROOT  # noqa: E402
from test_ebpf import requirements  # noqa: E402

FREQ = 499
JS = os.path.join(ROOT, "tests", "gen", "node", "jsthree.js")
JAVA = os.path.join(ROOT, "tests", "gen", "java", "JitThree.java")
HOT = ("hotAlpha", "hotBeta", "hotGamma")
# V8's perf-map names: "JS:" + tier mark (~ interpreted/baseline trampoline,
# ^ Sparkplug, + Maglev, * TurboFan) + name + " " + script:line:col
V8_NAME = r"^JS:[~^+*]?{} \S*jsthree\.js:\d+:\d+$"
# HotSpot's: return type, Class.method(argument types)
JVM_NAME = r"^long JitThree\.{}\(long\)$"


def rows_of(rows, pat, name):
    rx = re.compile(pat.format(re.escape(name)))
    return [r for r in rows if rx.match(r["function"])]


def fn_total(rows, pat, name):
    return sum(r["total"] for r in rows_of(rows, pat, name))


def cpuprofile_shares(path, names):
    """Samples of a V8 .cpuprofile whose stack holds each of names."""
    with open(path) as f:
        prof = json.load(f)
    parent, fname = {}, {}
    for n in prof["nodes"]:
        fname[n["id"]] = n["callFrame"]["functionName"]
        for c in n.get("children", []):
            parent[c] = n["id"]
    out = collections.Counter()
    for s in prof["samples"]:
        seen, i = set(), s
        while i is not None:
            seen.add(fname.get(i))
            i = parent.get(i)
        for nm in names:
            out[nm] += nm in seen
    return out


class EbpfJit(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="wt-ebpf-jit-")
        cls.edge = None
        cls.maps = []

    @classmethod
    def tearDownClass(cls):
        if cls.edge:
            cls.edge.cleanup()
        for m in cls.maps:
            try:
                os.unlink(m)
            except OSError:
                pass
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        why = requirements()
        if why:
            self.fail("the eBPF sampler cannot run here: " + "; ".join(why))
        if EbpfJit.edge is None:
            e = Edge(None)
            with open(e.cfg, "a") as f:
                f.write(f"\nebpf = {{ enabled = true; frequency_hz = {FREQ}; offcpu = false; "
                        "flush_interval_s = 1; };\n")
            e.start()
            EbpfJit.edge = e
            self.assertIsNone(e.wait_sampler())

    # ---- helpers ------------------------------------------------------------
    def tool(self, name):
        path = shutil.which(name)
        if not path:
            self.skipTest(f"{name} is not installed (appliance/install-deps installs nodejs and "
                          "openjdk-17-jdk-headless)")
        return path

    def wait_flushes(self, n=2):
        e = self.edge
        e.wait_flushes(n)

    def table(self, pid, services):
        """The process's cpu table under whichever of services holds most
        of it (the process name; a JVM's threads may show under others)."""
        self.wait_flushes()
        best = None
        for svc in services:
            st, js = self.edge.query("table", service=svc, type="cpu", **{"label.pid": str(pid)})
            self.assertEqual(st, 200, js)
            if js.get("total") and (best is None or js["total"] > best["total"]):
                best = js
        self.assertIsNotNone(best, f"no profile for pid {pid} under {services}")
        return best

    def check_shares(self, rows, pat, names, truth, ref, what, total, named_of="total"):
        """Shares of names in the edge's profile against the program's own
        (±3 points) and the reference profiler's (±7). The named functions
        hold most of the process's samples, next to few bare addresses
        (named_of "total"), or (named_of (lo, hi): a JVM, with threads of
        its own) over 75 % of lo ns and under 120 % of hi ns."""
        got = {f: fn_total(rows, pat, f) for f in names}
        stot = sum(got.values())
        top = sorted(rows, key=lambda r: -r["self"])[:10]
        ttot, rtot = sum(truth[f] for f in names), sum(ref[f] for f in names)
        selfs = {f: sum(r["self"] for r in rows_of(rows, pat, f)) for f in names}
        print(f"{what}: self shares " + ", ".join(f"{f} {100.0 * v / max(sum(selfs.values()), 1):.1f}%"
                                                  for f, v in selfs.items()), file=sys.stderr)
        print(f"{what}: named {stot} of {total} sampled, {ttot} measured; top rows {top}", file=sys.stderr)
        bare = [r for r in rows if re.match(r"^0x[0-9a-f]+$", r["function"])]
        print(f"{what}: bare addresses {sum(r['self'] for r in bare)} self in {len(bare)} rows", file=sys.stderr)
        if named_of == "total":
            # (under load, node's helper threads, the --cpu-prof sampler's
            # among them, take a larger part: 0.75 seen)
            self.assertGreater(stot, 0.6 * total, f"{what}: the hot functions are not named; top rows {top}")
            bare = sum(r["self"] for r in rows if re.match(r"^0x[0-9a-f]+$", r["function"]))
            self.assertLess(bare, 0.05 * stot, f"{what}: JIT code left as bare addresses; top rows {top}")
        else:
            lo, hi = named_of
            self.assertGreater(stot, 0.75 * lo, f"{what}: the hot functions are not named; top rows {top}")
            self.assertLess(stot, 1.2 * hi, f"{what}: more time named than the program measured")
        self.assertGreater(rtot, 0, f"{what}: the reference profile has none of {names}")
        for f in names:
            want, g, r = 100.0 * truth[f] / ttot, 100.0 * got[f] / stot, 100.0 * ref[f] / rtot
            print(f"{what} {f}: workload {want:.1f}% reference {r:.1f}% edge {g:.1f}%", file=sys.stderr)
        for f in names:
            want, g, r = 100.0 * truth[f] / ttot, 100.0 * got[f] / stot, 100.0 * ref[f] / rtot
            self.assertLess(abs(g - want), 3.0, f"{what} {f}: edge share {g:.1f}% vs measured {want:.1f}%")
            # the reference is the noisier one: --cpu-prof on a loaded
            # machine was up to 4.6 points off the program's own truth
            self.assertLess(abs(g - r), 7.0, f"{what} {f}: edge share {g:.1f}% vs reference {r:.1f}%")
        return stot

    def run_node(self, flags, *args, cpu_prof=None):
        node = self.tool("node")
        cmd = [node] + flags + ["--no-turbo-inlining"]
        if cpu_prof:
            cmd += ["--cpu-prof", "--cpu-prof-dir", cpu_prof]
        out = subprocess.run(cmd + [JS] + [str(a) for a in args], capture_output=True, text=True,
                             timeout=120, cwd=self.tmp)
        self.assertEqual(out.returncode, 0, out.stderr)
        truth = json.loads(out.stdout.strip().splitlines()[-1])
        EbpfJit.maps.append(f"/tmp/perf-{truth['pid']}.map")
        return truth

    # ---- Node.js --------------------------------------------------------------
    def test_1_node_names_and_shares(self):
        jit0 = self.edge.metrics().get("wt_edge_ebpf_jit_frames_total", 0)
        pdir = os.path.join(self.tmp, "cpuprof")
        truth = self.run_node(["--perf-basic-prof"], "cpu", 6, cpu_prof=pdir)
        profs = glob.glob(os.path.join(pdir, "*.cpuprofile"))
        self.assertEqual(len(profs), 1, profs)
        ref = cpuprofile_shares(profs[0], HOT)
        js = self.table(truth["pid"], ("node",))
        rows = js["rows"]
        stot = self.check_shares(rows, V8_NAME, HOT, truth["cpu_ns"], ref, "node", js["total"])
        # optimized code (TurboFan, `*`) holds most of it
        opt = sum(r["total"] for f in HOT for r in rows_of(rows, V8_NAME, f) if r["function"].startswith("JS:*"))
        self.assertGreater(opt, 0.5 * stot, "hot functions not in TurboFan code")
        # V8 keeps frame pointers: the caller's JIT frame is named too
        caller = fn_total(rows, V8_NAME, "runCpu")
        self.assertGreater(caller, 0.95 * stot, f"runCpu holds {caller} of {stot}")
        self.assertGreater(self.edge.metrics().get("wt_edge_ebpf_jit_frames_total", 0), jit0)

    def test_2_node_only_functions(self):
        """--perf-basic-prof-only-functions (no stubs or builtins in the
        map): the three functions are named."""
        truth = self.run_node(["--perf-basic-prof-only-functions"], "cpu", 3)
        js = self.table(truth["pid"], ("node",))
        got = {f: fn_total(js["rows"], V8_NAME, f) for f in HOT}
        top = sorted(js["rows"], key=lambda r: -r["self"])[:8]
        print(f"only-functions: {got} of {js['total']}; top {top}", file=sys.stderr)
        # the rest is node's start and the calibration (builtins, C++);
        # the shares are test_1's (here a few hundred samples on a loaded
        # machine: 6 points off seen)
        self.assertGreater(sum(got.values()), 0.5 * js["total"])
        for f in HOT:
            self.assertGreater(got[f], 0, f"{f} not named")

    def test_3_node_map_grows(self):
        """lateDelta's code is appended to the map after the edge has read
        the map at several flushes: the later read names it."""
        node = self.tool("node")
        p = subprocess.Popen([node, "--perf-basic-prof", "--no-turbo-inlining", JS, "late", "3"],
                             stdout=subprocess.PIPE, text=True, cwd=self.tmp)
        mapfile = f"/tmp/perf-{p.pid}.map"
        EbpfJit.maps.append(mapfile)
        try:
            time.sleep(2.2)  # hotAlpha runs alone for 3 s
            with open(mapfile) as f:
                early = f.read()
            self.assertIn("hotAlpha", early)
            self.assertNotIn("lateDelta", early, "lateDelta compiled before it was made?")
            j0 = self.edge.metrics().get("wt_edge_ebpf_jit_frames_total", 0)
            self.assertGreater(j0, 0, "the edge has not read the map before it grew")
            out, _ = p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertEqual(p.returncode, 0)
        truth = json.loads(out.strip().splitlines()[-1])
        js = self.table(truth["pid"], ("node",))
        rows = js["rows"]
        got = {f: fn_total(rows, V8_NAME.replace(r"\S*jsthree\.js", r"\S*"), f) for f in ("hotAlpha", "lateDelta")}
        top = sorted(rows, key=lambda r: -r["self"])[:8]
        tot = sum(got.values())
        want = 100.0 * truth["cpu_ns"]["lateDelta"] / sum(truth["cpu_ns"].values())
        print(f"map grows: lateDelta edge {100.0 * got['lateDelta'] / max(tot, 1):.1f}% workload {want:.1f}%; "
              f"top {top}", file=sys.stderr)
        self.assertGreater(tot, 0.8 * js["total"], f"top rows {top}")
        self.assertLess(abs(100.0 * got["lateDelta"] / tot - want), 5.0)

    def test_4_node_short_lived(self):
        """Processes gone by the flush keep the names of their JIT code:
        of the samples in JIT code (named, or bare addresses in no
        mapping), the named ones hold nearly all. Before the process's
        /tmp was pinned at its capture, and while the capture of its last
        samples (taken in its exit, with no address space) marked its
        image superseded, most runs here had none named."""
        named = bare = 0
        for _ in range(6):
            truth = self.run_node(["--perf-basic-prof"], "cpu", 0.4)
            js = self.table(truth["pid"], ("node",))
            n = sum(r["self"] for r in js["rows"] if r["function"].startswith("JS:"))
            b = sum(r["self"] for r in js["rows"] if re.match(r"^0x[0-9a-f]+$", r["function"]))
            hot = sum(fn_total(js["rows"], V8_NAME, f) for f in HOT)
            print(f"short-lived {truth['pid']}: JS self {n}, bare addresses {b}, hot functions {hot} "
                  f"of {js['total']}", file=sys.stderr)
            self.assertGreater(hot, 0, f"pid {truth['pid']}: no hot function named")
            named += n
            bare += b
        self.assertGreater(named, 0.9 * (named + bare))

    # ---- JVM ------------------------------------------------------------------
    def test_5_jvm_names_and_shares(self):
        java, javac, jcmd, jfr = (self.tool(t) for t in ("java", "javac", "jcmd", "jfr"))
        cls = os.path.join(self.tmp, "java")
        subprocess.run([javac, "-d", cls, JAVA], check=True, timeout=120)
        rec = os.path.join(self.tmp, "jit.jfr")
        jfc = os.path.join(self.tmp, "sample.jfc")
        with open(jfc, "w") as f:
            f.write('<?xml version="1.0" encoding="UTF-8"?>\n<configuration version="2.0">\n'
                    '<event name="jdk.ExecutionSample"><setting name="enabled">true</setting>'
                    '<setting name="period">1 ms</setting></event>\n</configuration>\n')
        # DumpPerfMapAtExit: the map once more at the exit, for the code
        # run since the last jcmd (read after the exit: perfmap.h)
        p = subprocess.Popen([java, "-XX:CompileCommand=quiet", "-XX:CompileCommand=dontinline,JitThree::*",
                              "-XX:+UnlockDiagnosticVMOptions", "-XX:+DumpPerfMapAtExit", "-XX:+PreserveFramePointer",
                              f"-XX:StartFlightRecording=filename={rec},settings={jfc}", "-cp", cls, "JitThree", "8"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=self.tmp)
        EbpfJit.maps.append(f"/tmp/perf-{p.pid}.map")
        stop = threading.Event()
        perfmaps = []

        def refresher():
            # the JVM writes its map only when asked: every second, as a
            # site would from cron or a sidecar
            while not stop.wait(1.0) and p.poll() is None:
                r = subprocess.run([jcmd, str(p.pid), "Compiler.perfmap"], capture_output=True, text=True,
                                   timeout=30)
                perfmaps.append(r.returncode)

        t = threading.Thread(target=refresher)
        t.start()
        try:
            out, err = p.communicate(timeout=120)
        finally:
            stop.set()
            t.join()
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertEqual(p.returncode, 0, err)
        self.assertIn(0, perfmaps, "jcmd Compiler.perfmap never succeeded")
        truth = json.loads(out.strip().splitlines()[-1])
        r = subprocess.run([jfr, "print", "--json", "--events", "jdk.ExecutionSample", rec], capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        ref = collections.Counter()
        for ev in json.loads(r.stdout)["recording"]["events"]:
            frames = ev["values"]["stackTrace"]["frames"]
            if frames and frames[0]["method"]["type"]["name"] == "JitThree":
                ref[frames[0]["method"]["name"]] += 1
        print(f"jfr samples {dict(ref)}; jcmd runs {len(perfmaps)}", file=sys.stderr)
        js = self.table(truth["pid"], ("java", "main", "JitThree"))
        # truth: the whole run (the 2 s warm-up has the same split); named:
        # most of the measured part after it (the warm-up begins in the
        # interpreter, `Interpreter`, and before the first map), at most all
        whole = {f: truth["cpu_ns"][f] + truth["warm_ns"][f] for f in HOT}
        stot = self.check_shares(js["rows"], JVM_NAME, HOT, whole, ref, "jvm", js["total"],
                                 named_of=(sum(truth["cpu_ns"].values()), sum(whole.values())))
        call = sum(r["total"] for r in js["rows"] if r["function"] == "long JitThree.call(int, long)")
        interp = sum(r["total"] for r in js["rows"] if r["function"] == "Interpreter")
        print(f"jvm callers: JitThree.call {call}, Interpreter {interp} of {stot}", file=sys.stderr)
        # -XX:+PreserveFramePointer: the stacks run on from the JIT leaf
        # through its compiled caller to the interpreted main (without it,
        # 0.05 % reached the caller here: C2's code has no frame pointer
        # and no unwind table). The caller is named for 71-95 % of them:
        # its code recompiled (tiers) is a bare address until the next jcmd.
        self.assertGreater(interp, 0.9 * stot, "JIT stacks do not reach the interpreted main")
        self.assertGreater(call, 0.5 * stot, "JIT stacks end at the leaf")


if __name__ == "__main__":
    unittest.main()
