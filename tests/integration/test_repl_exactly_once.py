#!/usr/bin/env python3
"""test_repl_exactly_once.py — replication stays exactly-once when applies
overlap, when the hub dies in the middle of a multi-block insert, and when
an edge comes back with an empty data directory.

Real processes on loopback: a private clickhouse-server, wt-hub with its
mutual-TLS replication listener, wt-edge where the test needs one. Batches
the test sends itself are encoded here from proto/repl.proto's field
numbers (tests/tools/pbwire.py, no Watchtower code) and POSTed with
Python's ssl client presenting an edge certificate, so the test controls
exactly what is sent, when, and how often. Expected figures are the sums
of what the test generated; ClickHouse is read directly to count rows,
rollup sums and ledger rows.
"""
import http.client
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness.clickhouse import ClickHouse  # noqa: E402
from harness.edge import Edge, ROOT  # noqa: E402
from harness.hub import Hub, BIN, CORPUS  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
from pbwire import f_bytes, f_varint  # noqa: E402

WTCTL = os.path.join(BIN, "wtctl")
FOLDED_A = os.path.join(CORPUS, "folded/flamegraph__perf-vertx-java-collapsed-all.txt")
FOLDED_B = os.path.join(CORPUS, "folded/cargo-flamegraph__rust-rayon-stacks.folded")


def awk_total(path):
    out = subprocess.run(["awk", r'{n=$NF; sub(/^\[/,"",n); sub(/\]$/,"",n); s+=n} END {printf "%d", s}', path],
                         check=True, capture_output=True, text=True).stdout
    return int(out)


def folded(tag, lines):
    """`lines` distinct stacks with values 1..7: (text, total, {leaf: value})."""
    out, leaves, total = [], {}, 0
    for i in range(lines):
        v = i % 7 + 1
        leaf = f"{tag}_leaf_{i}"
        out.append(f"main;{tag}_mid_{i % 97};{leaf} {v}")
        leaves[leaf] = v
        total += v
    return ("\n".join(out) + "\n").encode(), total, leaves


def upload_msg(seq, project, service, original, leaves, received_ns, typed=False):
    """watchtower.repl.Upload: the old JSON header (field 2) or the typed
    one (field 6), the original (3), one rollup row per leaf (4)."""
    minute = received_ns // 1_000_000_000 // 60
    m = [f_varint(1, seq), f_bytes(3, original), f_varint(5, received_ns)]
    if typed:
        m.append(f_bytes(6, f_bytes(1, project) + f_bytes(2, service) + f_bytes(3, "folded")))
    else:
        hdr = {"v": 1, "project": project, "service": service, "format": "folded", "from_ns": 0,
               "until_ns": 0, "received_ns": received_ns, "labels": {}}
        m.append(f_bytes(2, json.dumps(hdr)))
    for fn, v in leaves.items():
        m.append(f_bytes(4, f_bytes(1, "cpu") + f_bytes(2, "samples") + f_bytes(3, fn) + f_varint(4, minute) +
                         f_varint(5, v) + f_varint(6, v)))
    return b"".join(m)


def batch_msg(edge_id, uploads, first, last, incarnation=""):
    b = [f_bytes(1, edge_id), f_varint(2, first), f_varint(3, last)] + [f_bytes(4, u) for u in uploads]
    if incarnation:
        b.append(f_bytes(5, incarnation))
    return b"".join(b)


class ExactlyOnceTest(unittest.TestCase):
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
        ExactlyOnceTest.n += 1
        self.db = f"eo{ExactlyOnceTest.n}"
        self.pki = tempfile.mkdtemp(prefix="wt-pki-")
        self.addCleanup(shutil.rmtree, self.pki, True)
        subprocess.run([WTCTL, "pki", "init", "--dir", self.pki, "--hub-host", "127.0.0.1"],
                       check=True, capture_output=True)

    def start_hub(self, clickhouse_extra="", repl_extra="", env=None, ch_timeout_ms=30000):
        self.hub = Hub(self, self.ch, database=self.db, pki=self.pki, clickhouse_extra=clickhouse_extra,
                       repl_extra=repl_extra, ch_timeout_ms=ch_timeout_ms)
        self.hub.start(env=env)
        st, _ = self.hub.create_project("demo")
        self.assertIn(st, (200, 201))
        self.read = self.hub.create_token("demo", "read")

    def cert(self, edge_id, allow=True):
        subprocess.run([WTCTL, "pki", "issue-edge", "--ca", self.pki, "--edge-id", edge_id],
                       check=True, capture_output=True)
        if allow:
            self.hub.allow_edge(edge_id)  # edges write only into projects they are registered to
        return os.path.join(self.pki, edge_id + ".crt"), os.path.join(self.pki, edge_id + ".key")

    def post(self, cert, body, timeout=120, port=None):
        """POST /v1/replicate as the edge of `cert` (to self.hub unless
        port says otherwise): (status, json, Retry-After)."""
        ctx = ssl.create_default_context(cafile=os.path.join(self.pki, "ca.crt"))
        ctx.load_cert_chain(*cert)
        c = http.client.HTTPSConnection("127.0.0.1", port or self.hub.repl_port, context=ctx, timeout=timeout)
        try:
            c.request("POST", "/v1/replicate", body=body,
                      headers={"Content-Type": "application/x-wt-repl-batch", "Content-Encoding": "identity"})
            r = c.getresponse()
            data = r.read()
            return r.status, json.loads(data) if data else None, r.getheader("Retry-After")
        finally:
            c.close()

    def q(self, sql, db=None):
        return self.ch.query(sql, database=db or self.db).strip()

    def sums(self, service, db=None):
        return (int(self.q(f"SELECT sum(value) FROM profile_samples_v1 WHERE service = '{service}'", db) or 0),
                int(self.q(f"SELECT count() FROM profile_samples_v1 WHERE service = '{service}'", db) or 0),
                int(self.q(f"SELECT sum(self) FROM function_rollup_v1 WHERE service = '{service}'"
                           " AND sample_type = 'cpu'", db) or 0))

    def applied_rows(self, edge_id):
        return int(self.q(f"SELECT count() FROM repl_ledger_v2 WHERE edge_id = '{edge_id}' AND state = 2"))

    def post_until_applied(self, cert, body, deadline_s=90, port=None):
        """Resend like an edge: honour Retry-After on 409/503 until a 200."""
        deadline = time.time() + deadline_s
        while True:
            st, js, ra = self.post(cert, body, port=port)
            if st == 200:
                return js
            self.assertIn(st, (409, 503), js)
            self.assertLess(time.time(), deadline, f"still {st} {js}")
            self.assertIsNotNone(ra, f"{st} without Retry-After: {js}")
            time.sleep(min(float(ra), 5.0))

    # ---- 1. two overlapping applies of one batch store one copy ---------------------
    def test_overlapping_applies_store_one_copy(self):
        """Two simultaneous POSTs of one big batch (same edge, same seq):
        exactly one is applied; the other is told to retry later (409/503
        with Retry-After) or, once the first finished, that it was a
        duplicate. Never two "applied", never two copies."""
        self.start_hub()
        cert = self.cert("edge-ov")
        data, total, leaves = folded("ov", 100000)
        body = batch_msg("edge-ov", [upload_msg(1, "demo", "overlap", data, leaves, time.time_ns())], 1, 1)
        barrier = threading.Barrier(2)
        answers = []

        def one():
            barrier.wait()
            answers.append(self.post(cert, body))
        ts = [threading.Thread(target=one) for _ in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        applied = sum(js.get("applied", 0) for st, js, _ in answers if st == 200)
        self.assertEqual(applied, 1, f"both overlapping applies answered applied: {answers}")
        for st, js, ra in answers:
            if st != 200:
                self.assertIn(st, (409, 503), js)
                self.assertIsNotNone(ra, "a refused overlapping apply must say when to retry")
                again = self.post_until_applied(cert, body)
                self.assertEqual((again["applied"], again["duplicates"]), (0, 1), again)
        self.assertEqual(self.sums("overlap"), (total, 100000, total))
        self.assertEqual(self.applied_rows("edge-ov"), 1)

    def test_overlapping_applies_on_two_hubs_store_one_copy(self):
        """The same, with the two POSTs going to two hubs that share the
        ClickHouse database (an edge failing over while the first hub is
        still applying): the claim lives in ClickHouse, not in a hub."""
        self.start_hub()
        hub2 = Hub(self, self.ch, database=self.db, pki=self.pki)
        hub2.start()
        cert = self.cert("edge-2h")
        data, total, leaves = folded("th", 30000)
        body = batch_msg("edge-2h", [upload_msg(1, "demo", "two-hubs", data, leaves, time.time_ns())], 1, 1)
        barrier = threading.Barrier(2)
        answers = []

        def one(port):
            barrier.wait()
            answers.append(self.post(cert, body, port=port))
        ts = [threading.Thread(target=one, args=(p,)) for p in (self.hub.repl_port, hub2.repl_port)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        applied = sum(js.get("applied", 0) for st, js, _ in answers if st == 200)
        self.assertEqual(applied, 1, f"both hubs answered applied: {answers}")
        for st, js, ra in answers:
            if st != 200:
                self.assertEqual(st, 503, js)
                self.assertIsNotNone(ra)
                again = self.post_until_applied(cert, body)
                self.assertEqual((again["applied"], again["duplicates"]), (0, 1), again)
        self.assertEqual(self.sums("two-hubs"), (total, 30000, total))
        self.assertEqual(self.applied_rows("edge-2h"), 1)

    # ---- 2. kill at every block of a multi-block insert -----------------------------
    KILL_POINTS_AT_ONCE = 8  # 7 blocks + the run past the last one

    def test_kill_at_every_block_of_a_multi_block_insert(self):
        """Inserts of 1500 rows (clickhouse.insert_batch_rows): a batch of
        two uploads (4500 sample rows, 4500 rollup rows) is 3 sample blocks
        and 4 rollup blocks (pieces of 1499 rows + marker). The hub dies
        (failpoint = kill -9 there) after block k for every k; restarted,
        the resent batch must complete exactly what is missing. Each kill
        point has its own database and hub, and they run at once: a point
        spends most of its time waiting out the dead hub's claim lease."""
        cert = self.cert("edge-blk", allow=False)
        data1, total1, leaves1 = folded("b1", 2500)
        data2, total2, leaves2 = folded("b2", 2000)
        results, hubs, first = {}, {}, 1
        while True:
            ks = range(first, first + self.KILL_POINTS_AT_ONCE)
            for k in ks:
                # a dead hub's claim blocks its seqs for claim_ttl_s: short
                # here (it must exceed twice the ClickHouse timeout + settle time)
                hubs[k] = Hub(self, self.ch, database=f"{self.db}_k{k}", pki=self.pki,
                              clickhouse_extra="insert_batch_rows = 1500;", repl_extra="claim_ttl_s = 12;",
                              ch_timeout_ms=5000)

            def run(k):
                try:
                    results[k] = self.kill_point(k, hubs[k], cert, (data1, leaves1), (data2, leaves2),
                                                 total1 + total2)
                except BaseException as e:  # re-raised below, in the test's thread
                    results[k] = e
            ts = [threading.Thread(target=run, args=(k,)) for k in ks]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            for k in ks:
                if isinstance(results[k], BaseException):
                    raise results[k]
            whole = [k for k in ks if not results[k]]
            if whole:
                break
            first += self.KILL_POINTS_AT_ONCE
        # every point before the first that went through whole had the hub die
        self.assertGreaterEqual(min(whole), 8, "expected at least 7 blocks")
        self.assertIn("recovering interrupted replicated upload",
                      "".join(hubs[k].read_log() for k in hubs if results[k]))

    def kill_point(self, k, hub, cert, upload1, upload2, total):
        """Kill point k on `hub` (its own database): True when the hub died
        after block k and, restarted, completed the resent batch exactly;
        False when the batch went through whole (k past the last block)."""
        hub.start(timeout=60, env={"WT_FAILPOINT": f"repl_after_block:{k}"})
        st, _ = hub.create_project("demo")
        self.assertIn(st, (200, 201))
        hub.allow_edge("edge-blk")
        svc = f"blocks-{k}"
        now = time.time_ns()
        body = batch_msg("edge-blk", [upload_msg(1, "demo", svc, upload1[0], upload1[1], now),
                                      upload_msg(2, "demo", svc, upload2[0], upload2[1], now, typed=True)], 1, 2)
        db = f"{self.db}_k{k}"
        deadline = time.time() + 90
        while True:
            try:
                st, js, ra = self.post(cert, body, port=hub.repl_port)
            except (OSError, http.client.HTTPException):
                st = None  # the hub died under the request
                break
            # a loaded machine's ClickHouse may make the hub defer the
            # batch (503 + Retry-After: writing the claim took longer than
            # claim_settle_ms, or the apply outlived the short lease):
            # resent like an edge does, until the hub dies or applies it
            if st != 503 or time.time() > deadline:
                break
            self.assertIsNotNone(ra, f"{st} without Retry-After: {js}")
            time.sleep(min(float(ra), 5.0))
        deadline = time.time() + 20
        while st is None and hub.proc.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        if hub.proc.poll() is None:
            # past the last block: the batch goes through whole
            self.assertEqual(st, 200, js)
            self.assertEqual(js["applied"], 2, js)
            self.assertEqual(self.sums(svc, db=db), (total, 4500, total), "no failpoint hit")
            return False
        hub.proc = None
        hub.start(timeout=60)
        js = self.post_until_applied(cert, body, port=hub.repl_port)
        self.assertEqual(js["applied"], 2, js)
        self.assertEqual(self.sums(svc, db=db), (total, 4500, total), f"after block {k}")
        return True

    def test_batch_preparing_longer_than_the_claim_lease_is_applied(self):
        """Preparing a batch (decoding, and in recovery counting what each
        upload has stored: ClickHouse queries per upload) can take longer
        than replication.claim_ttl_s on a busy hub. The claim must be
        renewed while preparing; else every resend of the same batch dies
        with "claim expired while applying" and the edge never gets past
        it. Here each upload's preparation takes 1.5 s more
        (WT_FAILPOINT_SLOW), six uploads 9 s, the lease is 5 s."""
        self.start_hub(repl_extra="claim_ttl_s = 5;", ch_timeout_ms=2000,
                       env={"WT_FAILPOINT_SLOW": "edge-lease:1500"})
        cert = self.cert("edge-lease")
        data, total, leaves = folded("ls", 300)
        now = time.time_ns()
        body = batch_msg("edge-lease", [upload_msg(s, "demo", "lease", data, leaves, now, typed=True)
                                        for s in range(1, 7)], 1, 6)
        answers = []
        deadline = time.time() + 60
        while time.time() < deadline:
            st, js, ra = self.post(cert, body)
            answers.append((st, (js or {}).get("detail") or (js or {}).get("applied")))
            if st == 200:
                break
            time.sleep(min(float(ra or 1), 5.0))
        self.assertEqual(answers[-1][0], 200, f"never applied: {answers}")
        self.assertEqual(self.sums("lease"), (6 * total, 6 * 300, 6 * total))
        self.assertEqual(self.applied_rows("edge-lease"), 6)

    def set_server_block_rows(self, rows):
        """The ClickHouse default profile's INSERT block size (users.xml is
        re-read by the server within seconds); None restores it."""
        path = os.path.join(self.ch.dir, "users.xml")
        with open(path) as f:
            xml = f.read()
        xml = re.sub(r"\s*<(max_insert_block_size|min_insert_block_size_rows)>\d+</\w+>", "", xml)
        if rows:
            # blocks are parsed at max_insert_block_size rows, then squashed
            # up to min_insert_block_size_rows before they are written
            xml = xml.replace("<default>\n", f"<default>\n            <max_insert_block_size>{rows}"
                              f"</max_insert_block_size><min_insert_block_size_rows>{rows}"
                              "</min_insert_block_size_rows>\n", 1)
        with open(path, "w") as f:
            f.write(xml)
        want = str(rows or 1048576)
        deadline, bump = time.time() + 30, 0
        while self.ch.query("SELECT value FROM system.settings WHERE name = 'max_insert_block_size'").strip() != want:
            self.assertLess(time.time(), deadline, "clickhouse did not reload users.xml")
            # the server compares modification times in whole seconds: a
            # rewrite within the second it loaded the file goes unseen
            bump += 1
            if bump % 10 == 1:
                t = time.time() + bump
                os.utime(path, (t, t))
            time.sleep(0.2)

    def test_insert_failing_after_some_blocks_is_completed_exactly(self):
        """ClickHouse splits an INSERT into blocks of max_insert_block_size
        rows and keeps the blocks written before a failure. Server blocks
        of 1000 rows here, and a materialized view that throws on one
        sample in the middle of the batch's 4500: the first blocks (up to
        and including the throwing one) stay, the INSERT fails. The resend
        (view dropped) must store exactly the rest. (Before counting rows,
        recovery took a day with any row of the upload as done: 3000 of
        4500 rows, answered applied.)"""
        self.set_server_block_rows(1000)
        self.addCleanup(self.set_server_block_rows, None)
        self.start_hub(clickhouse_extra="insert_batch_rows = 1000;")
        cert = self.cert("edge-mv")
        data, total, leaves = folded("mv", 4500)
        lines = data.decode().splitlines()
        stack, v = lines[2200].rsplit(" ", 1)
        lines[2200] = f"{stack} 999983"
        total += 999983 - int(v)
        leaves[stack.rsplit(";", 1)[1]] = 999983
        data = ("\n".join(lines) + "\n").encode()
        self.q("CREATE MATERIALIZED VIEW boom ENGINE = Null AS SELECT throwIf(value = 999983) AS x"
               " FROM profile_samples_v1")
        body = batch_msg("edge-mv", [upload_msg(1, "demo", "midfail", data, leaves, time.time_ns())], 1, 1)
        st, js, _ = self.post(cert, body)
        self.assertNotEqual(st, 200, js)
        stored = self.sums("midfail")[1]
        self.assertTrue(0 < stored < 4500, f"expected a partial insert, {stored} rows stored")
        self.q("DROP TABLE boom")
        js = self.post_until_applied(cert, body)
        self.assertEqual(js["applied"], 1, js)
        self.assertEqual(self.sums("midfail"), (total, 4500, total))
        self.assertEqual(self.applied_rows("edge-mv"), 1)

    # ---- 3. an edge whose data dir was wiped starts clean ---------------------------
    def test_wiped_edge_data_dir_starts_a_new_incarnation(self):
        self.start_hub()
        crt, key = self.cert("edge1")
        e = Edge(self, edge_id="edge1",
                 hub={"url": self.hub.repl_url, "ca": os.path.join(self.pki, "ca.crt"), "cert": crt, "key": key},
                 replication="backoff_initial_ms = 50; backoff_max_ms = 500; interval_ms = 100;")
        e.start()
        for _ in range(3):
            with open(FOLDED_A, "rb") as f:
                st, body = e.upload(f.read(), service="before-wipe", format="folded")
            self.assertEqual(st, 200, body)
        self.wait_total("before-wipe", 3 * awk_total(FOLDED_A))
        e.stop()
        shutil.rmtree(os.path.join(e.dir, "data"))
        e.start()
        with open(FOLDED_B, "rb") as f:
            st, body = e.upload(f.read(), service="after-wipe", format="folded")
        self.assertEqual(st, 200, body)
        self.wait_total("after-wipe", awk_total(FOLDED_B))
        self.wait_total("before-wipe", 3 * awk_total(FOLDED_A))
        # the edge said so: log line and metric
        deadline = time.time() + 10
        while time.time() < deadline and not e.metrics().get("wt_edge_repl_other_incarnation_total"):
            time.sleep(0.1)
        self.assertEqual(e.metrics().get("wt_edge_repl_other_incarnation_total"), 1)
        self.assertIn("knows this edge under incarnation", e.read_log())
        # the hub's ledger has both incarnations, seqs from 1 in each
        rows = self.q("SELECT incarnation, min(seq), max(seq) FROM repl_ledger_v2 WHERE edge_id = 'edge1'"
                      " AND state = 2 GROUP BY incarnation ORDER BY max(time_ns) FORMAT TSV").splitlines()
        self.assertEqual(len(rows), 2, rows)
        self.assertEqual([r.split("\t")[1:] for r in rows], [["1", "3"], ["1", "1"]])
        m = self.hub.request("GET", "/metrics")[1].decode()
        inc = rows[1].split("\t")[0]
        self.assertIn(f'wt_hub_repl_incarnation_last_seq{{edge="edge1",incarnation="{inc}"}} 1', m)

    def wait_total(self, service, expected, timeout=60):
        deadline = time.time() + timeout
        got = None
        while time.time() < deadline:
            st, js = self.hub.query("demo", "table", self.read, service=service, **{"from": "0",
                                    "until": str(int(time.time()) + 3600)})
            got = js.get("total") if st == 200 else None
            if got == expected:
                return
            time.sleep(0.3)
        self.fail(f"{service}: hub total {got}, expected {expected} (hub log: {self.hub.read_log()[-1500:]})")


if __name__ == "__main__":
    unittest.main()
