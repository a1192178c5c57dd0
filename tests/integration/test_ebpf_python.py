"""test_ebpf_python.py — CPython function names in the edge's eBPF profiles,
with no agent in the process (bpf/python_walk.h, edge/ebpf_python.c).

One wt-edge samples the machine at 499 Hz while the stock Debian python3
(/usr/bin/python3, 3.11, a static build: no libpython) runs
tests/gen/python/pywork.py, which measures its own truth with
time.process_time:
  - cpu: hot_alpha / hot_beta / hot_gamma spend 50 / 30 / 20 % of the CPU;
    the profile names them as `pywork.hot_alpha (pywork.py:LINE)`; their
    shares (inclusive time, summed over lines) match within 3 points; their
    callers run_cpu, main and <module> hold (nearly) all of it.
  - zlib: compress_loop calls zlib.compress; the native deflate code shows
    under the Python frame (flame tree: a child of compress_loop's node).
  - short-lived: 8 runs of 0.3 s; the processes are gone by the flush, the
    names were read while they ran.
  - other versions: each CPython 3.11-3.13 found under pyenv (a shared
    libpython build) gets the hot functions named, called from <module>;
    a version that is not installed is skipped with the reason.
  - ebpf.python = false: a second edge gets no Python frames.
  - a live change (ebpf.python true → false, SIGHUP) stops the walk for a
    running process: the program's Python sample count (machine-wide)
    falls below 5 % of its rate before the change.
  - off-CPU: with offcpu on, the time sleep_in_python spends in
    time.sleep is under `pywork.sleep_in_python (pywork.py:LINE)` (±15 %
    of the slept time the program measured).
  - a cut walk: a frame the walk cannot read (its page PROT_NONE) ends
    the Python stack with [truncated] after the last frame read.
Missing privileges or kernel features fail the test with the reason; a
/usr/bin/python3 other than 3.11 fails it too.
"""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness.edge import Edge, ROOT  # noqa: E402
from test_ebpf import requirements  # noqa: E402

FREQ = 499
WORK = os.path.join(ROOT, "tests", "gen", "python", "pywork.py")
HOT = ("hot_alpha", "hot_beta", "hot_gamma")


def leaf_paths(node, pre=()):
    """(self value, root-first names) of every flame graph node with self
    time."""
    path = pre + (node["name"],)
    out = [(node["self"], path[1:])] if node.get("self") else []
    for c in node.get("children", []):
        out += leaf_paths(c, path)
    return out


def fn_rows(rows, name):
    """Rows of Python function `name` of pywork (one per line number)."""
    pat = re.compile(rf"^pywork\.{re.escape(name)} \(pywork\.py:\d+\)$")
    return [r for r in rows if pat.match(r["function"])]


class EbpfPython(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="wt-ebpf-python-")
        cls.edge = None

    @classmethod
    def tearDownClass(cls):
        if cls.edge:
            cls.edge.cleanup()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        why = requirements()
        if why:
            self.fail("the eBPF sampler cannot run here: " + "; ".join(why))
        py = "/usr/bin/python3"
        self.assertTrue(os.path.exists(py), "python3 is part of the base system")
        ver = subprocess.run([py, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout.strip()
        self.assertEqual(ver, "3.11", "Debian 12's python3 is 3.11; this one is " + ver)
        self.py = py
        if EbpfPython.edge is None:
            EbpfPython.edge = self.start_edge("")

    def start_edge(self, extra, offcpu=False):
        e = Edge(None)
        with open(e.cfg, "a") as f:
            f.write(f"\nebpf = {{ enabled = true; frequency_hz = {FREQ}; offcpu = {'true' if offcpu else 'false'}; "
                    f"flush_interval_s = 1; {extra} }};\n")
        try:
            e.start()
            self.assertIsNone(e.wait_sampler())
        except BaseException:
            e.cleanup()  # not left running when the test fails here
            raise
        return e

    def run_work(self, *args, py=None):
        out = subprocess.run([py or self.py, WORK] + [str(a) for a in args], capture_output=True, text=True,
                             timeout=120, cwd=self.tmp)
        self.assertEqual(out.returncode, 0, out.stderr)
        return json.loads(out.stdout.strip().splitlines()[-1])

    def wait_flushes(self, e):
        e.wait_flushes(2)

    def table(self, e, pid, view="table", typ="cpu"):
        """The process's profile under the service that has most of it: the
        process name, python3.11 for /usr/bin/python3 (the executable's
        name); its last moments can show under the thread name python3."""
        self.wait_flushes(e)
        labels = {"label.pid": str(pid)} if pid is not None else {}
        best = None
        for svc in ("python3", "python3.11", "python3.12", "python3.13"):
            st, js = e.query("table", service=svc, type=typ, **labels)
            self.assertEqual(st, 200, js)
            if js.get("total") and (best is None or js["total"] > best[1]["total"]):
                best = (svc, js)
        self.assertIsNotNone(best, f"no profile for pid {pid}")
        if view == "table":
            return best[1]
        # (the edge answers a flamegraph of a series without samples with
        # a 500 "out of memory rendering the view": ask the one with them)
        st, js = e.query(view, service=best[0], type=typ, **labels)
        self.assertEqual(st, 200, js)
        return js

    def check_shares(self, rows, truth, total, what):
        tot = {f: sum(r["total"] for r in fn_rows(rows, f)) for f in HOT}
        top = sorted(rows, key=lambda r: -r["total"])[:12]
        stot, mtot = sum(tot.values()), sum(truth.values())
        self.assertGreater(stot, 0.8 * total, f"{what}: the hot functions are not named; top rows {top}")
        for f in HOT:
            want, got = 100.0 * truth[f] / mtot, 100.0 * tot[f] / stot
            print(f"{what} {f}: workload {want:.1f}% sampler {got:.1f}%", file=sys.stderr)
            self.assertLess(abs(got - want), 3.0, f"{f}: sampled share {got:.1f}% vs measured {want:.1f}%")
        return stot

    def test_1_cpu_names_and_shares(self):
        truth = self.run_work("cpu", 6)
        js = self.table(self.edge, truth["pid"])
        rows = js["rows"]
        stot = self.check_shares(rows, truth["cpu_ns"], js["total"], "cpu")
        for caller in ("run_cpu", "main", "<module>"):
            got = sum(r["total"] for r in fn_rows(rows, caller))
            self.assertGreater(got, 0.97 * stot, f"{caller} does not hold the hot functions: {got} of {stot}")
        self.assertGreater(self.edge.metrics().get("wt_edge_ebpf_python_frames_total", 0), 0)

    def test_2_zlib_native_under_python(self):
        self.run_work("zlib", 3)
        truth = self.run_work("zlib", 3)
        js = self.table(self.edge, truth["pid"], view="flamegraph")
        found = []

        def native_below(node):
            # the native frames under a Python frame, down to the next
            # Python frame: with frame pointers only the library's frames
            # follow at once; unwound with tables, the interpreter's call
            # path (PyObject_Vectorcall, the module's C function) comes first
            for c in node.get("children", []):
                name = c.get("name", "")
                if name.startswith("pywork.") or c.get("total", c.get("value", 0)) <= 0:
                    continue
                found.append((name, c.get("total", c.get("value", 0))))
                native_below(c)

        def walk(node, parent):
            name = node.get("name", "")
            if fn_rows([{"function": name}], "compress_loop"):
                native_below(node)
                return
            for c in node.get("children", []):
                walk(c, node)

        walk(js["root"], None)
        print("native under compress_loop: " + ", ".join(f"{n} {v}" for n, v in found[:8]), file=sys.stderr)
        self.assertTrue(found, "no native frame under compress_loop; " + json.dumps(js)[:3000])
        # Debian's libz exports deflate but not its static helpers, which
        # stay libz.so.1.2.13+0x…: either way, the library's frames
        self.assertTrue([n for n, _ in found if "libz" in n or "deflate" in n], found)

    def test_3_short_lived(self):
        """Processes gone before the flush keep their Python names: the
        code objects are read when the program first sees their stacks."""
        pids = [self.run_work("short", 0.3)["pid"] for _ in range(8)]
        self.wait_flushes(self.edge)
        named = total = unnamed = 0
        for pid in pids:
            js = self.table(self.edge, pid)
            total += js["total"]
            named += sum(r["total"] for f in HOT for r in fn_rows(js["rows"], f))
            # the code objects of modules being imported are freed right
            # after: a sample there may find nothing left to read
            unnamed += sum(r["total"] for r in js["rows"] if r["function"] == "[python]")
        print(f"short-lived: {named / max(total, 1):.3f} of the CPU in the named hot functions, "
              f"{unnamed / max(total, 1):.3f} in [python]", file=sys.stderr)
        self.assertGreater(named, 0.6 * total)
        self.assertLess(unnamed, 0.2 * total)  # 0.4-7 % seen on a loaded 2-CPU VM

    def test_4_other_versions(self):
        """pyenv's CPython builds (libpython3.X.so): 3.11, 3.12, 3.13."""
        missing = []
        for v in ("3.11", "3.12", "3.13"):
            cands = sorted(glob.glob(f"/root/.pyenv/versions/{v}.*/bin/python{v}"))
            if not cands:
                missing.append(v)
                continue
            truth = self.run_work("cpu", 2, py=cands[-1])
            js = self.table(self.edge, truth["pid"])
            rows = js["rows"]
            tot = {f: sum(r["total"] for r in fn_rows(rows, f)) for f in HOT}
            mod = sum(r["total"] for r in fn_rows(rows, "<module>"))
            print(f"{cands[-1]}: " + ", ".join(f"{f} {v / js['total']:.2f}" for f, v in tot.items()) +
                  f", <module> {mod / js['total']:.2f}", file=sys.stderr)
            for f in HOT:
                self.assertGreater(tot[f], 0, f"{cands[-1]}: {f} not named")
            self.assertGreater(mod, 0.9 * sum(tot.values()), f"{cands[-1]}: stacks do not reach <module>")
        if missing:
            self.skipTest("CPython " + ", ".join(missing) + " not installed (pyenv)")

    def test_5_policy_off(self):
        """ebpf.python = false: native frames only."""
        e = self.start_edge("python = false;")
        try:
            truth = self.run_work("cpu", 1.5)
            js = self.table(e, truth["pid"])
            py = [r for r in js["rows"] if r["function"].startswith("pywork.")]
            self.assertEqual(py, [], "Python frames with ebpf.python = false")
            self.assertIn("_PyEval_EvalFrameDefault", {r["function"] for r in js["rows"]})
            self.assertEqual(e.metrics().get("wt_edge_ebpf_python_frames_total"), 0)
        finally:
            e.cleanup()

    def test_6_offcpu(self):
        """Blocked time gets the same Python frames (the sched_switch
        program walks them at switch-out)."""
        e = self.start_edge("offcpu_min_us = 1000;", offcpu=True)
        try:
            truth = self.run_work("sleep", 2)
            js = self.table(e, truth["pid"], typ="offcpu")
            rows = js["rows"]
            got = sum(r["total"] for r in fn_rows(rows, "sleep_in_python"))
            mod = sum(r["total"] for r in fn_rows(rows, "<module>"))
            top = sorted(rows, key=lambda r: -r["total"])[:8]
            print(f"offcpu sleep_in_python {got} ns vs slept {truth['slept_ns']} ns "
                  f"({got / truth['slept_ns']:.3f}), <module> {mod}", file=sys.stderr)
            self.assertGreater(got, 0.85 * truth["slept_ns"], f"top rows {top}")
            self.assertLess(got, 1.15 * truth["slept_ns"], f"top rows {top}")
            # as on-CPU (the same bound), every stack reaches <module> or
            # says that its walk was cut ([truncated] right after its last
            # Python frame: a frame the program could not read, as
            # test_8_walk_cut makes happen). On two CI machines 3.6 % and
            # once 50 % of the blocked time ended below <module> with no
            # such mark (before walks were marked); not seen here in 14
            # runs (0-4 %). A failure names the largest stacks without
            # <module> and the Python metrics.
            fg = self.table(e, truth["pid"], view="flamegraph", typ="offcpu")

            def cut(p):
                return any(p[i] == "[truncated]" and p[i + 1].startswith("pywork.") for i in range(len(p) - 1))
            short = [(v, p) for v, p in leaf_paths(fg["root"])
                     if any(n.startswith("pywork.sleep_in_python (") for n in p) and not any("<module>" in n for n in p)]
            marked = sum(v for v, p in short if cut(p))
            print(f"offcpu: {marked} ns of sleep_in_python's stacks were cut (marked [truncated])", file=sys.stderr)
            if mod + marked <= 0.9 * got:
                m = {k: v for k, v in e.metrics().items() if "python" in k or "lost" in k}
                short.sort(key=lambda vp: -vp[0])
                self.fail(f"stacks do not reach <module>: {mod} of {got} ({marked} marked cut); the largest without it: "
                          + "; ".join(f"{v}: {' <- '.join(reversed(p))}" for v, p in short[:6]) + f"; metrics {m}")
        finally:
            e.cleanup()

    def test_8_walk_cut(self):
        """A frame the walk cannot read (pywork's `cut`: walk_cut's frame
        page is PROT_NONE while blocked_behind_big sleeps) ends the Python
        stack there: the frames read stay, [truncated] takes the place of
        the callers, the edge counts the cut."""
        e = self.start_edge("offcpu_min_us = 1000;", offcpu=True)
        try:
            truth = self.run_work("cut", 2)
            fg = self.table(e, truth["pid"], view="flamegraph", typ="offcpu")
            paths = [(v, p) for v, p in leaf_paths(fg["root"])
                     if any(n.startswith("pywork.walk_cut.<locals>.blocked_behind_big (") for n in p)]
            got = sum(v for v, _ in paths)
            print(f"walk cut: blocked_behind_big {got} ns vs slept {truth['slept_ns']} ns", file=sys.stderr)
            self.assertGreater(got, 0.85 * truth["slept_ns"], f"largest stacks {sorted(leaf_paths(fg['root']), key=lambda x: -x[0])[:3]}")

            def cut_after_big(p):
                i = next(i for i, n in enumerate(p) if n.startswith("<string>.big ("))  # exec'ed
                return i > 0 and p[i - 1] == "[truncated]" and not any(n.startswith("pywork.walk_cut (") or "<module>" in n for n in p)
            marked = sum(v for v, p in paths if cut_after_big(p))
            self.assertGreater(marked, 0.9 * got, "stacks cut at walk_cut's frame do not show [truncated] after big: "
                               + "; ".join(" <- ".join(reversed(p)) for _, p in paths[:3]))
            self.assertGreater(e.metrics().get("wt_edge_ebpf_python_stacks_cut_total", 0), 0)
        finally:
            e.cleanup()

    def test_7_live_change(self):
        """Settings changed while a Python process runs: the process is
        checked again at the next flush and leaves the program's map."""
        e = self.start_edge("")
        p = subprocess.Popen([self.py, WORK, "cpu", "14"], stdout=subprocess.DEVNULL, cwd=self.tmp)
        try:
            deadline = time.time() + 10
            while time.time() < deadline and not e.metrics().get("wt_edge_ebpf_python_samples_total"):
                time.sleep(0.2)
            self.assertGreater(e.metrics().get("wt_edge_ebpf_python_samples_total", 0), 0)
            r0 = e.metrics().get("wt_edge_ebpf_python_samples_total")
            time.sleep(3)  # the counter moves at each flush (1 s)
            rate = (e.metrics().get("wt_edge_ebpf_python_samples_total") - r0) / 3
            with open(e.cfg) as f:
                text = f.read()
            with open(e.cfg, "w") as f:
                f.write(re.sub(r"flush_interval_s = 1; ", "flush_interval_s = 1; python = false; ", text))
            e.proc.send_signal(signal.SIGHUP)
            time.sleep(3)  # the reload, then a flush that sees the process
            s1 = e.metrics().get("wt_edge_ebpf_python_samples_total")
            time.sleep(3)
            s2 = e.metrics().get("wt_edge_ebpf_python_samples_total")
            self.assertIsNone(p.poll(), "the workload ended too early for the check")
            print(f"Python samples/s before the change {rate:.0f}, after {(s2 - s1) / 3:.1f}", file=sys.stderr)
            # other Python processes of the machine that were not sampled
            # since the change are checked again at their next flush
            self.assertGreater(rate, 10, "the workload was not sampled with Python frames before the change")
            self.assertLess(s2 - s1, 0.05 * 3 * rate, "the program still walks Python frames after python = false")
        finally:
            p.kill()
            p.wait()
            e.cleanup()


if __name__ == "__main__":
    unittest.main()
