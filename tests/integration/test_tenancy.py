#!/usr/bin/env python3
"""test_tenancy.py — who may write where, and tokens that can be taken back.

Real processes on loopback: a private clickhouse-server, wt-hub with its
mutual-TLS replication listener, wt-edge with certificates from `wtctl pki`,
and an "attacker" that holds a valid edge certificate and POSTs batches it
built itself (protobuf written here from proto/repl.proto, sent with
Python's ssl module — no Watchtower code on the sending side).

  - edge registration: an edge not registered to a project gets every batch
    refused whole (403, nothing stored, no ledger row, audit event), and
    drains once `wtctl admin edge allow` registers it;
  - a batch mixing an allowed and a foreign project is refused whole;
  - remote config only for registered projects, with only the upload/read
    token hashes of those projects (no admin/DeleteTelemetry hashes, no
    revoked ones);
  - the hub stores the rollup it computes from the original, not the one the
    batch carries (expected rows counted by hand from the folded text);
  - seqs may advance past the last applied one by at most the batch size;
  - token revocation (wtctl admin token list/revoke) refused on two hubs of
    one ClickHouse within hub.token_cache_ttl_ms; the listing shows last use
    and never a secret;
  - deleting one project's originals while another upload of the same bytes
    is between its object put and its index row (held there by the
    WT_FAILPOINT_WAIT failpoint) leaves that upload's original in place — for
    an upload in another project and in the same project.
"""
import hashlib
import http.client
import json
import os
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

WTCTL = os.path.join(BIN, "wtctl")
FOLDED_B = os.path.join(CORPUS, "folded/cargo-flamegraph__rust-rayon-stacks.folded")
SMALL = b"main;work;leaf 7\nmain;idle 3\n"
FAST = "backoff_initial_ms = 50; backoff_max_ms = 300; interval_ms = 100;"


def awk_total(path):
    out = subprocess.run(["awk", r'{n=$NF; sub(/^\[/,"",n); sub(/\]$/,"",n); s+=n} END {printf "%d", s}', path],
                         check=True, capture_output=True, text=True).stdout
    return int(out)


# ---- protobuf wire format (watchtower.repl.Batch), from the encoding spec --------------
def varint(v):
    if v < 0:
        v += 1 << 64
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def f_varint(num, v):
    return varint(num << 3) + varint(v)


def f_bytes(num, b):
    if isinstance(b, str):
        b = b.encode()
    return varint(num << 3 | 2) + varint(len(b)) + b


def rollup_row(typ, unit, fn, minute, self_, total):
    return (f_bytes(1, typ) + f_bytes(2, unit) + f_bytes(3, fn) + f_varint(4, minute) + f_varint(5, self_) +
            f_varint(6, total))


def upload_msg(seq, project, service, original, rows=(), received_ns=None):
    hdr = json.dumps({"project": project, "service": service, "format": "folded"})
    m = f_varint(1, seq) + f_bytes(2, hdr) + f_bytes(3, original)
    for r in rows:
        m += f_bytes(4, r)
    return m + f_varint(5, received_ns or time.time_ns())


def batch_msg(edge_id, uploads):
    seqs = [u[0] for u in uploads]
    m = f_bytes(1, edge_id) + f_varint(2, min(seqs)) + f_varint(3, max(seqs))
    for u in uploads:
        m += f_bytes(4, upload_msg(*u))
    return m


class TenancyTest(unittest.TestCase):
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
        TenancyTest.n += 1
        self.db = f"tenancy{TenancyTest.n}"
        self.pki = tempfile.mkdtemp(prefix="wt-pki-")
        self.addCleanup(shutil.rmtree, self.pki, True)
        subprocess.run([WTCTL, "pki", "init", "--dir", self.pki, "--hub-host", "127.0.0.1", "--hub-host",
                        "localhost"], check=True, capture_output=True)

    def make_hub(self, env=None, **kw):
        hub = Hub(self, self.ch, database=self.db, pki=self.pki, hub_extra="worker_interval_s = 0;", **kw)
        hub.start(env=env)
        return hub

    def q(self, sql):
        return self.ch.query(sql, database=self.db).strip()

    def cert(self, edge_id):
        subprocess.run([WTCTL, "pki", "issue-edge", "--ca", self.pki, "--edge-id", edge_id], check=True,
                       capture_output=True)
        return os.path.join(self.pki, edge_id + ".crt"), os.path.join(self.pki, edge_id + ".key")

    def tls(self, hub, edge_id, method, path, body=None):
        """A request on the replication port with edge_id's certificate."""
        crt, key = os.path.join(self.pki, edge_id + ".crt"), os.path.join(self.pki, edge_id + ".key")
        if not os.path.exists(crt):
            crt, key = self.cert(edge_id)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.load_verify_locations(os.path.join(self.pki, "ca.crt"))
        ctx.load_cert_chain(crt, key)
        ctx.check_hostname = False
        c = http.client.HTTPSConnection("127.0.0.1", hub.repl_port, context=ctx, timeout=60)
        try:
            c.request(method, path, body=body, headers={"Content-Type": "application/x-protobuf"} if body else {})
            r = c.getresponse()
            data = r.read()
        finally:
            c.close()
        try:
            return r.status, json.loads(data) if data else None
        except ValueError:
            return r.status, data

    def wtctl(self, hub, *args, token=None):
        return subprocess.run([WTCTL, "--hub", hub.url, "--token", token or hub.admin_token] + list(args),
                              capture_output=True, text=True, timeout=60)

    def total(self, hub, project, service, token):
        st, js = hub.query(project, "table", token, service=service, **{"from": "0",
                                                                           "until": str(int(time.time()) + 3600)})
        self.assertEqual(st, 200, js)
        return js["total"]

    def audit(self, project, action):
        return self.q(f"SELECT detail FROM audit_events_v1 WHERE project = '{project}' AND action = '{action}'"
                      " ORDER BY time_ns FORMAT TabSeparated")

    # ---- edge registration ---------------------------------------------------------------
    def test_unregistered_edge_refused_then_drains_after_allow(self):
        hub = self.make_hub()
        self.assertEqual(hub.create_project("demo")[0], 201)
        read = hub.create_token("demo", "read")
        crt, key = self.cert("edge1")
        e = Edge(self, edge_id="edge1", hub={"url": hub.repl_url, "ca": os.path.join(self.pki, "ca.crt"),
                                             "cert": crt, "key": key}, replication=FAST).start()
        with open(FOLDED_B, "rb") as f:
            data = f.read()
        for _ in range(2):
            st, js = e.upload(data, service="reg", format="folded")
            self.assertEqual(st, 200, js)
        deadline = time.time() + 30
        while time.time() < deadline and "not registered to project" not in hub.read_log():
            time.sleep(0.2)
        self.assertIn("is not registered to project", hub.read_log())
        time.sleep(1.0)  # more retries: still nothing may land
        self.assertEqual(self.total(hub, "demo", "reg", read), 0)
        self.assertEqual(self.q("SELECT count() FROM repl_ledger_v1"), "0")
        self.assertEqual(self.q("SELECT count() FROM profile_samples_v1"), "0")
        self.assertEqual(self.q("SELECT count() FROM function_rollup_v1"), "0")
        self.assertIn("not registered", self.audit("demo", "repl.refused"))
        self.assertGreater(e.metrics()["wt_edge_repl_backlog_uploads"], 0)
        deadline = time.time() + 15  # the edge says why (remote config names the project)
        while time.time() < deadline and "has not registered this edge to project demo" not in e.read_log():
            time.sleep(0.2)
        self.assertIn("has not registered this edge to project demo", e.read_log())
        # registered (audited), the backlog drains exactly once
        r = self.wtctl(hub, "admin", "edge", "allow", "--edge", "edge1", "--project", "demo")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("edge1", r.stdout)
        self.assertIn("edge=edge1", self.audit("demo", "edge.allow"))
        deadline = time.time() + 30
        while time.time() < deadline and self.total(hub, "demo", "reg", read) != 2 * awk_total(FOLDED_B):
            time.sleep(0.3)
        self.assertEqual(self.total(hub, "demo", "reg", read), 2 * awk_total(FOLDED_B))
        r = self.wtctl(hub, "--json", "admin", "edge", "list", "--project", "demo")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([(x["edge_id"], x["project"]) for x in json.loads(r.stdout)["edges"]], [("edge1", "demo")])
        # disallowed again: the next upload is refused, the earlier ones stay
        r = self.wtctl(hub, "admin", "edge", "disallow", "--edge", "edge1", "--project", "demo")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("edge=edge1", self.audit("demo", "edge.disallow"))
        refusals = hub.read_log().count("is not registered to project")
        st, js = e.upload(data, service="reg", format="folded")
        self.assertEqual(st, 200, js)
        # the edge has sent it and been refused (a new refusal in the log)
        deadline = time.time() + 30
        while time.time() < deadline and hub.read_log().count("is not registered to project") <= refusals:
            time.sleep(0.1)
        self.assertGreater(hub.read_log().count("is not registered to project"), refusals)
        self.assertEqual(self.total(hub, "demo", "reg", read), 2 * awk_total(FOLDED_B))
        r = self.wtctl(hub, "--json", "admin", "edge", "list", "--project", "demo")
        self.assertEqual(json.loads(r.stdout)["edges"], [])

    def test_batch_with_a_foreign_project_refused_whole(self):
        hub = self.make_hub()
        for p in ("demo", "other"):
            self.assertEqual(hub.create_project(p)[0], 201)
        hub.allow_edge("edge1", "demo")
        body = batch_msg("edge1", [(1, "demo", "mine", SMALL), (2, "other", "theirs", SMALL)])
        st, js = self.tls(hub, "edge1", "POST", "/v1/replicate", body)
        self.assertEqual(st, 403, js)
        self.assertIn('edge "edge1" is not registered to project "other"', js["detail"])
        # nothing at all is written for it, not even a claim on its seqs (the
        # refusal comes before the claim, so it cannot turn into a 503 "busy"
        # when writing the claim is slow)
        for t in ("profile_samples_v1", "function_rollup_v1", "raw_objects_v1", "repl_ledger_v2",
                  "repl_claims_v1"):
            self.assertEqual(self.q(f"SELECT count() FROM {t}"), "0", t)
        self.assertIn("edge1", self.audit("other", "repl.refused"))
        # a project that does not exist is refused the same way (no probing which ones exist)
        st, js = self.tls(hub, "edge1", "POST", "/v1/replicate", batch_msg("edge1", [(1, "nosuch", "x", SMALL)]))
        self.assertEqual(st, 403, js)
        # the allowed part alone goes through
        st, js = self.tls(hub, "edge1", "POST", "/v1/replicate", batch_msg("edge1", [(1, "demo", "mine", SMALL)]))
        self.assertEqual((st, js["applied"]), (200, 1), js)
        self.assertEqual(self.q("SELECT project, sum(value) FROM profile_samples_v1 GROUP BY project"
                                " FORMAT TabSeparated"), "demo\t10")

    def test_config_only_for_registered_projects(self):
        hub = self.make_hub()
        for p in ("demo", "other"):
            self.assertEqual(hub.create_project(p)[0], 201)
        hub.allow_edge("edge1", "demo")
        toks = {(p, r): hub.create_token(p, r) for p in ("demo", "other")
                for r in ("upload", "read", "admin", "DeleteTelemetry")}

        def sha(t):
            return hashlib.sha256(t.encode()).hexdigest()
        st, cfg = self.tls(hub, "edge1", "GET", "/v1/edges/edge1/config?project=demo&project=other")
        self.assertEqual(st, 200, cfg)
        self.assertEqual([p["name"] for p in cfg["projects"]], ["demo"])
        self.assertEqual(cfg["not_allowed"], ["other"])
        demo = cfg["projects"][0]
        self.assertEqual(demo["upload_token_sha256"], [sha(toks[("demo", "upload")])])
        self.assertEqual(demo["read_token_sha256"], [sha(toks[("demo", "read")])])
        text = json.dumps(cfg)
        for (p, r), t in toks.items():
            if (p, r) not in (("demo", "upload"), ("demo", "read")):
                self.assertNotIn(sha(t), text, (p, r))
        # a revoked token's hash leaves the config
        st, js = hub.request("GET", "/v1/admin/tokens?project=demo", token=hub.admin_token)
        rid = [t["id"] for t in js["tokens"] if t["role"] == "read"][0]
        st, js = hub.request("DELETE", f"/v1/admin/tokens/{rid}", token=hub.admin_token)
        self.assertEqual(st, 200, js)
        st, cfg = self.tls(hub, "edge1", "GET", "/v1/edges/edge1/config?project=demo")
        self.assertEqual(cfg["projects"][0]["read_token_sha256"], [])
        self.assertEqual(cfg["projects"][0]["revoked_token_sha256"], [sha(toks[("demo", "read")])])
        # an edge registered nowhere gets no project at all
        st, cfg = self.tls(hub, "edge2", "GET", "/v1/edges/edge2/config?project=demo")
        self.assertEqual((st, cfg["projects"], cfg["not_allowed"]), (200, [], ["demo"]))

    def test_rollup_recomputed_from_the_original(self):
        hub = self.make_hub()
        self.assertEqual(hub.create_project("demo")[0], 201)
        hub.allow_edge("edge1", "demo")
        now = time.time_ns()
        minute = now // 60_000_000_000
        forged = [rollup_row("cpu", "samples", "main", minute, 1_000_000, 1_000_000),
                  rollup_row("cpu", "samples", "evil", minute, 5, 5)]
        st, js = self.tls(hub, "edge1", "POST", "/v1/replicate",
                          batch_msg("edge1", [(1, "demo", "forge", SMALL, forged, now)]))
        self.assertEqual((st, js["applied"]), (200, 1), js)
        got = self.q("SELECT function, sum(self), sum(total) FROM function_rollup_v1 WHERE service = 'forge'"
                     " AND sample_type = 'cpu' GROUP BY function ORDER BY function FORMAT TabSeparated")
        # by hand from "main;work;leaf 7 / main;idle 3"
        self.assertEqual(got, "idle\t3\t3\nleaf\t7\t7\nmain\t0\t10\nwork\t0\t7")
        self.assertIn("the edge's rollup differs from its original", hub.read_log())

    def test_seq_must_not_jump(self):
        hub = self.make_hub()
        self.assertEqual(hub.create_project("demo")[0], 201)
        hub.allow_edge("edge1", "demo")
        post = lambda ups: self.tls(hub, "edge1", "POST", "/v1/replicate",  # noqa: E731
                                    batch_msg("edge1", [(s, "demo", "seqs", SMALL) for s in ups]))
        st, js = post([900000001])
        self.assertEqual(st, 403, js)
        self.assertIn("seqs jump", js["detail"])
        self.assertEqual(self.q("SELECT count() FROM repl_ledger_v2"), "0")
        self.assertEqual(self.q("SELECT count() FROM repl_claims_v1"), "0")
        self.assertIn("seqs jump", self.audit("demo", "repl.refused"))
        self.assertEqual(post([1])[0], 200)
        st, js = post([3])  # skips 2
        self.assertEqual(st, 403, js)
        st, js = post([2, 3])
        self.assertEqual((st, js["applied"]), (200, 2), js)
        self.assertEqual(post([1, 2, 3])[1]["duplicates"], 3)  # a retry of applied seqs is fine
        self.assertEqual(self.q("SELECT sum(value) FROM profile_samples_v1"), "30")

    # ---- tokens ----------------------------------------------------------------------------
    def test_token_revoke_on_two_hubs(self):
        a = self.make_hub()
        b = self.make_hub()  # the same database: two hubs of one installation
        self.assertEqual(a.create_project("demo")[0], 201)
        r = self.wtctl(a, "--json", "admin", "token", "create", "--project", "demo", "--role", "read")
        self.assertEqual(r.returncode, 0, r.stderr)
        created = json.loads(r.stdout)
        secret, tid = created["token"], created["id"]
        self.assertRegex(tid, r"^[0-9a-f]{16}$")
        for h in (a, b):  # both hubs now hold it in their caches
            st, js = h.query("demo", "table", secret, service="x")
            self.assertEqual(st, 200, js)
        r = self.wtctl(a, "--json", "admin", "token", "list", "--project", "demo")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn(secret, r.stdout)
        listed = {t["id"]: t for t in json.loads(r.stdout)["tokens"]}
        self.assertEqual(listed[tid]["role"], "read")
        used = listed[tid]["last_used_ns"]
        self.assertTrue(isinstance(used, int) and abs(used - time.time_ns()) < 120e9, listed[tid])
        self.assertNotIn("token", listed[tid])
        r = self.wtctl(a, "admin", "token", "list", "--project", "demo")
        self.assertIn(tid, r.stdout)
        # revoke through hub a; b must refuse within hub.token_cache_ttl_ms (1000 in the harness)
        r = self.wtctl(a, "admin", "token", "revoke", "--project", "demo", tid)
        t0 = time.time()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("revoked", r.stdout)
        self.assertEqual(a.query("demo", "table", secret, service="x")[0], 401)
        while time.time() - t0 < 10 and b.query("demo", "table", secret, service="x")[0] != 401:
            time.sleep(0.05)
        took = time.time() - t0
        self.assertEqual(b.query("demo", "table", secret, service="x")[0], 401)
        self.assertLess(took, 1.0 + 1.0, f"hub b refused the revoked token only after {took:.2f} s")
        sys.stderr.write(f"\n[tenancy] revoked token refused by the second hub after {took:.2f} s"
                         " (token_cache_ttl_ms = 1000)\n")
        self.assertIn(f"id={tid}", self.audit("demo", "token.revoke"))
        r = self.wtctl(a, "--json", "admin", "token", "list", "--project", "demo")
        self.assertNotIn(tid, r.stdout)
        # revoking again changes nothing; an unknown id is 404; another project's admin gets 403
        st, js = b.request("DELETE", f"/v1/admin/tokens/{tid}", token=b.admin_token)
        self.assertEqual((st, js["changed"]), (200, False), js)
        self.assertEqual(b.request("DELETE", "/v1/admin/tokens/" + "0" * 16, token=b.admin_token)[0], 404)
        self.assertEqual(a.create_project("other")[0], 201)
        foreign = a.create_token("other", "admin")
        victim = json.loads(self.wtctl(a, "--json", "admin", "token", "create", "--project", "demo",
                                       "--role", "upload").stdout)
        self.assertEqual(a.request("DELETE", f"/v1/admin/tokens/{victim['id']}", token=foreign)[0], 403)
        self.assertEqual(a.upload(SMALL, victim["token"], "still", format="folded")[0], 200)
        r = self.wtctl(a, "admin", "token", "revoke", "--project", "other", victim["id"])
        self.assertNotEqual(r.returncode, 0)  # the id is not in that project
        self.assertIn("404", r.stderr)

    def test_revoked_token_refused_at_the_edge_even_from_its_config_file(self):
        """appliance/up writes the hub's tokens into the edges' config files;
        revoking one at the hub must stop it there too."""
        from harness.edge import UPLOAD_TOKEN
        hub = self.make_hub()
        self.assertEqual(hub.create_project("demo")[0], 201)
        hub.allow_edge("edge1", "demo")
        # the edge's local upload token is a hub token of demo (as appliance/up makes it)
        h = hashlib.sha256(UPLOAD_TOKEN.encode()).hexdigest()
        self.q(f"INSERT INTO tokens_v1 VALUES ('{h}', 'feedfacefeedface', 'demo', 'upload', now(), 0, 1)")
        crt, key = self.cert("edge1")
        e = Edge(self, edge_id="edge1", hub={"url": hub.repl_url, "ca": os.path.join(self.pki, "ca.crt"),
                                             "cert": crt, "key": key}, replication=FAST).start()
        self.assertEqual(e.upload(SMALL, service="rv", format="folded")[0], 200)
        deadline = time.time() + 15  # the edge has pulled its config once
        while time.time() < deadline and "remote config applied" not in e.read_log():
            time.sleep(0.1)
        st, js = hub.request("DELETE", "/v1/admin/tokens/feedfacefeedface", token=hub.admin_token)
        self.assertEqual(st, 200, js)
        t0 = time.time()
        while time.time() - t0 < 15 and e.upload(SMALL, service="rv", format="folded")[0] != 401:
            time.sleep(0.1)
        took = time.time() - t0
        self.assertEqual(e.upload(SMALL, service="rv", format="folded")[0], 401)
        sys.stderr.write(f"\n[tenancy] revoked token refused by the edge after {took:.2f} s\n")
        self.assertLess(took, 5.0)
        # and after a restart (the config is persisted with the revocation)
        e.stop()
        e.start()
        self.assertEqual(e.upload(SMALL, service="rv", format="folded")[0], 401)

    def test_revoke_wins_over_a_hub_clock_running_ahead(self):
        """The token's row was written by a hub whose clock runs an hour
        ahead: the revocation row must still be the newest."""
        hub = self.make_hub()
        self.assertEqual(hub.create_project("demo")[0], 201)
        secret = "c" * 64
        h = hashlib.sha256(secret.encode()).hexdigest()
        ahead = time.time_ns() + 3600 * 10**9
        self.q(f"INSERT INTO tokens_v1 VALUES ('{h}', 'aaaabbbbccccdddd', 'demo', 'read', now(), 0, {ahead})")
        self.assertEqual(hub.query("demo", "table", secret, service="x")[0], 200)
        st, js = hub.request("DELETE", "/v1/admin/tokens/aaaabbbbccccdddd", token=hub.admin_token)
        self.assertEqual((st, js["changed"]), (200, True), js)
        self.assertEqual(hub.query("demo", "table", secret, service="x")[0], 401)
        # the same for an edge registration
        hub.allow_edge("edge1", "demo")
        self.q(f"INSERT INTO edge_projects_v1 VALUES ('edge1', 'demo', 1, 'other-hub', {ahead})")
        st, js = hub.request("DELETE", "/v1/admin/edges/edge1/projects/demo", token=hub.admin_token)
        self.assertEqual(st, 200, js)
        st, js = hub.request("GET", "/v1/admin/edges?project=demo", token=hub.admin_token)
        self.assertEqual(js["edges"], [])

    def test_project_admin_cannot_create_delete_telemetry_token(self):
        hub = self.make_hub()
        self.assertEqual(hub.create_project("demo")[0], 201)
        padmin = hub.create_token("demo", "admin")
        st, js = hub.request("POST", "/v1/admin/tokens", json.dumps({"project": "demo", "role": "DeleteTelemetry"}),
                             token=padmin)
        self.assertEqual(st, 403, js)
        self.assertNotIn("token", js)
        self.assertIn("role=DeleteTelemetry refused", self.audit("demo", "token.create.refused"))
        self.assertEqual(self.q("SELECT count() FROM tokens_v1 WHERE role = 'DeleteTelemetry'"), "0")
        r = self.wtctl(hub, "admin", "token", "create", "--project", "demo", "--role", "DeleteTelemetry",
                       token=padmin)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("403", r.stderr)
        # the hub operator's token may
        st, js = hub.request("POST", "/v1/admin/tokens", json.dumps({"project": "demo", "role": "DeleteTelemetry"}),
                             token=hub.admin_token)
        self.assertEqual(st, 201, js)

    # ---- originals: deletion racing an upload of the same bytes -----------------------------
    def test_delete_racing_same_bytes_upload_keeps_its_original(self):
        fp = tempfile.mkdtemp(prefix="wt-fp-")
        self.addCleanup(shutil.rmtree, fp, True)
        hub = self.make_hub(env={"WT_FAILPOINT_WAIT": "ingest_after_object_put:" + fp})
        for p in ("a", "b"):
            self.assertEqual(hub.create_project(p)[0], 201)
        up = {p: hub.create_token(p, "upload") for p in ("a", "b")}
        deleter = hub.create_token("a", "DeleteTelemetry")
        with open(FOLDED_B, "rb") as f:
            base = f.read()
        objects = os.path.join(hub.dir, "data", "objects")
        for who in ("a", "b"):  # the same bytes again: in the same project, then in another one
            data = base + f"race;{who} 1\n".encode()  # other bytes per round: each round stands alone
            st, js = hub.upload(data, up["a"], "svc", format="folded", **{"from": str(int(time.time()) - 7200)})
            self.assertEqual(st, 200, js)
            old_key = js["object_key"]
            for n in ("reached", "release"):
                if os.path.exists(os.path.join(fp, n)):
                    os.unlink(os.path.join(fp, n))
            open(os.path.join(fp, "armed"), "w").close()
            res = {}
            t = threading.Thread(target=lambda: res.update(r=hub.upload(data, up[who], "svc", format="folded")))
            t.start()
            deadline = time.time() + 30
            while time.time() < deadline and not os.path.exists(os.path.join(fp, "reached")):
                time.sleep(0.02)
            self.assertTrue(os.path.exists(os.path.join(fp, "reached")), "failpoint not reached")
            # the upload's object is written, its index row is not: delete a's old originals now
            before = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3600))
            st, js = hub.request("DELETE", "/v1/projects/a/profiles?" + urllib.parse.urlencode({"before": before}),
                                 token=deleter)
            self.assertEqual(st, 202, js)
            open(os.path.join(fp, "release"), "w").close()
            t.join(60)
            st, js = res["r"]
            self.assertEqual(st, 200, js)
            path = os.path.join(objects, js["object_key"])
            self.assertTrue(os.path.exists(path), f"{who}: the racing upload's original was deleted ({js['object_key']})")
            with open(path, "rb") as f:
                self.assertEqual(f.read(), data)
            self.assertEqual(self.q(f"SELECT count() FROM raw_objects_v1 WHERE object_key = '{js['object_key']}'"),
                             "1")
            self.assertFalse(os.path.exists(os.path.join(objects, old_key)), "the deleted upload's original stayed")


if __name__ == "__main__":
    unittest.main()
