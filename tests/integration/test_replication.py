#!/usr/bin/env python3
"""test_replication.py — edge → hub replication end to end (docs/operations.md "## Replication").

Real processes on loopback: a private clickhouse-server, wt-hub with its
mutual-TLS replication listener, and wt-edge daemons with certificates
issued by `wtctl pki`. Expected figures are awk sums over the uploaded
folded files (an independent count), and the edge's own local query for a
pprof upload. Every test checks exactness: hub totals equal the sum of the
acknowledged uploads — nothing lost, nothing counted twice — also across a
hub outage, kill -9 of the hub and kill -9 of an edge during replication.
The mTLS matrix uses curl as an independent client.
"""
import os
import re
import subprocess
import sys
import tempfile
import shutil
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness.clickhouse import ClickHouse  # noqa: E402
from harness.edge import Edge  # noqa: E402
from harness.hub import Hub, BIN, CORPUS  # noqa: E402

FOLDED_A = os.path.join(CORPUS, "folded/flamegraph__perf-vertx-java-collapsed-all.txt")
FOLDED_B = os.path.join(CORPUS, "folded/cargo-flamegraph__rust-rayon-stacks.folded")
GO_CPU = os.path.join(CORPUS, "gen/go/go-cpu.pb.gz")
WTCTL = os.path.join(BIN, "wtctl")


def awk_total(path):
    out = subprocess.run(["awk", r'{n=$NF; sub(/^\[/,"",n); sub(/\]$/,"",n); s+=n} END {printf "%d", s}', path],
                         check=True, capture_output=True, text=True).stdout
    return int(out)


def pki_init(d):
    subprocess.run([WTCTL, "pki", "init", "--dir", d, "--hub-host", "127.0.0.1", "--hub-host", "localhost"],
                   check=True, capture_output=True)


def pki_edge(d, edge_id, *extra):
    subprocess.run([WTCTL, "pki", "issue-edge", "--ca", d, "--edge-id", edge_id] + list(extra),
                   check=True, capture_output=True)
    return {"crt": os.path.join(d, edge_id + ".crt"), "key": os.path.join(d, edge_id + ".key")}


class ReplicationTest(unittest.TestCase):
    ch = None
    n = 0

    @classmethod
    def setUpClass(cls):
        cls.ch = ClickHouse(None)
        cls.ch.start()

    @classmethod
    def tearDownClass(cls):
        cls.ch.cleanup()

    def setUp(self):
        ReplicationTest.n += 1
        self.pki = tempfile.mkdtemp(prefix="wt-pki-")
        self.addCleanup(shutil.rmtree, self.pki, True)
        pki_init(self.pki)
        # a hub killed mid-apply holds its batch's claim for claim_ttl_s
        # (> 2 x (ClickHouse timeout + claim settle time)): short here
        self.hub = Hub(self, self.ch, database=f"repl{ReplicationTest.n}", pki=self.pki,
                       repl_extra="claim_ttl_s = 12;", ch_timeout_ms=5000)
        self.hub.start()
        st, _ = self.hub.create_project("demo")
        self.assertIn(st, (200, 201))
        self.read = self.hub.create_token("demo", "read")

    def edge(self, edge_id, cert_id=None, **kw):
        c = pki_edge(self.pki, cert_id or edge_id)
        self.hub.allow_edge(edge_id)
        e = Edge(self, edge_id=edge_id,
                 hub={"url": self.hub.repl_url, "ca": os.path.join(self.pki, "ca.crt"),
                      "cert": c["crt"], "key": c["key"]},
                 replication="backoff_initial_ms = 50; backoff_max_ms = 500; interval_ms = 100;", **kw)
        return e.start()

    def hub_total(self, service, type_=None):
        params = {"service": service, "from": "0", "until": str(int(time.time()) + 3600)}
        if type_:
            params["type"] = type_
        st, js = self.hub.query("demo", "table", self.read, **params)
        self.assertEqual(st, 200, js)
        return js

    def wait_total(self, service, expected, timeout=90, type_=None):
        deadline = time.time() + timeout
        got = None
        while time.time() < deadline:
            try:
                got = self.hub_total(service, type_)["total"]
            except (OSError, AssertionError):
                got = None
            if got == expected:
                # stay equal: a late duplicate would show up here
                time.sleep(1.5)
                again = self.hub_total(service, type_)["total"]
                self.assertEqual(again, expected, f"{service}: total changed after drain (duplicates?)")
                return
            time.sleep(0.3)
        self.fail(f"{service}: hub total {got}, expected {expected} (hub log: {self.hub.read_log()[-1500:]})")

    def upload(self, e, path, service, fmt="folded", expect=200):
        with open(path, "rb") as f:
            st, body = e.upload(f.read(), service=service, format=fmt)
        self.assertEqual(st, expect, body)

    # ---- 1. two edges, exact totals ------------------------------------------------
    def test_two_edges_exact_totals(self):
        e1, e2 = self.edge("edge1"), self.edge("edge2")
        self.upload(e1, FOLDED_A, "java-svc")
        self.upload(e1, FOLDED_A, "java-svc")
        self.upload(e2, FOLDED_B, "rust-svc")
        self.upload(e2, GO_CPU, "go-svc", fmt="pprof")
        self.wait_total("java-svc", 2 * awk_total(FOLDED_A))
        self.wait_total("rust-svc", awk_total(FOLDED_B))
        # pprof: the hub's table equals the edge's own (verified against
        # go tool pprof in test_edge.py), function by function.
        st, local = e2.query("table", service="go-svc", type="cpu")
        self.assertEqual(st, 200)
        self.wait_total("go-svc", local["total"], type_="cpu")
        hub = self.hub_total("go-svc", "cpu")
        self.assertEqual({r["function"]: r["self"] for r in hub["rows"]},
                         {r["function"]: r["self"] for r in local["rows"]})
        m = self.hub.request("GET", "/metrics")[1].decode()
        self.assertIn('wt_hub_repl_uploads_applied_total{edge="edge1"} 2', m)
        self.assertIn('wt_hub_repl_uploads_applied_total{edge="edge2"} 2', m)

    # ---- 2. hub outage: edges keep accepting, backlog drains exactly once ----------
    def test_hub_outage_then_drain(self):
        e1, e2 = self.edge("edge1"), self.edge("edge2")
        self.upload(e1, FOLDED_B, "outage")
        self.wait_total("outage", awk_total(FOLDED_B))
        self.hub.stop()
        n = 12
        for i in range(n):
            self.upload(e1 if i % 2 else e2, FOLDED_B, "outage")
        deadline, backlog = time.time() + 10, 0
        while True:
            backlog = e1.metrics().get("wt_edge_repl_backlog_uploads", 0) + \
                e2.metrics().get("wt_edge_repl_backlog_uploads", 0)
            if backlog > 0 or time.time() > deadline:
                break
            time.sleep(0.1)
        self.assertGreater(backlog, 0, "edges should hold a backlog while the hub is down")
        self.hub.start()
        self.wait_total("outage", (n + 1) * awk_total(FOLDED_B))

    # ---- 2b. object store failing: the batch is refused whole, then recovers ------
    def test_objstore_failure_then_recovery(self):
        """The hub stores a batch's originals in a helper thread while it
        decodes; a failed put must refuse the batch before any data row is
        inserted, and the retry (its seqs now "started" in the ledger)
        must store everything exactly once."""
        e = self.edge("edge1")
        self.upload(e, FOLDED_B, "objfail")
        self.wait_total("objfail", awk_total(FOLDED_B))
        objs = os.path.join(self.hub.dir, "data", "objects")
        os.rename(objs, objs + ".away")
        with open(objs, "w"):
            pass  # a file where the directory was: every put fails (ENOTDIR)
        for _ in range(3):
            self.upload(e, FOLDED_B, "objfail")

        def refused():
            m = self.hub.request("GET", "/metrics")[1].decode()
            return re.search(r'wt_hub_repl_errors_total\{edge="edge1"\} [1-9]', m)
        deadline = time.time() + 30
        while time.time() < deadline and not refused():
            time.sleep(0.2)
        self.assertTrue(refused(), self.hub.read_log()[-1500:])
        self.assertIn("object store", self.hub.read_log())
        self.assertEqual(self.hub_total("objfail")["total"], awk_total(FOLDED_B))  # nothing of the batch
        self.assertGreater(e.metrics()["wt_edge_repl_backlog_uploads"], 0)
        os.unlink(objs)
        os.rename(objs + ".away", objs)
        self.wait_total("objfail", 4 * awk_total(FOLDED_B))
        self.assertEqual(e.metrics()["wt_edge_repl_backlog_uploads"], 0)

    # ---- 3. kill -9 of the hub, then of an edge, during replication -----------------
    def test_kill9_hub_during_drain(self):
        e1 = self.edge("edge1")
        self.hub.stop()
        n = 40
        for _ in range(n):
            self.upload(e1, FOLDED_A, "k9hub")
        self.hub.start()
        time.sleep(0.4)  # mid-drain
        self.hub.proc.kill()
        self.hub.proc.wait()
        self.hub.proc = None
        self.hub.start()
        self.wait_total("k9hub", n * awk_total(FOLDED_A), timeout=150)

    def test_kill9_edge_during_replication(self):
        e1 = self.edge("edge1")
        n = 40
        for _ in range(n):
            self.upload(e1, FOLDED_A, "k9edge")
        e1.kill9()
        e1.start()
        for _ in range(5):
            self.upload(e1, FOLDED_A, "k9edge")
        self.wait_total("k9edge", (n + 5) * awk_total(FOLDED_A), timeout=150)

    def test_crash_between_inserts_recovers_exactly(self):
        """The hub dies after a batch's sample rows are in ClickHouse but
        before its rollup rows and ledger are: the retry must add exactly
        the missing rows (recovery path), for both crash points."""
        for fp, svc in (("repl_after_samples", "crash-a"), ("repl_after_rollups", "crash-b")):
            self.hub.stop()
            self.hub.start(env={"WT_FAILPOINT": fp})
            e = self.edge("edge-" + svc)
            self.upload(e, FOLDED_B, svc)
            deadline = time.time() + 30
            while self.hub.proc.poll() is None and time.time() < deadline:
                time.sleep(0.1)
            self.assertIsNotNone(self.hub.proc.poll(), f"failpoint {fp} was not reached")
            self.hub.proc = None
            self.hub.start()
            self.wait_total(svc, awk_total(FOLDED_B))
            # the function rollup was completed exactly once as well (the
            # samples may have been whole before the crash: the resend
            # waits for the dead hub's claim to expire first)
            db = f"repl{ReplicationTest.n}"
            deadline = time.time() + 60
            while True:
                rollup = int(self.ch.query(f"SELECT sum(self) FROM {db}.function_rollup_v1 WHERE service = '{svc}'"
                                           " AND sample_type = 'cpu'") or 0)
                if rollup == awk_total(FOLDED_B) or time.time() > deadline:
                    break
                time.sleep(0.3)
            time.sleep(1.5)  # a late duplicate would show up here
            rollup = int(self.ch.query(
                f"SELECT sum(self) FROM {db}.function_rollup_v1 WHERE service = '{svc}' AND sample_type = 'cpu'"))
            self.assertEqual(rollup, awk_total(FOLDED_B))
            samples = int(self.ch.query(
                f"SELECT sum(value) FROM {db}.profile_samples_v1 WHERE service = '{svc}'"))
            self.assertEqual(samples, awk_total(FOLDED_B))
        self.assertIn("recovering interrupted replicated upload", self.hub.read_log())

    # ---- 4. mTLS matrix ------------------------------------------------------------------
    def curl(self, *args):
        return subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10",
                               "--cacert", os.path.join(self.pki, "ca.crt")] + list(args) +
                              [self.hub.repl_url + "/healthz"], capture_output=True, text=True)

    def test_mtls_matrix(self):
        good = pki_edge(self.pki, "edge-good")
        r = self.curl("--cert", good["crt"], "--key", good["key"])
        self.assertEqual(r.stdout, "200", r.stderr)
        # no client certificate
        r = self.curl()
        self.assertNotEqual(r.returncode, 0)
        self.assertNotEqual(r.stdout, "200")
        # self-signed certificate (a CA of its own, used as a client cert)
        other = tempfile.mkdtemp(prefix="wt-pki-other-")
        self.addCleanup(shutil.rmtree, other, True)
        pki_init(other)
        r = self.curl("--cert", os.path.join(other, "ca.crt"), "--key", os.path.join(other, "ca.key"))
        self.assertNotEqual(r.returncode, 0)
        # certificate from another CA
        foreign = pki_edge(other, "edge1")
        r = self.curl("--cert", foreign["crt"], "--key", foreign["key"])
        self.assertNotEqual(r.returncode, 0)
        # expired certificate from the right CA
        now = int(time.time())
        exp = pki_edge(self.pki, "edge-expired", "--not-before", str(now - 7200), "--not-after", str(now - 3600))
        r = self.curl("--cert", exp["crt"], "--key", exp["key"])
        self.assertNotEqual(r.returncode, 0)
        # a real edge whose id does not match its certificate: 403, nothing applied
        e = self.edge("edge-claimed", cert_id="edge-actual")
        self.upload(e, FOLDED_B, "mismatch")
        # the edge has tried and been refused (the refusal is permanent)
        deadline = time.time() + 30
        while time.time() < deadline and "does not match the client certificate" not in self.hub.read_log():
            time.sleep(0.1)
        self.assertEqual(self.hub_total("mismatch")["total"], 0)
        out = self.ch.query(f"SELECT count() FROM repl{ReplicationTest.n}.repl_ledger_v2").strip()
        self.assertEqual(out, "0")
        self.assertIn("does not match the client certificate", self.hub.read_log())
        m = self.hub.request("GET", "/metrics")[1].decode()
        self.assertNotIn('wt_hub_repl_uploads_applied_total{edge="edge-actual"} 1', m)


if __name__ == "__main__":
    unittest.main()
