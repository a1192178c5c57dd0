#!/usr/bin/env python3
"""test_cluster.py — `make soak`: Watchtower on a ClickHouse cluster (docs/operations.md "## Scale out").

Real ZooKeeper and four real clickhouse-servers (2 shards x 2 replicas,
harness/cluster.py), two wt-hubs with `clickhouse.cluster = "wt"` and two
edges replicating to both hubs (hub.urls). Totals are checked against awk
over the uploaded file, and the stored rows against clickhouse-client style
queries on each server's shard-local table (not through the hub):
  1. uploads to both hubs land once; each hub answers the same totals;
     a (project, service) sits on one shard, both of its replicas equal;
     a past range asked again at hub A comes from its view cache, and an
     upload into that range through hub B is in hub A's next answer; the
     timeline from the aggregates equals the raw rows';
  2. SIGKILL one hub while edges replicate: they fail over to the other,
     every acknowledged upload is stored exactly once; and a batch that hub
     A half applied (crash injected between its inserts) is completed once
     by hub B (samples and rollups);
  3. stop the first replica of a shard: inserts and queries go on through
     the other, and after it returns both replicas hold the same rows;
  4. the retention job runs once per day across the two hubs, also when
     both ask for it at the same moment; a lease held by a dead hub is
     taken over once it expires.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from harness.cluster import Cluster  # noqa: E402
from harness.edge import Edge  # noqa: E402
from harness.hub import Hub, BIN, CORPUS  # noqa: E402

SRC = os.path.join(CORPUS, "folded/cargo-flamegraph__rust-rayon-stacks.folded")
WTCTL = os.path.join(BIN, "wtctl")
CLUSTER_HUB = 'cluster = "wt";'


def awk_total(path):
    return int(subprocess.run(["awk", "{s+=$NF} END {printf \"%d\", s}", path], check=True,
                              capture_output=True, text=True).stdout)


class ClusterSoak(unittest.TestCase):
    def setUp(self):
        self.pki = tempfile.mkdtemp(prefix="wt-soak-pki-")
        self.addCleanup(shutil.rmtree, self.pki, True)
        subprocess.run([WTCTL, "pki", "init", "--dir", self.pki], check=True, capture_output=True)
        t0 = time.time()
        self.cl = Cluster(self).start()
        # hub A talks to shard 1 replica 1, hub B to shard 1 replica 2
        self.hubs = [Hub(self, self.cl.servers[i], pki=self.pki, clickhouse_extra=CLUSTER_HUB).start(timeout=120)
                     for i in (0, 1)]
        print(f"cluster + 2 hubs up in {time.time() - t0:.1f}s", flush=True)
        for h in self.hubs:
            st, js = h.request("GET", "/healthz")
            self.assertEqual((st, js["clickhouse"]["cluster"]), (200, "wt"), js)
        a = self.hubs[0]
        st, js = a.create_project("demo")
        self.assertIn(st, (200, 201), js)
        self.read = a.create_token("demo", "read")
        self.upload_tok = a.create_token("demo", "upload")
        with open(SRC, "rb") as f:
            self.data = f.read()
        self.per = awk_total(SRC)

    def total(self, hub, service):
        st, js = hub.query("demo", "table", self.read, service=service,
                           **{"from": "0", "until": str(int(time.time()) + 3600)})
        return js.get("total") if st == 200 else None

    def local_sums(self, service):
        """value sum of the service's rows in each server's shard-local table"""
        sql = ("SELECT sum(value) FROM profile_samples_v1_local WHERE project = 'demo' AND service = '%s'"
               % service)  # folded uploads carry one sample type
        return [int(s.query(sql, database="watchtower").strip() or 0) for s in self.cl.servers]

    def dist_insert(self, sql, table):
        """INSERT through a Distributed table with the hubs' settings
        (hub/ch_client.h), then wait until every replica has it: after a
        replica outage (phase 3) 18.16 initiators may keep preferring
        different replicas of a shard, so a hub can read the other replica"""
        url = self.cl.servers[2].url + "/?" + urllib.parse.urlencode(
            {"database": "watchtower", "insert_distributed_sync": 1, "load_balancing": "in_order",
             "prefer_localhost_replica": 0})
        urllib.request.urlopen(urllib.request.Request(url, data=sql.encode()), timeout=60).read()
        for s in self.cl.servers:
            s.query(f"SYSTEM SYNC REPLICA {table}_local", database="watchtower", timeout=120)

    def sync_replicas(self):
        for s in self.cl.servers:
            for t in ("profile_samples_v1_local", "function_rollup_v1_local"):
                s.query(f"SYSTEM SYNC REPLICA {t}", database="watchtower", timeout=120)

    def wait_total(self, service, expected, hubs=None, timeout=120):
        got = None
        end = time.time() + timeout
        while time.time() < end:
            got = [self.total(h, service) for h in (hubs or self.hubs)]
            if all(g == expected for g in got):
                return got
            time.sleep(0.5)
        self.fail(f"{service}: totals {got} at the hubs, expected {expected}")

    def edges(self, names):
        out = []
        for k, name in enumerate(names):
            subprocess.run([WTCTL, "pki", "issue-edge", "--ca", self.pki, "--edge-id", name], check=True,
                           capture_output=True)
            self.hubs[0].allow_edge(name)
            urls = [h.repl_url for h in self.hubs]
            if k % 2:
                urls.reverse()
            out.append(Edge(self, edge_id=name, hub={"urls": urls, "ca": f"{self.pki}/ca.crt",
                                                     "cert": f"{self.pki}/{name}.crt",
                                                     "key": f"{self.pki}/{name}.key"},
                            replication="backoff_initial_ms = 50; backoff_max_ms = 1000; batch_max_uploads = 4;"
                            ).start())
        return out

    def test_cluster(self):
        self.phase_ingest()
        self.phase_view_cache()
        self.phase_hub_failover()
        self.phase_failpoint()
        self.phase_replica_down()
        self.phase_lease()

    def phase_ingest(self):
        """direct uploads to both hubs; one shard holds the service, replicas equal"""
        n = 6
        for i in range(n):
            st, js = self.hubs[i % 2].upload(self.data, token=self.upload_tok, service="direct", format="folded",
                                             idempotency_key=f"direct-{i}")
            self.assertEqual(st, 200, js)
        self.wait_total("direct", n * self.per)
        self.sync_replicas()
        sums = self.local_sums("direct")
        shard1, shard2 = sums[0:2], sums[2:4]
        self.assertEqual(shard1[0], shard1[1], f"shard 1 replicas differ: {sums}")
        self.assertEqual(shard2[0], shard2[1], f"shard 2 replicas differ: {sums}")
        self.assertEqual(sorted([shard1[0], shard2[0]]), [0, n * self.per],
                         f"service 'direct' must sit on exactly one shard: {sums}")
        print(f"phase 1: {n} uploads via 2 hubs, total {n * self.per}, per-server sums {sums}", flush=True)

    def phase_view_cache(self):
        """a past range asked again at hub A comes from its view cache; an
        upload into the range through hub B is in hub A's next answer"""
        a, b = self.hubs
        day = 86400
        t0 = (int(time.time()) // day - 2) * day + 100
        for k in range(2):
            st, js = a.upload(self.data, token=self.upload_tok, service="vcache", format="folded",
                              idempotency_key=f"vcache-{k}",
                              **{"from": str(t0), "label.host": f"h{k}", "label.env": "prod"})
            self.assertEqual(st, 200, js)
        params = {"service": "vcache", "from": str(t0 - 60), "until": str(t0 + 3600)}

        def table(h):
            st, js = h.query("demo", "table", self.read, **params)
            self.assertEqual(st, 200, js)
            return js

        end = time.time() + 120
        while time.time() < end and table(a)["total"] != 2 * self.per:
            time.sleep(0.5)
        self.sync_replicas()
        for s in self.cl.servers:
            s.query("SYSTEM SYNC REPLICA stack_agg_v1_local", database="watchtower", timeout=120)
        first = table(a)
        self.assertEqual((first["total"], first["path"]), (2 * self.per, "aggregates"), first)
        hits = a.metric("wt_hub_view_cache_hits_total")
        again = table(a)
        self.assertEqual(again, first)
        self.assertEqual(a.metric("wt_hub_view_cache_hits_total"), hits + 1, "the same view asked again at hub A")
        st, js = b.upload(self.data, token=self.upload_tok, service="vcache", format="folded",
                          **{"from": str(t0 + 60)})
        self.assertEqual(st, 200, js)
        end = time.time() + 120
        got = None
        while time.time() < end:
            got = table(a)["total"]
            if got == 3 * self.per:
                break
            time.sleep(0.5)
        self.assertEqual(got, 3 * self.per, "hub A answered from its cache after hub B stored into the range")
        # the timeline from the aggregates (minute buckets; by service, and
        # by thread through label_sets_v1) equals the raw rows' on a cluster
        for by in ("service", "thread"):
            answers = {}
            for path in ("auto", "raw"):
                st, js = a.query("demo", "timeline", self.read, by=by, path=path, **params)
                self.assertEqual(st, 200, js)
                answers[path] = js
            self.assertEqual(answers["auto"]["path"], "aggregates", answers["auto"])
            strip = lambda js: {k: v for k, v in js.items() if k != "path"}  # noqa: E731
            self.assertEqual(strip(answers["auto"]), strip(answers["raw"]), by)
            self.assertEqual(sum(r["total"] for r in answers["auto"]["rows"]), 3 * self.per, answers["auto"])
        # the label listing from label_sets_v1 (GLOBAL IN over the
        # sharded series_agg_v1) equals the raw rows'
        answers = {}
        for path in ("auto", "raw"):
            st, js = a.request("GET", "/v1/projects/demo/labels?" + urllib.parse.urlencode(
                dict(params, path=path)), token=self.read)
            self.assertEqual(st, 200, js)
            answers[path] = js
        self.assertEqual(answers["auto"]["path"], "aggregates", answers["auto"])
        self.assertTrue(answers["raw"]["labels"], answers["raw"])
        self.assertEqual(answers["auto"]["labels"], answers["raw"]["labels"])
        print(f"phase 1b: view cache hit at hub A, invalidated by hub B's upload (total {got}); timelines and labels equal the raw rows'", flush=True)

    def phase_hub_failover(self):
        """two edges replicate to both hubs; hub A is SIGKILLed mid-replication"""
        edges = self.edges(["edge1", "edge2"])
        acked = [0]
        lock = threading.Lock()
        stop = threading.Event()

        def client(e):
            while not stop.is_set():
                try:
                    st, _ = e.upload(self.data, service="failover", format="folded")
                except OSError:
                    st = 0
                if st == 200:
                    with lock:
                        acked[0] += 1
                time.sleep(0.02)

        threads = [threading.Thread(target=client, args=(e,)) for e in edges]
        for t in threads:
            t.start()
        try:
            time.sleep(4)
            a = self.hubs[0]
            a.proc.kill()
            a.proc.wait()
            a.proc = None
            killed_at = acked[0]
            time.sleep(6)
        finally:
            stop.set()
            for t in threads:
                t.join()
        expected = acked[0] * self.per
        # (a batch hub A claimed when it died waits out its lease, as below)
        self.wait_total("failover", expected, hubs=[self.hubs[1]], timeout=300)
        # the remote-config client of edge1 (hub.urls = [A, B]) moved to B too
        self.assertIn(f"remote config: pulling from {self.hubs[1].repl_url}", edges[0].read_log())
        fo = [e.metrics().get("wt_edge_repl_failovers_total", 0) for e in edges]
        self.assertTrue(sum(float(x) for x in fo) >= 1, f"no edge failed over: {fo}")
        self.hubs[0].start(timeout=120)
        self.wait_total("failover", expected)
        time.sleep(2)
        self.sync_replicas()
        sums = self.local_sums("failover")
        self.assertEqual(sum(sums), 2 * expected, f"per-server sums {sums}: each row once per replica")
        print(f"phase 2: {acked[0]} uploads acknowledged ({killed_at} before hub A died), edge failovers {fo},"
              f" total exact {expected}", flush=True)
        for e in edges:
            e.stop()

    def phase_failpoint(self):
        """hub A dies between its inserts of a batch (samples stored, rollups
        and ledger not); the edge resends to hub B, which completes it once"""
        a, b = self.hubs
        a.stop()
        a.start(timeout=120, env={"WT_FAILPOINT": "repl_after_samples"})
        e = self.edges(["edge3"])[0]  # hub.urls = [A, B]
        n = 3
        for _ in range(n):
            st, _ = e.upload(self.data, service="failpoint", format="folded")
            self.assertEqual(st, 200)
        expected = n * self.per
        # hub A's claim on the batch blocks it for one lease: derived, 192 s
        # in cluster mode with the harness's 30 s ClickHouse timeout
        # (replication.claim_ttl_s, docs/operations.md)
        self.wait_total("failpoint", expected, hubs=[b], timeout=300)
        self.assertIsNotNone(a.proc.wait(timeout=30), "hub A should have died at the failpoint")
        self.assertIn("failpoint reached", a.read_log())
        a.proc = None
        recovered = [int(x.split("recovered=")[1].split()[0]) for x in b.read_log().splitlines()
                     if "edge3" in x and "recovered=" in x]
        self.assertGreaterEqual(sum(recovered), 1, "hub B should have completed a started batch of edge3")
        # rollups: leaf self over all functions = the samples' total (awk), once
        self.sync_replicas()
        roll = sum(int(s.query("SELECT sum(self) FROM function_rollup_v1_local WHERE project = 'demo'"
                               " AND service = 'failpoint' AND sample_type != '_repl_marker'",
                               database="watchtower").strip() or 0) for s in self.cl.servers)
        self.assertEqual(roll, 2 * expected, "rollup self over both replicas of the shard")
        a.start(timeout=120)
        self.wait_total("failpoint", expected)
        print(f"phase 2b: hub A died after storing samples of a batch; hub B completed it: total {expected},"
              f" rollup self {roll // 2}", flush=True)
        e.stop()

    def phase_replica_down(self):
        """stop the first replica of the shard holding the service; go on"""
        # which shard holds service 'replica'? Upload once, look.
        st, js = self.hubs[1].upload(self.data, token=self.upload_tok, service="replica", format="folded")
        self.assertEqual(st, 200, js)
        self.sync_replicas()
        sums = self.local_sums("replica")
        first = 0 if sums[0] else 2
        # the hubs talk to servers 0 and 1; when the service is on shard 1,
        # stop server 0 and keep hub B (server 1) for the phase
        down = self.cl.servers[first]
        hubs = [self.hubs[1]] if first == 0 else self.hubs
        down.stop()
        n = 4
        for i in range(n):
            st, js = hubs[i % len(hubs)].upload(self.data, token=self.upload_tok, service="replica",
                                                 format="folded", idempotency_key=f"replica-{i}")
            self.assertEqual(st, 200, f"upload with a replica down: {st} {js}")
        self.wait_total("replica", (n + 1) * self.per, hubs=hubs)
        down.start()
        self.wait_total("replica", (n + 1) * self.per)
        self.sync_replicas()
        sums = self.local_sums("replica")
        self.assertEqual(sums[first], sums[first + 1], f"replicas differ after the return: {sums}")
        self.assertEqual(sums[first], (n + 1) * self.per, sums)
        print(f"phase 3: server {first} stopped, {n} uploads went on, per-server sums after return {sums}",
              flush=True)

    def phase_lease(self):
        """the worker lease: one winner per race; periodic runs once per interval across hubs"""
        rounds = 3
        for r in range(rounds):
            res = [None, None]
            go = threading.Barrier(2)

            def run(k):
                go.wait()
                res[k] = self.hubs[k].request("POST", "/v1/admin/worker/run?job=retention",
                                              token=self.hubs[k].admin_token)

            ts = [threading.Thread(target=run, args=(k,)) for k in (0, 1)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            codes = sorted(st for st, _ in res)
            self.assertEqual(codes, [200, 503], f"round {r}: both hubs asked at once: {res}")
        # takeover: a lease held by a hub that died blocks the job until it
        # expires, then any hub takes it
        far = (int(time.time()) + 3600) * 10**9
        ins = "INSERT INTO worker_leases (job, holder, expires_ns, last_done_ns, version) VALUES "
        self.dist_insert(ins + f"('retention', 'dead-hub', {far}, 0, {far})", "worker_leases")
        for h in self.hubs:
            st, js = h.request("POST", "/v1/admin/worker/run?job=retention", token=h.admin_token)
            self.assertEqual(st, 503, js)
            self.assertIn("dead-hub", js["detail"])
        self.dist_insert(ins + f"('retention', 'dead-hub', 1, 0, {far + 1})", "worker_leases")
        st, js = self.hubs[1].request("POST", "/v1/admin/worker/run?job=retention", token=self.hubs[1].admin_token)
        self.assertEqual(st, 200, js)
        # periodic: each hub checks every `interval` s; a run must never
        # start before `interval` s after the previous one (by either hub) ended
        interval = 5
        for h in self.hubs:
            h.stop()
            with open(h.cfg) as f:
                cfg = f.read()
            with open(h.cfg, "w") as f:
                f.write(cfg.replace("health_interval_ms = 200;",
                                    f"health_interval_ms = 200; worker_interval_s = {interval};"))
            h.start(timeout=120)
        time.sleep(40)  # a loop: retention and archive, each behind a 3 s claim, then `interval`
        runs = []
        for k, h in enumerate(self.hubs):
            for line in h.read_log().splitlines():
                if "worker job done" in line and "job=retention" in line:
                    js = json.loads(line.split("summary=", 1)[1])
                    runs.append((js["now"], js["now"] + js["duration_ms"] / 1000.0, k))
        runs.sort()
        self.assertGreaterEqual(len(runs), 2, f"periodic retention runs: {runs}")
        for prev, cur in zip(runs, runs[1:]):
            # "now" is whole seconds: allow 1 s
            self.assertGreaterEqual(cur[0] - prev[1], interval - 1,
                                    f"retention ran twice within one interval: {prev} then {cur} (all: {runs})")
        print(f"phase 4: {rounds} races with one winner each; periodic runs (start, end, hub) {runs}", flush=True)


if __name__ == "__main__":
    unittest.main()
