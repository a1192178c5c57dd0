"""test_ebpf_alloc.py — sampled native allocations from the eBPF sampler
(bpf/alloc.bpf.c, edge/ebpf_alloc.c): uprobes on libc's malloc, calloc,
realloc and free, turned on for one service by the hub's policy
(rules.services[].ebpf.alloc), as `native_alloc` (bytes), and the sampled
allocations not yet freed as `inuse_space` snapshots at each flush, which
the hub's leak analysis (GET …/profiles/leaks) reads.

A private clickhouse-server, wt-hub and a replicating wt-edge whose own
config leaves allocations off (ebpf.alloc defaults to false); the policy
names service allocwork. tests/gen/allocwork (-O2, no frame pointers: the
eh_frame unwinder from the allocator's caller) runs as `allocwork` and, the
same binary, as `otherwork` (a service the policy leaves off). Each
function of allocwork allocates known amounts (its own count printed at
the end), sampled every 16 KiB on average (ebpf.alloc_sample_bytes: thousands of
samples per function, so 10 % is several standard deviations):
  - native_alloc per function (the edge's table for the pid) within 10 %
    of the bytes it asked for, attributed to that function (the leaf: the
    allocator's caller);
  - nothing for otherwork (its service is off: its libc file has the
    probes, its tgid is not sampled);
  - allocstatic (the same source linked -static; its service is on) is
    skipped and counted in wt_edge_ebpf_alloc_skipped_total{reason="static"};
  - the hub's leak analysis over the run names leak_allocs (it never frees;
    1 KiB blocks, tens of MiB over the run) and none of the functions that
    free what they allocate.
An edge with ebpf.alloc = true and alloc_inuse = false (entry probes only)
measures native_alloc per function within 10 % the same way and writes no
in-use type; tests/gen/allocwork/newwork.cc (C++ new/delete, which call
malloc/free) gets native_alloc under the functions that called new (its
operator new frame left out) within 10 %.
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
from harness.clickhouse import ClickHouse  # noqa: E402
from harness.edge import Edge, ROOT, replicating_edge  # noqa: E402
from harness.hub import Hub, BIN  # noqa: E402
from test_ebpf import requirements  # noqa: E402

WTCTL = os.path.join(BIN, "wtctl")
SRC = os.path.join(ROOT, "tests", "gen", "allocwork", "allocwork.c")
FREEING = ["small_allocs", "page_allocs", "calloc_allocs", "big_allocs", "realloc_allocs"]
SECONDS = 8


class EbpfAlloc(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="wt-ebpf-alloc-")
        cls.work = os.path.join(cls.tmp, "allocwork")
        cls.other = os.path.join(cls.tmp, "otherwork")
        subprocess.run(["cc", "-O2", "-fomit-frame-pointer", "-pthread", "-o", cls.work, SRC], check=True,
                       timeout=60)
        shutil.copy(cls.work, cls.other)
        cls.newwork = os.path.join(cls.tmp, "newwork")
        subprocess.run(["g++", "-O2", "-fno-allocation-dce", "-fomit-frame-pointer", "-o", cls.newwork,
                        os.path.join(ROOT, "tests", "gen", "allocwork", "newwork.cc")], check=True, timeout=120)
        cls.static = os.path.join(cls.tmp, "allocstatic")
        subprocess.run(["cc", "-static", "-O2", "-pthread", "-o", cls.static, SRC], check=True, timeout=60)
        cls.ch = ClickHouse(None)
        cls.ch.start()

    @classmethod
    def tearDownClass(cls):
        cls.ch.cleanup()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        why = requirements()
        if why:
            self.fail("the eBPF sampler cannot run here: " + "; ".join(why))
        self.pki = tempfile.mkdtemp(prefix="wt-pki-")
        self.addCleanup(shutil.rmtree, self.pki, True)
        subprocess.run([WTCTL, "pki", "init", "--dir", self.pki, "--hub-host", "127.0.0.1"], check=True,
                       capture_output=True)
        self.hub = Hub(self, self.ch, database="ebpfalloc", pki=self.pki, hub_extra="worker_interval_s = 0;")
        self.hub.start()
        self.assertIn(self.hub.create_project("demo")[0], (200, 201))

    def edge(self, edge_id):
        return replicating_edge(self, self.hub, self.pki, edge_id,
                                "\nebpf = { enabled = true; frequency_hz = 99; offcpu = false; lock = false; "
                                "flush_interval_s = 1; alloc_sample_bytes = 16384; };\n")

    def wait(self, pred, timeout, what, e):
        deadline = time.time() + timeout
        while time.time() < deadline and not pred():
            time.sleep(0.1)
        self.assertTrue(pred(), what + "\n" + e.read_log()[-3000:])

    def test_native_alloc_and_leak(self):
        pol = {"version": 1, "rules": {"services": [{"match": {"service": "alloc*"}, "ebpf": {"alloc": True}}]}}
        st, js = self.hub.request("PUT", "/v1/projects/demo/policy", json.dumps(pol), token=self.hub.admin_token)
        self.assertEqual(st, 200, js)
        bad = {"version": 1, "rules": {"ebpf": {"alloc": "yes"}}}
        st, js = self.hub.request("PUT", "/v1/projects/demo/policy", json.dumps(bad), token=self.hub.admin_token)
        self.assertEqual(st, 400, js)
        e = self.edge("edge-alloc")
        self.wait(lambda: e.metrics().get("wt_edge_ebpf_alloc_enabled") == 1, 60,
                  "the policy's ebpf.alloc did not load the allocation program", e)
        go, stop = os.path.join(self.tmp, "go"), os.path.join(self.tmp, "stop")
        procs = [subprocess.Popen(a, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for a in ([self.work, "run", str(SECONDS), go, stop], [self.other, "run", str(SECONDS), go],
                           [self.static, "loop", "1000", go])]
        try:
            # both met by the on-CPU sampler; allocwork's libc probed and its pid sampled
            self.wait(lambda: e.metrics().get("wt_edge_ebpf_alloc_processes", 0) >= 1 and
                      e.metrics().get("wt_edge_ebpf_alloc_files", 0) >= 1, 30,
                      "allocwork's libc was not probed", e)
            # the statically linked one (its service is on too) is skipped and counted
            self.wait(lambda: e.metrics().get('wt_edge_ebpf_alloc_skipped_total{reason="static"}', 0) >= 1, 30,
                      "the statically linked allocstatic was not counted as skipped", e)
            t0 = time.time()
            f0 = e.metrics()["wt_edge_ebpf_flushes_total"]
            with open(go, "w"):
                pass
            # allocwork leaks for SECONDS, and on until the edge has flushed
            # (taken an in-use snapshot) 6 times meanwhile: a loaded machine's
            # edge flushes less often than once a second (CI once saw 3
            # snapshots in 10 s, fewer than the leak analysis needs)
            deadline = t0 + SECONDS + 110
            while time.time() < deadline and (time.time() - t0 < SECONDS or
                                              e.metrics()["wt_edge_ebpf_flushes_total"] < f0 + 6):
                time.sleep(0.2)
            with open(stop, "w"):
                pass
            outs = [p.communicate(timeout=SECONDS + 150) for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        t1 = time.time()
        for p, (out, err) in zip(procs, outs):
            self.assertEqual(p.returncode, 0, err)
        truth = json.loads(outs[0][0].strip().splitlines()[-1])
        other = json.loads(outs[1][0].strip().splitlines()[-1])
        self.assertTrue(e.wait_flushes(2), "no flush\n" + e.read_log()[-3000:])

        st, js = e.query("table", service="allocwork", type="native_alloc", **{"label.pid": str(truth["pid"])})
        self.assertEqual(st, 200, js)
        rows = {r["function"]: r for r in js.get("rows", [])}
        for f in FREEING + ["leak_allocs"]:
            got, want = rows.get(f, {}).get("total", 0), truth["bytes"][f]
            print(f"  {f}: profile {got / 2**20:.1f} MiB, workload {want / 2**20:.1f} MiB "
                  f"({100 * (got - want) / want:+.1f} %)", file=sys.stderr)
        for f in FREEING + ["leak_allocs"]:
            got, want = rows.get(f, {}).get("total", 0), truth["bytes"][f]
            self.assertLess(abs(got - want) / want, 0.10, f"{f}: {got} bytes in the profile vs {want}")
            # the allocator's caller is the leaf (malloc's own frame left out)
            self.assertGreater(rows[f]["self"], 0.9 * rows[f]["total"], f)
        # realloc(NULL, n)'s own malloc is not counted again (under glibc's realloc)
        self.assertEqual([f for f in rows if "realloc" in f and f != "realloc_allocs"], [], sorted(rows))
        st, js = e.query("table", service="otherwork", type="native_alloc", **{"label.pid": str(other["pid"])})
        self.assertIn(st, (200, 404), js)
        self.assertEqual(js.get("rows", []) if st == 200 else [], [], "otherwork's service is off")

        # the leak, through the hub: the in-use snapshots replicate there
        rng = {"from": f"{t0 - 1:.3f}", "until": f"{t1 + 1:.3f}"}
        buckets = int(t1 - t0) + 2  # about a second each: one snapshot per point
        last = {}

        def leaks():
            st, js = self.hub.query("demo", "leaks", self.hub.admin_token, service="allocwork",
                                    buckets=str(buckets), **rng)
            last["st"], last["js"] = st, js
            return js if st == 200 else {}

        # replicated: at least 4 snapshots (the analysis's min_points), and
        # no new one for 3 s (a loaded machine flushes less often than 1/s)
        deadline, seen, since = time.time() + 60, -1, time.time()
        while time.time() < deadline and (seen < 4 or time.time() - since < 3):
            n = leaks().get("snapshots", 0)
            if n != seen:
                seen, since = n, time.time()
            time.sleep(0.5)
        self.assertGreaterEqual(leaks().get("snapshots", 0), 4, f"in-use snapshots did not reach the hub: {last}")
        js = leaks()
        cands = {c["function"]: c for c in js["candidates"]}
        print(f"  leak candidates {sorted(cands)}; leak_allocs slope "
              f"{cands.get('leak_allocs', {}).get('slope_per_s', 0) / 2**20:.2f} MiB/s, workload "
              f"{truth['leaked'] / (t1 - t0) / 2**20:.2f} MiB/s over the run", file=sys.stderr)
        self.assertIn("leak_allocs", cands, js)
        for f in FREEING:
            self.assertNotIn(f, cands, js)
        rc = e.stop()
        self.assertEqual(rc, 0, e.read_log()[-3000:])

    def test_allocations_only(self):
        """ebpf.alloc = true in the edge's own config (every service) with
        alloc_inuse = false: the entry probes only (no returns, no free);
        native_alloc per function as above, realloc(NULL, n)'s inner malloc
        still counted once, and no in-use type"""
        e = Edge(self)
        with open(e.cfg, "a") as f:
            f.write("\nebpf = { enabled = true; frequency_hz = 99; offcpu = false; lock = false; flush_interval_s = 1; "
                    "alloc = true; alloc_inuse = false; alloc_sample_bytes = 16384; };\n")
        e.start()
        self.wait(lambda: e.metrics().get("wt_edge_ebpf_alloc_enabled") == 1, 60, "allocation program not loaded", e)
        go = os.path.join(self.tmp, "go-only")
        procs = [subprocess.Popen([w, "run", "4", go], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for w in (self.work, self.newwork)]
        try:
            self.wait(lambda: e.metrics().get("wt_edge_ebpf_alloc_files", 0) >= 1, 30, "libc not probed", e)
            time.sleep(2)  # allocwork and newwork (spinning) met and entered
            with open(go, "w"):
                pass
            outs = [p.communicate(timeout=90) for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        for p, (out, err) in zip(procs, outs):
            self.assertEqual(p.returncode, 0, err)
        truth = json.loads(outs[0][0].strip().splitlines()[-1])
        cxx = json.loads(outs[1][0].strip().splitlines()[-1])
        self.assertTrue(e.wait_flushes(2), "no flush\n" + e.read_log()[-3000:])
        st, js = e.query("table", service="allocwork", type="native_alloc", **{"label.pid": str(truth["pid"])})
        self.assertEqual(st, 200, js)
        rows = {r["function"]: r.get("total", 0) for r in js.get("rows", [])}
        for f in FREEING + ["leak_allocs"]:
            got, want = rows.get(f, 0), truth["bytes"][f]
            print(f"  allocations only, {f}: profile {got / 2**20:.1f} MiB, workload {want / 2**20:.1f} MiB "
                  f"({100 * (got - want) / want:+.1f} %)", file=sys.stderr)
            self.assertLess(abs(got - want) / want, 0.10, f"{f}: {got} bytes in the profile vs {want}")
        # realloc(NULL, n)'s own malloc is not counted again (under glibc's realloc)
        self.assertEqual([f for f in rows if "realloc" in f and f != "realloc_allocs"], [], rows)
        st, js = e.query("table", service="allocwork", type="inuse_space", **{"label.pid": str(truth["pid"])})
        self.assertEqual(js.get("rows", []) if st == 200 else [], [], "no in-use snapshot without alloc_inuse")
        self.assertIn("inuse=false", e.read_log())
        # C++: operator new calls malloc; the function that called new is the leaf
        st, js = e.query("table", service="newwork", type="native_alloc", **{"label.pid": str(cxx["pid"])})
        self.assertEqual(st, 200, js)
        rows = {r["function"]: r for r in js.get("rows", [])}
        for fn, want in cxx["bytes"].items():
            f = fn + "()"  # demangled C++ names
            got = rows.get(f, {}).get("total", 0)
            print(f"  operator new, {f}: profile {got / 2**20:.1f} MiB, workload {want / 2**20:.1f} MiB "
                  f"({100 * (got - want) / want:+.1f} %)", file=sys.stderr)
            self.assertLess(abs(got - want) / want, 0.10, f"{f}: {got} bytes in the profile vs {want}")
            self.assertGreater(rows[f]["self"], 0.9 * rows[f]["total"], f)
        self.assertEqual([f for f in rows if "operator new" in f or f.startswith("_Zn")], [], sorted(rows))
        self.assertEqual(e.stop(), 0, e.read_log()[-3000:])


if __name__ == "__main__":
    unittest.main()
