"""test_ebpf_lock.py — lock contention from the eBPF sampler
(bpf/lock.bpf.c, edge/ebpf_lock.c): futex waits of glibc's mutexes and
rwlocks, per stack, as the `lock` (nanoseconds) and `mutex_contentions`
(count) sample types.

tests/gen/lockwork, built -O2 -fomit-frame-pointer, runs three threads
contending on one mutex in contend_mutex, an rwlock writer and two readers
in contend_rwlock, a thread locking its own mutex in uncontended and a
condition-variable waiter in cond_waiter, timing its lock calls with
clock_gettime. The edge's lock profile of that pid names contend_mutex and
contend_rwlock above the pthread frames (the eh_frame unwinder through
glibc's frameless __lll_lock_wait), their wait-time shares within 5 points
of the workload's own, the total within 10 %, contentions (the workload
counts lock calls whose trylock failed) within 10 %;
uncontended absent, and the condition variable's waits not counted (its mutex
taken by the signaller while the waiter holds it is a real, tiny, mutex
contention and may be). A second edge with ebpf.lock = false
attaches nothing and stores no lock samples.
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
import test_ebpf_unwind  # noqa: E402  (its settle(); not its tests)

SRC = os.path.join(ROOT, "tests", "gen", "lockwork", "lockwork.c")
CONTENDED = ["contend_mutex", "contend_rwlock"]


class EbpfLock(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="wt-ebpf-lock-")
        cls.work = os.path.join(cls.tmp, "lockwork")
        subprocess.run(["cc", "-O2", "-fomit-frame-pointer", "-pthread", "-o", cls.work, SRC], check=True,
                       timeout=60)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        why = requirements()
        if why:
            self.fail("the eBPF sampler cannot run here: " + "; ".join(why))

    def edge(self, extra, settle=True):
        e = Edge(self)
        with open(e.cfg, "a") as f:
            f.write(f'\nebpf = {{ enabled = true; frequency_hz = 99; offcpu = false; flush_interval_s = 1; '
                    f'{extra} }};\n')
        e.start()
        # the verifier is slow on a loaded machine
        self.assertIsNone(e.wait_sampler())
        if settle:  # the tables of the machine's processes first: then the workload's come at once
            test_ebpf_unwind.EbpfUnwind.settle(e)
        return e

    def run_work(self, e, seconds):
        out = subprocess.run([self.work, "contend", str(seconds)], capture_output=True, text=True,
                             timeout=seconds + 60)
        self.assertEqual(out.returncode, 0, out.stderr)
        truth = json.loads(out.stdout.strip().splitlines()[-1])
        e.wait_flushes(3)
        return truth

    def table(self, e, truth, typ, address=None):
        labels = {"label.pid": str(truth["pid"])}
        if address:
            labels["label.lock_address"] = address
        st, js = e.query("table", service="lockwork", type=typ, **labels)
        self.assertIn(st, (200, 404), js)
        return {r["function"]: r for r in js.get("rows", [])} if st == 200 else {}

    def test_contention_attributed(self):
        e = self.edge("lock = true;")
        self.assertEqual(e.metrics().get("wt_edge_ebpf_lock_enabled"), 1)
        truth = self.run_work(e, 6)
        rows = self.table(e, truth, "lock")
        counts = self.table(e, truth, "mutex_contentions")
        by_address = self.table(e, truth, "lock", hex(truth["mutex_addr"]))
        st, flame = e.query("flamegraph", service="lockwork", type="lock", **{"label.pid": str(truth["pid"])})
        log = e.read_log()
        e.stop()
        attached = [ln for ln in log.splitlines() if "ebpf lock contention attached" in ln]
        print(attached[-1:], file=sys.stderr)
        # the futex tracepoints themselves (ids from tracefs, or from a
        # private tracefs mount where none is mounted), not the raw fallback
        self.assertTrue(attached and "syscalls/sys_*_futex" in attached[-1], log[-3000:])
        paths = []
        self.leaves(flame.get("root", {}), [], paths) if st == 200 else None
        for t, p in sorted(paths, reverse=True)[:6]:
            print(f"  {t / 1e6:.1f} ms: {' <- '.join(reversed(p))}", file=sys.stderr)
        meas = truth["wait_ns"]
        mtot = sum(meas[f] for f in CONTENDED)
        got = {f: rows.get(f, {}).get("total", 0) for f in CONTENDED}
        gtot = sum(got.values())
        print(f"lock: workload {mtot / 1e6:.0f} ms, profile {gtot / 1e6:.0f} ms under contend_*; "
              f"contentions workload {truth['contentions']} profile "
              f"{ {f: counts.get(f, {}).get('total', 0) for f in CONTENDED} }", file=sys.stderr)
        for f in CONTENDED:
            print(f"  {f}: workload {100 * meas[f] / mtot:.1f} % profile {100 * got[f] / max(gtot, 1):.1f} %",
                  file=sys.stderr)
        self.assertGreater(gtot, 0, log[-3000:])
        for f in CONTENDED:
            # a caller above the pthread frames, not the leaf
            self.assertEqual(rows[f]["self"], 0, f)
            self.assertLess(abs(100 * got[f] / gtot - 100 * meas[f] / mtot), 5.0,
                            f"{f}: profile {got[f]} ns of {gtot} vs workload {meas[f]} of {mtot}")
            # a failed trylock whose lock call then found the lock free made
            # no futex wait: the profile may count a little fewer
            c, want = counts.get(f, {}).get("total", 0), truth["contentions"][f]
            self.assertGreater(c, 0, f)
            self.assertLess(abs(c - want) / want, 0.10, f"{f}: {c} contentions vs the workload's {want}")
        self.assertLess(abs(gtot - mtot) / mtot, 0.10, f"profile {gtot} ns vs workload {mtot} ns")
        self.assertNotIn("uncontended", rows)
        # the lock's address is a label only when asked for (ebpf.lock_address)
        self.assertEqual(by_address, {})
        # the condition variable's waits (seconds of them, measured by the
        # workload) are not lock waits. Its mutex is: cond_signaler taking
        # it while cond_waiter holds it (between wake-ups) is a real mutex
        # contention, microseconds in all, and may be counted
        cond = sum(rows.get(f, {}).get("total", 0) for f in ("cond_waiter", "cond_signaler"))
        self.assertGreater(meas["cond_waiter"], 1e9)
        self.assertLess(cond, 0.001 * meas["cond_waiter"],
                        f"{cond} ns under cond_waiter/cond_signaler: condition-variable waits counted as lock waits")

    def test_lock_address_label(self):
        """ebpf.lock_address = true: each lock sample carries the futex
        word's address as label lock_address — the mutex's own address,
        an address inside the rwlock — and the per-address totals add up
        to the per-function ones."""
        e = self.edge("lock = true; lock_address = true;")
        truth = self.run_work(e, 3)
        rows = self.table(e, truth, "lock")
        mu = self.table(e, truth, "lock", hex(truth["mutex_addr"]))
        inside = {}
        for off in range(0, truth["rwlock_size"], 4):
            for f, r in self.table(e, truth, "lock", hex(truth["rwlock_addr"] + off)).items():
                inside[f] = inside.get(f, 0) + r["total"]
        e.stop()
        print(f"lock_address: mutex {mu.get('contend_mutex', {}).get('total', 0) / 1e6:.1f} ms of "
              f"{rows.get('contend_mutex', {}).get('total', 0) / 1e6:.1f}; rwlock words "
              f"{inside.get('contend_rwlock', 0) / 1e6:.1f} ms of {rows.get('contend_rwlock', {}).get('total', 0) / 1e6:.1f}",
              file=sys.stderr)
        self.assertGreater(rows.get("contend_mutex", {}).get("total", 0), 0)
        self.assertEqual(mu.get("contend_mutex", {}).get("total"), rows["contend_mutex"]["total"])
        self.assertNotIn("contend_rwlock", mu)
        self.assertEqual(inside.get("contend_rwlock"), rows["contend_rwlock"]["total"])
        self.assertNotIn("contend_mutex", inside)

    def test_musl_skipped(self):
        """The same workload built against musl (musl-gcc): musl's locks use
        the futex word otherwise than glibc's, so the process is detected
        (its ld-musl mapping), counted in
        wt_edge_ebpf_lock_skipped_total{reason="musl"} and none of its
        waits stored as lock samples."""
        musl = shutil.which("musl-gcc")
        self.assertIsNotNone(musl, "musl-gcc is missing (appliance/install-deps installs musl-tools)")
        work = os.path.join(self.tmp, "lockwork-musl")
        subprocess.run([musl, "-O2", "-pthread", "-o", work, SRC], check=True, timeout=60)
        e = self.edge("lock = true;", settle=False)
        out = subprocess.run([work, "contend", "2"], capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        truth = json.loads(out.stdout.strip().splitlines()[-1])
        e.wait_flushes(3)
        rows = self.table(e, truth, "lock")
        skipped = e.metrics().get('wt_edge_ebpf_lock_skipped_total{reason="musl"}', 0)
        e.stop()
        print(f"musl lockwork: workload waited {sum(truth['wait_ns'].values()) / 1e6:.0f} ms; "
              f"lock rows {sorted(rows)}; skipped {skipped}", file=sys.stderr)
        self.assertGreater(truth["wait_ns"]["contend_mutex"], 0)
        self.assertEqual(rows, {})
        self.assertGreaterEqual(skipped, 1)

    def test_lock_off(self):
        e = self.edge("lock = false;", settle=False)
        self.assertEqual(e.metrics().get("wt_edge_ebpf_lock_enabled"), 0)
        truth = self.run_work(e, 2)
        self.assertEqual(self.table(e, truth, "lock"), {})
        self.assertEqual(e.metrics().get("wt_edge_ebpf_lock_contentions_total"), 0)
        e.stop()

    @classmethod
    def leaves(cls, node, path, out):
        kids = node.get("children") or []
        p = path + [node.get("name", "")]
        if not kids:
            out.append((node.get("value", node.get("total", 0)), p[1:]))
        for k in kids:
            cls.leaves(k, p, out)


if __name__ == "__main__":
    unittest.main()
