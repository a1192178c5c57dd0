"""test_ebpf_unwind.py — user stacks without frame pointers: the eBPF
sampler's unwinder with tables from .eh_frame (ebpf.unwind = "eh_frame").

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
        deadline = time.time() + 60  # a loaded machine: the rows array and the verifier take a while
        while time.time() < deadline and e.metrics().get("wt_edge_ebpf_enabled") != 1:
            time.sleep(0.1)
        self.assertEqual(e.metrics().get("wt_edge_ebpf_enabled"), 1, e.read_log()[-2000:])
        if unwind != "fp":
            # the tables of every process already running are built and
            # loaded right after the start: the workload's process is then
            # announced, captured and given its tables within moments
            last, stable_since, deadline = -1, time.time(), time.time() + 60
            while time.time() < deadline and time.time() - stable_since < 3:
                m = e.metrics()
                rows = m.get("wt_edge_ebpf_unwind_rows")
                if rows != last or not rows or m.get("wt_edge_ebpf_unwind_pending_processes"):
                    last, stable_since = rows, time.time()
                time.sleep(0.2)
            print(f"unwind tables: {e.metrics().get('wt_edge_ebpf_unwind_files')} files, {last} rows, "
                  f"{e.metrics().get('wt_edge_ebpf_unwind_failed_files')} failed", file=sys.stderr)
        out = subprocess.run([self.work, str(seconds)], capture_output=True, text=True, timeout=seconds + 60)
        self.assertEqual(out.returncode, 0, out.stderr)
        truth = json.loads(out.stdout.strip().splitlines()[-1])
        flushes = e.metrics()["wt_edge_ebpf_flushes_total"]
        deadline = time.time() + 30
        while time.time() < deadline and e.metrics()["wt_edge_ebpf_flushes_total"] < flushes + 3:
            time.sleep(0.1)
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
        def walk(n, path, out):
            if not n["children"]:
                out.append((n["total"], " <- ".join(reversed(path + [n["name"]]))))
            for ch in n["children"]:
                walk(ch, path + [n["name"]], out)
        paths = []
        walk(flame["root"], [], paths)
        for t, p in sorted(paths, reverse=True)[:8]:
            print(f"  {t}: {p}", file=sys.stderr)
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

    def test_fp_for_comparison(self):
        truth, js, rows, _ = self.sample("fp", seconds=3)
        share_main = rows.get("main", {}).get("total", 0) / js["total"]
        print(f"fp: {100 * share_main:.2f} % of samples under main", file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
