#!/usr/bin/env python3
"""test_control.py — the hub's control plane (policy, remote config, deletion, audit) end to end.

Real processes on loopback: a private clickhouse-server, wt-hub (with its
mTLS replication listener where edges are involved) and wt-edge with
certificates from `wtctl pki`. Expectations come from ClickHouse's own
counts taken before an action (retention, deletion) and from the files in
the hub's object store, never from the code under test:
  - policy PUT/GET/validation and the audit event naming what changed;
  - an edge pulls its config; a token created at the hub after the edge
    started is accepted by the edge; a policy change reaches it (timed);
    an edge restarted while the hub is down still accepts that token;
    peer id ≠ {id} → 403; ETag → 304;
  - retention and per-type retention delete exactly the expired rows, with
    the job's clock moved (`now=`); a per-type value above the project's
    never raises it; raw originals past retention leave the object store
    unless another upload still shares them;
  - archive does nothing on 18.16 and says why (once);
  - deletion: 202, audit before the mutations, rows and originals gone,
    other services/times untouched; wrong roles 403 with nothing deleted;
  - the roles matrix over every control/admin/query endpoint.
"""
import hashlib
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
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness.clickhouse import ClickHouse  # noqa: E402
from harness.edge import Edge  # noqa: E402
from harness.hub import Hub, BIN, CORPUS  # noqa: E402

FOLDED_A = os.path.join(CORPUS, "folded/flamegraph__perf-vertx-java-collapsed-all.txt")
FOLDED_B = os.path.join(CORPUS, "folded/cargo-flamegraph__rust-rayon-stacks.folded")
GO_CPU = os.path.join(CORPUS, "gen/go/go-cpu.pb.gz")
WTCTL = os.path.join(BIN, "wtctl")
DAY = 86400


def read(path):
    with open(path, "rb") as f:
        return f.read()


def pki_init(d):
    subprocess.run([WTCTL, "pki", "init", "--dir", d, "--hub-host", "127.0.0.1", "--hub-host", "localhost"],
                   check=True, capture_output=True)


def pki_edge(d, edge_id):
    subprocess.run([WTCTL, "pki", "issue-edge", "--ca", d, "--edge-id", edge_id], check=True, capture_output=True)
    return {"crt": os.path.join(d, edge_id + ".crt"), "key": os.path.join(d, edge_id + ".key")}


class ControlTest(unittest.TestCase):
    ch = None
    n = 0

    @classmethod
    def setUpClass(cls):
        cls.ch = ClickHouse(None)
        cls.ch.start()

    @classmethod
    def tearDownClass(cls):
        cls.ch.cleanup()

    def make_hub(self, pki=None, env=None, extra="worker_interval_s = 0;"):
        ControlTest.n += 1
        self.db = f"control{ControlTest.n}"
        hub = Hub(self, self.ch, database=self.db, pki=pki, hub_extra=extra)
        hub.start(env=env)
        return hub

    def q(self, sql):
        return self.ch.query(sql, database=self.db).strip()

    def wait_mutations(self, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.q(f"SELECT count() FROM system.mutations WHERE database = '{self.db}' AND is_done = 0") == "0":
                return
            time.sleep(0.2)
        self.fail("mutations did not finish")

    def tok(self, hub, project, role):
        return hub.create_token(project, role)

    # ---- policy ------------------------------------------------------------------------------
    def test_policy_put_get_validation_audit(self):
        hub = self.make_hub()
        self.assertEqual(hub.create_project("pol")[0], 201)
        admin = self.tok(hub, "pol", "admin")
        reader = self.tok(hub, "pol", "read")
        st, js = hub.request("GET", "/v1/projects/pol/policy", token=admin)
        self.assertEqual((st, js["revision"], js["policy"]), (200, 0, {"version": 1, "rules": {}}))
        bad = [
            ({"rules": {}}, "version"),
            ({"version": 1, "rules": {"ebpf": {"frequency_hz": 0}}}, "rules.ebpf.frequency_hz"),
            ({"version": 1, "rules": {"sample_types": {"cpuu": True}}}, "rules.sample_types.cpuu"),
            ({"version": 1, "rules": {"services": [{"ebpf": {}}]}}, "rules.services[0].match"),
            ({"version": 1, "limits": {"max_body": 10}}, "limits.max_body"),
            ({"version": 1, "edges": {"e1": {"rules": {"offcpu": {"threshold_us": -1}}}}},
             "edges.e1.rules.offcpu.threshold_us"),
            ({"version": 1, "color": "red"}, "color"),
        ]
        for doc, path in bad:
            st, js = hub.request("PUT", "/v1/projects/pol/policy", json.dumps(doc), token=admin)
            self.assertEqual(st, 400, (doc, js))
            self.assertIn(path, js["detail"], js)
        p1 = {"version": 1,
              "rules": {"sample_types": {"cpu": True, "offcpu": False}, "ebpf": {"frequency_hz": 99},
                        "services": [{"match": {"service": "api-*"}, "ebpf": {"frequency_hz": 49}},
                                     {"match": {"label": {"team": "db"}}, "offcpu": {"enabled": True}}]},
              "limits": {"max_body": 1 << 20, "max_samples": 100000},
              "edges": {"edge1": {"rules": {"ebpf": {"frequency_hz": 19}}}}}
        st, js = hub.request("PUT", "/v1/projects/pol/policy", json.dumps(p1), token=admin)
        self.assertEqual((st, js["revision"]), (200, 1), js)
        p2 = json.loads(json.dumps(p1))
        p2["rules"]["ebpf"]["frequency_hz"] = 49
        st, js = hub.request("PUT", "/v1/projects/pol/policy", json.dumps(p2), token=admin)
        self.assertEqual((st, js["revision"]), (200, 2), js)
        st, js = hub.request("GET", "/v1/projects/pol/policy", token=admin)
        self.assertEqual((st, js["revision"], js["policy"]), (200, 2, p2))
        for t in (reader, self.tok(hub, "pol", "upload"), self.tok(hub, "pol", "DeleteTelemetry")):
            self.assertEqual(hub.request("GET", "/v1/projects/pol/policy", token=t)[0], 403)
            self.assertEqual(hub.request("PUT", "/v1/projects/pol/policy", json.dumps(p1), token=t)[0], 403)
        self.assertEqual(hub.request("GET", "/v1/projects/pol/policy", token=hub.admin_token)[1]["revision"], 2)
        st, js = hub.request("GET", "/v1/projects/pol/audit?action=policy.update", token=admin)
        self.assertEqual(st, 200, js)
        ev = js["events"]
        self.assertEqual(len(ev), 2)
        self.assertIn("rules.ebpf.frequency_hz: 99 -> 49", ev[0]["detail"])  # newest first
        self.assertIn("revision 1 -> 2", ev[0]["detail"])
        self.assertIn("revision 0 -> 1", ev[1]["detail"])
        # the actor is the admin token's id (listed by the token API)
        ids = {t["id"]: t["role"] for t in hub.request("GET", "/v1/admin/tokens?project=pol", token=admin)[1]["tokens"]}
        self.assertEqual(ids.get(ev[0]["actor"]), "admin")
        # CLI: wtctl policy get / set
        env = dict(os.environ, WT_HUB_URL=hub.url, WT_TOKEN=admin)
        out = subprocess.run([WTCTL, "policy", "get", "--project", "pol"], env=env, capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(json.loads(out.stdout), p2)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"version": 1, "rules": {"ebpf": {"frequency_hz": 7}}}, f)
        self.addCleanup(os.unlink, f.name)
        out = subprocess.run([WTCTL, "policy", "set", "--project", "pol", f.name], env=env, capture_output=True,
                             text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(hub.request("GET", "/v1/projects/pol/policy", token=admin)[1]["revision"], 3)
        with open(f.name, "w") as g:
            g.write('{"version": 2}')
        out = subprocess.run([WTCTL, "policy", "set", "--project", "pol", f.name], env=env, capture_output=True,
                             text=True)
        self.assertEqual(out.returncode, 1)
        self.assertIn("version", out.stderr)

    # ---- remote config -------------------------------------------------------------------------
    def https(self, port, cert, key, ca, path, headers=None):
        ctx = ssl.create_default_context(cafile=ca)
        ctx.load_cert_chain(cert, key)
        c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=40)
        try:
            c.request("GET", path, headers=headers or {})
            r = c.getresponse()
            body = r.read()
            return r.status, dict(r.getheaders()), body
        finally:
            c.close()

    def test_edge_remote_config(self):
        pki = tempfile.mkdtemp(prefix="wt-pki-")
        self.addCleanup(shutil.rmtree, pki, True)
        pki_init(pki)
        hub = self.make_hub(pki=pki)
        self.assertIn(hub.create_project("demo")[0], (200, 201))
        hub.allow_edge("edge1")
        c1 = pki_edge(pki, "edge1")
        ca = os.path.join(pki, "ca.crt")
        e = Edge(self, edge_id="edge1", hub={"url": hub.repl_url, "ca": ca, "cert": c1["crt"], "key": c1["key"]},
                 replication="backoff_initial_ms = 50; backoff_max_ms = 500; interval_ms = 100;")
        e.start()
        data = read(FOLDED_B)
        # a token created at the hub after the edge started
        t0 = time.time()
        up = self.tok(hub, "demo", "upload")
        self.assertEqual(e.upload(data, token="not-a-token", service="s", format="folded")[0], 401)
        deadline, st = time.time() + 15, None
        while time.time() < deadline:
            st, body = e.upload(data, token=up, service="tok", format="folded")
            if st == 200:
                break
            time.sleep(0.1)
        self.assertEqual(st, 200, e.read_log()[-1500:])
        token_s = time.time() - t0
        # the hub's config carries the hash, as tokens_v1 stores it
        st, hdrs, body = self.https(hub.repl_port, c1["crt"], c1["key"], ca, "/v1/edges/edge1/config?project=demo")
        self.assertEqual(st, 200, body)
        conf = json.loads(body)
        self.assertIn(hashlib.sha256(up.encode()).hexdigest(), conf["projects"][0]["upload_token_sha256"])
        etag = hdrs.get("ETag") or hdrs.get("etag")
        self.assertEqual(etag, '"%s"' % conf["etag"])
        st, _, _ = self.https(hub.repl_port, c1["crt"], c1["key"], ca, "/v1/edges/edge1/config?project=demo",
                              {"If-None-Match": etag})
        self.assertEqual(st, 304)
        # another edge's certificate cannot read edge1's config
        c2 = pki_edge(pki, "edge2")
        st, _, _ = self.https(hub.repl_port, c2["crt"], c2["key"], ca, "/v1/edges/edge1/config?project=demo")
        self.assertEqual(st, 403)
        # a policy change reaches the edge (long-poll wakes at once)
        pol = {"version": 1, "rules": {"ebpf": {"frequency_hz": 49}}, "limits": {"max_body": 4096}}
        t1 = time.time()
        st, js = hub.request("PUT", "/v1/projects/demo/policy", json.dumps(pol), token=hub.admin_token)
        self.assertEqual(st, 200, js)
        deadline = time.time() + 15
        while time.time() < deadline and "revisions=demo:1 " not in e.read_log():
            time.sleep(0.02)
        policy_s = time.time() - t1
        self.assertIn("revisions=demo:1 ", e.read_log())
        # the policy's upload limit applies live (min of local file and policy)
        st, body = e.upload(data, token=up, service="big", format="folded")
        self.assertEqual(st, 413, body)
        print(f"\n  token reached the edge in {token_s:.2f}s, policy change in {policy_s:.3f}s",
              file=sys.stderr)
        hub.request("PUT", "/v1/projects/demo/policy", json.dumps({"version": 1}), token=hub.admin_token)
        deadline = time.time() + 15
        while time.time() < deadline and "revisions=demo:2 " not in e.read_log():
            time.sleep(0.05)
        # hub down, edge restarted: the persisted config still admits the token
        hub.stop()
        e.stop()
        e.start()
        self.assertIn("source=buffer", e.read_log())
        st, body = e.upload(data, token=up, service="tok2", format="folded")
        self.assertEqual(st, 200, body)
        self.assertEqual(e.upload(data, token="not-a-token", service="s", format="folded")[0], 401)
        m = e.metrics()
        self.assertGreaterEqual(m.get("wt_edge_config_applied_total", 0), 1)

    # ---- retention -----------------------------------------------------------------------------
    def counts(self, table, day_expr):
        out = self.q(f"SELECT project, sample_type, toUInt32({day_expr}) AS d, count() FROM {table}"
                     f" WHERE sample_type != '_repl_marker' GROUP BY project, sample_type, d FORMAT TabSeparated")
        res = {}
        for line in out.splitlines():
            p, t, d, n = line.split("\t")
            res[(p, t, int(d))] = int(n)
        return res

    def test_retention_per_type_and_originals(self):
        hub = self.make_hub()
        for p in ("ret", "ret2"):
            self.assertEqual(hub.create_project(p, retention_days=7)[0], 201)
        now = int(time.time())
        today = now // DAY
        data = read(FOLDED_B)
        for p in ("ret", "ret2"):
            up = self.tok(hub, p, "upload")
            for age in (10, 5, 1):
                for typ in ("cpu", "wall"):
                    st, js = hub.upload(data, up, service="svc", format="folded", type=typ,
                                        **{"from": str((today - age) * DAY + 3600)})
                    self.assertEqual(st, 200, js)
        # a distinct original only at day -10: its object must leave the store
        up = self.tok(hub, "ret", "upload")
        st, js = hub.upload(read(FOLDED_A), up, service="old", format="folded", **{"from": str((today - 10) * DAY)})
        self.assertEqual(st, 200, js)
        old_obj = os.path.join(hub.dir, "data", "objects", js["object_key"])
        shared_obj = os.path.join(hub.dir, "data", "objects",
                                  hub.upload(data, up, service="svc", format="folded", type="cpu",
                                             **{"from": str((today - 1) * DAY + 7200)})[1]["object_key"])
        self.assertTrue(os.path.exists(old_obj) and os.path.exists(shared_obj))
        # per-type rules: cpu 3 days lowers "ret"; wall 30 days must not raise "ret2"
        self.q("INSERT INTO profile_type_retention_v1 VALUES ('ret', 'cpu', 3, 1), ('ret2', 'wall', 30, 1)")

        def expect(before, now_day, table):
            rules = {("ret", "cpu"): 3}
            return {k: v for k, v in before.items()
                    if k[2] > now_day - min(7, rules.get((k[0], k[1]), 7))}

        tables = (("profile_samples_v1", "date"), ("function_rollup_v1", "toDate(minute)"))
        before = {t: self.counts(t, d) for t, d in tables}
        self.assertTrue(all(len(b) >= 12 for b in before.values()), before)
        for shift in (0, 3):
            st, js = hub.request("POST", f"/v1/admin/worker/run?job=retention&now={now + shift * DAY}",
                                 token=hub.admin_token)
            self.assertEqual(st, 200, js)
            self.assertEqual(js["path"], "worker")
            if shift == 0:
                self.assertTrue(js["partitions_dropped"], js)  # day -10 held only expired rows
                self.assertEqual(len(js["type_rules_ignored"]), 1, js)
            self.wait_mutations()
            for t, d in tables:
                self.assertEqual(self.counts(t, d), expect(before[t], today + shift, t), (t, shift, js))
            if shift == 0:
                self.assertFalse(os.path.exists(old_obj), "expired original still in the object store")
                self.assertTrue(os.path.exists(shared_obj), "original shared with a live upload was deleted")
                self.assertEqual(self.q(f"SELECT count() FROM raw_objects_v1 WHERE date <= toDate({today - 7})"), "0")
        self.assertIn("retention path", hub.read_log())
        self.assertNotEqual(self.q("SELECT count() FROM audit_events_v1"), "0")
        # a pending object delete left by an earlier failure is retried by the job
        victim = os.path.join(hub.dir, "data", "objects", "raw", "zz", "retry-me")
        os.makedirs(os.path.dirname(victim), exist_ok=True)
        with open(victim, "w") as f:
            f.write("x")
        self.q("INSERT INTO object_deletions_v1 VALUES ('raw/zz/retry-me', 'd1', 'ret', 0, 'io', 1)")
        st, js = hub.request("POST", "/v1/admin/worker/run?job=retention", token=hub.admin_token)
        self.assertEqual((st, js["retried_object_deletes"]["deleted"]), (200, 1), js)
        self.assertFalse(os.path.exists(victim))
        self.assertEqual(self.q("SELECT done FROM object_deletions_v1 FINAL WHERE object_key = 'raw/zz/retry-me'"),
                         "1")

    def test_archive_noop_and_lease(self):
        hub = self.make_hub(env={"WT_PROFILE_ARCHIVE_DAYS": "3"})
        for _ in range(2):
            st, js = hub.request("POST", "/v1/admin/worker/run?job=archive", token=hub.admin_token)
            self.assertEqual(st, 200, js)
            self.assertEqual(js["skipped"], "no storage policies on this server", js)
            self.assertIn("18.16", js["detail"])
        self.assertEqual(hub.read_log().count("archive does nothing"), 1)
        # the lease: held by another instance → 503; after expiry it is taken over
        far = (int(time.time()) + 3600) * 10**9
        self.q(f"INSERT INTO worker_leases VALUES ('archive', 'other-hub', {far}, 0, {far})")
        st, js = hub.request("POST", "/v1/admin/worker/run?job=archive", token=hub.admin_token)
        self.assertEqual(st, 503, js)
        self.assertIn("other-hub", js["detail"])
        self.q(f"INSERT INTO worker_leases VALUES ('archive', 'other-hub', 1, 0, {far + 1})")
        st, js = hub.request("POST", "/v1/admin/worker/run?job=archive", token=hub.admin_token)
        self.assertEqual(st, 200, js)
        self.assertEqual(hub.request("POST", "/v1/admin/worker/run?job=nope", token=hub.admin_token)[0], 400)

    def test_lease_heartbeat_and_takeover(self):
        """a long job keeps its lease past the TTL (heartbeat); SIGKILL of its hub frees it within one TTL"""
        ttl = 3
        extra = f"worker_interval_s = 0; worker_lease_ttl_s = {ttl};"
        a = self.make_hub(env={"WT_TEST_JOB_DELAY_MS": "120000"}, extra=extra)
        b = Hub(self, self.ch, database=self.db, hub_extra=extra)
        b.start()

        def run_on_a():
            try:
                a.request("POST", "/v1/admin/worker/run?job=archive", token=a.admin_token, timeout=150)
            except OSError:
                pass  # a is killed below
        t = threading.Thread(target=run_on_a, daemon=True)
        t.start()
        now_ns = lambda: time.time_ns()
        deadline = time.time() + 20
        while time.time() < deadline:
            row = self.q("SELECT holder, expires_ns FROM worker_leases FINAL WHERE job = 'archive'"
                         " ORDER BY version DESC LIMIT 1")
            if row and int(row.split("\t")[1]) > now_ns():
                break
            time.sleep(0.1)
        holder, first_expiry = row.split("\t")[0], int(row.split("\t")[1])
        self.assertTrue(holder, "hub a did not take the lease")
        time.sleep(3 * ttl)  # three TTLs: without renewals the lease would have expired
        st, js = b.request("POST", "/v1/admin/worker/run?job=archive", token=b.admin_token)
        self.assertEqual(st, 503, js)
        self.assertIn(holder, js["detail"])
        later = self.q("SELECT holder, expires_ns FROM worker_leases FINAL WHERE job = 'archive'"
                       " ORDER BY version DESC LIMIT 1").split("\t")
        self.assertEqual(later[0], holder)
        self.assertGreaterEqual(int(later[1]) - first_expiry, 2 * ttl * 10**9, "lease not renewed while the job ran")
        a.proc.kill()
        a.proc.wait()
        killed = time.time()
        st = None
        while time.time() < killed + 4 * ttl:
            st, js = b.request("POST", "/v1/admin/worker/run?job=archive", token=b.admin_token)
            if st == 200:
                break
            time.sleep(0.2)
        self.assertEqual(st, 200, js)
        took = time.time() - killed
        self.assertLessEqual(took, ttl + 1.5, f"takeover took {took:.1f}s with a {ttl}s TTL")
        row = self.q("SELECT holder, expires_ns FROM worker_leases FINAL WHERE job = 'archive'"
                     " ORDER BY version DESC LIMIT 1").split("\t")
        self.assertNotEqual(row[0], holder)
        self.assertEqual(row[1], "0", "b released the lease after its run")

    # ---- deletion ------------------------------------------------------------------------------
    def test_audited_deletion(self):
        hub = self.make_hub()
        self.assertEqual(hub.create_project("del")[0], 201)
        up = self.tok(hub, "del", "upload")
        now = int(time.time())
        uploads = [(FOLDED_A, "a", now - 3 * 3600, "folded"), (FOLDED_B, "b", now - 3 * 3600, "folded"),
                   (GO_CPU, "a", now - 600, "pprof")]
        objs = {}
        for path, svc, t, fmt in uploads:
            st, js = hub.upload(read(path), up, service=svc, format=fmt, **{"from": str(t)})
            self.assertEqual(st, 200, js)
            objs[(svc, t)] = os.path.join(hub.dir, "data", "objects", js["object_key"])
        cut = now - 3600

        def snapshot():
            return (self.q("SELECT service, time_ns < %d AS old, count() FROM profile_samples_v1 GROUP BY service, old"
                           " ORDER BY service, old FORMAT TabSeparated" % (cut * 10**9)),
                    self.q("SELECT service, count() FROM raw_objects_v1 GROUP BY service ORDER BY service"
                           " FORMAT TabSeparated"))
        before = snapshot()
        before_rows = {tuple(l.split("\t")[:2]): int(l.split("\t")[2]) for l in before[0].splitlines()}
        self.assertGreater(before_rows[("a", "1")], 0)
        path = "/v1/projects/del/profiles?" + urllib.parse.urlencode(
            {"before": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(cut)), "service": "a"})
        for role in ("read", "upload", "admin"):
            st, js = hub.request("DELETE", path, token=self.tok(hub, "del", role))
            self.assertEqual(st, 403, (role, js))
        self.assertEqual(hub.request("DELETE", path, token="nope")[0], 401)
        self.assertEqual(self.q("SELECT count() FROM system.mutations WHERE database = currentDatabase()"), "0")
        self.assertEqual(snapshot(), before)
        self.assertEqual(self.q("SELECT count() FROM audit_events_v1 WHERE action = 'profiles.delete'"), "0")
        deleter = self.tok(hub, "del", "DeleteTelemetry")
        st, js = hub.request("DELETE", path, token=deleter)
        self.assertEqual(st, 202, js)
        did = js["deletion_id"]
        st, ev = hub.request("GET", "/v1/projects/del/audit", token=deleter)
        self.assertEqual(st, 200, ev)
        dev = [x for x in ev["events"] if x.get("deletion_id") == did]
        self.assertEqual(len(dev), 1)
        self.assertEqual(dev[0]["action"], "profiles.delete")
        # audit precedes every mutation of this deletion
        created = [int(x) for x in self.q(
            f"SELECT toUnixTimestamp(create_time) FROM system.mutations WHERE database = currentDatabase()"
            f" AND position(command, '{did}') > 0").split()]
        # samples, function rollup, stack aggregates, series aggregates,
        # recording-rule values, raw object index
        self.assertEqual(len(created), 6)
        self.assertLessEqual(dev[0]["time_ns"] // 10**9, min(created))
        deadline, prog = time.time() + 30, None
        while time.time() < deadline:
            st, prog = hub.request("GET", f"/v1/projects/del/deletions/{did}", token=deleter)
            self.assertEqual(st, 200, prog)
            if prog["done"]:
                break
            time.sleep(0.2)
        self.assertTrue(prog["done"], prog)
        self.assertEqual(len(prog["mutations"]), 6)
        after_rows = {tuple(l.split("\t")[:2]): int(l.split("\t")[2]) for l in snapshot()[0].splitlines()}
        expected = dict(before_rows)
        del expected[("a", "1")]
        self.assertEqual(after_rows, expected)
        self.assertFalse(os.path.exists(objs[("a", now - 3 * 3600)]))
        self.assertTrue(os.path.exists(objs[("b", now - 3 * 3600)]))
        self.assertTrue(os.path.exists(objs[("a", now - 600)]))
        self.assertEqual(self.q("SELECT count() FROM function_rollup_v1 WHERE service = 'a' AND minute < toDateTime(%d)"
                                % (cut - 60)), "0")
        self.assertNotEqual(self.q("SELECT count() FROM function_rollup_v1 WHERE service = 'b'"), "0")
        # audit rows survive deletion and retention
        hub.request("POST", f"/v1/admin/worker/run?job=retention&now={now + 400 * DAY}", token=hub.admin_token)
        self.wait_mutations()
        self.assertEqual(self.q(f"SELECT count() FROM audit_events_v1 WHERE deletion_id = '{did}'"), "1")
        self.assertEqual(hub.request("GET", "/v1/projects/del/deletions/" + "0" * 32, token=deleter)[0], 404)

    # ---- roles matrix --------------------------------------------------------------------------
    def test_roles_matrix(self):
        hub = self.make_hub()
        for p in ("m", "other"):
            self.assertEqual(hub.create_project(p)[0], 201)
        toks = {r: self.tok(hub, "m", r) for r in ("upload", "read", "admin", "DeleteTelemetry")}
        toks["super"] = hub.admin_token
        toks["foreign-admin"] = self.tok(hub, "other", "admin")
        body = read(FOLDED_B)
        nothing = urllib.parse.urlencode({"before": "1970-01-01T00:00:01Z"})
        did = "0" * 32
        st, js = hub.request("POST", "/v1/admin/tokens", json.dumps({"project": "m", "role": "read"}),
                             token=hub.admin_token)
        victim = js["id"]  # revoked by whoever may
        # endpoint → roles allowed (others: 403; the hub admin token is allowed everywhere)
        eps = [
            # a project token uploads to its own project (project= only steers the hub admin token)
            ("POST", "/v1/profiles?service=s&format=folded&project=m", body, {"upload", "admin", "foreign-admin"}),
            ("GET", "/v1/projects/m/profiles/table?service=s", None, {"read", "admin"}),
            ("GET", "/v1/projects/m/profiles/flamegraph?service=s", None, {"read", "admin"}),
            ("GET", "/v1/projects/m/profiles/callgraph?service=s", None, {"read", "admin"}),
            ("GET", "/v1/projects/m/policy", None, {"admin"}),
            ("PUT", "/v1/projects/m/policy", b'{"version": 1}', {"admin"}),
            ("GET", "/v1/projects/m/audit", None, {"admin", "DeleteTelemetry"}),
            ("DELETE", "/v1/projects/m/profiles?" + nothing, None, {"DeleteTelemetry"}),
            ("GET", f"/v1/projects/m/deletions/{did}", None, {"admin", "DeleteTelemetry"}),
            ("GET", "/v1/admin/tokens?project=m", None, {"admin"}),
            # token creation by every role, for every role: DeleteTelemetry only by the hub admin token
            ("POST", "/v1/admin/tokens", b'{"project": "m", "role": "upload"}', {"admin"}),
            ("POST", "/v1/admin/tokens", b'{"project": "m", "role": "read"}', {"admin"}),
            ("POST", "/v1/admin/tokens", b'{"project": "m", "role": "admin"}', {"admin"}),
            ("POST", "/v1/admin/tokens", b'{"project": "m", "role": "DeleteTelemetry"}', set()),
            ("DELETE", "/v1/admin/tokens/" + victim, None, {"admin"}),
            # edge registrations of the project
            ("POST", "/v1/admin/edges/e1/projects", b'{"project": "m"}', {"admin"}),
            ("GET", "/v1/admin/edges?project=m", None, {"admin"}),
            ("DELETE", "/v1/admin/edges/e1/projects/m", None, {"admin"}),
            ("GET", "/v1/admin/edges", None, set()),
            ("GET", "/v1/admin/projects", None, set()),
            ("POST", "/v1/admin/worker/run?job=archive", None, set()),
            # debug files: answers 404/400 when allowed (nothing stored, not ELF)
            ("GET", "/v1/projects/m/debuginfo", None, {"read", "admin"}),
            ("GET", "/v1/projects/m/debuginfo/" + "ab" * 20, None, {"upload", "read", "admin"}),
            ("PUT", "/v1/projects/m/debuginfo/" + "ab" * 20 + "?name=x", b"not an ELF file", {"upload", "admin"}),
            ("DELETE", "/v1/projects/m/debuginfo/" + "ab" * 20, None, {"upload", "admin"}),
            # recording rules: reading them and their series, replacing them
            ("GET", "/v1/projects/m/recording-rules", None, {"read", "admin"}),
            ("GET", "/v1/projects/m/recording-rules/r1/series", None, {"read", "admin"}),
            ("PUT", "/v1/projects/m/recording-rules", b'{"rules": []}', {"admin"}),
        ]
        table = []
        for method, path, data, allowed in eps:
            for role, t in toks.items():
                st, js = hub.request(method, path, data, token=t)
                ok = role == "super" or role in allowed
                table.append((method, path.split("?")[0], role, st))
                if ok:
                    self.assertNotIn(st, (401, 403), (method, path, role, js))
                else:
                    self.assertEqual(st, 403, (method, path, role, js))
            st, _ = hub.request(method, path, data, token="bogus")
            self.assertEqual(st, 401, (method, path))
        # the route wrapper counted each reply of the table view under its route:
        # read, admin and the hub admin token 200; three other tokens 403, "bogus" 401
        st, text = hub.request("GET", "/metrics")
        self.assertEqual(st, 200)
        counts = dict(re.findall(r'^wt_hub_route_responses_total\{method="GET",'
                                 r'route="/v1/projects/\{project\}/profiles/table",class="(\dxx)"\} (\d+)$',
                                 text.decode(), re.M))
        self.assertEqual(counts, {"2xx": "3", "4xx": "4"}, text.decode()[-3000:])
        self.assertNotIn('route="/v1/projects/{project}/profiles/leaks"', text.decode())
        self.assertRegex(text.decode(), r'wt_hub_route_seconds_total\{method="GET",'
                         r'route="/v1/projects/\{project\}/profiles/table"\} [0-9.]+')


if __name__ == "__main__":
    unittest.main()
