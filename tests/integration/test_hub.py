#!/usr/bin/env python3
"""test_hub.py — wt-hub against a private real ClickHouse (18.16 here).

Uploads real profiles from the corpus, queries table/flamegraph and compares
totals and per-function values exactly with independent references
(`go tool pprof -top` for pprof, awk-style counting over folded text);
checks project isolation and roles, parameter errors, a ClickHouse outage
(503 while down, recovery without losing an acknowledged upload), and the
S3 object store backend against a local s3rver (npm).
"""
import gzip
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness.clickhouse import ClickHouse, free_port  # noqa: E402
from harness.hub import CORPUS, ROOT, Hub  # noqa: E402

GO_CPU = os.path.join(CORPUS, "gen/go/go-cpu.pb.gz")
GO_HEAP = os.path.join(CORPUS, "gen/go/go-heap.pb.gz")
FOLDED = os.path.join(CORPUS, "gen/c/folded-c-fp.stackcollapse-perf.txt")
ALL_TIME = {"from": "0", "until": "4102444800"}  # 1970 .. 2100


def pprof_top(path, index, extra=()):
    """{function: (flat, cum)} and total from `go tool pprof -top`."""
    unit = "ns" if index in ("cpu", "wall", "delay") else "byte" if index.endswith("_space") else None
    args = [f"-unit={unit}"] if unit else []
    out = subprocess.run(["go", "tool", "pprof", "-top", "-nodecount=100000", "-nodefraction=0",
                          "-edgefraction=0", f"-sample_index={index}", *args, *extra, path],
                         capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, HOME=os.environ.get("HOME", "/tmp"),
                                  PPROF_TMPDIR=tempfile.gettempdir()))
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    num = lambda s: int(re.match(r"-?\d+", s).group(0))  # noqa: E731
    total = None
    rows = {}
    in_rows = False
    for line in out.stdout.splitlines():
        m = re.search(r"of (-?\d+)\S* total", line)
        if m:
            total = int(m.group(1))
        if line.strip().startswith("flat"):
            in_rows = True
            continue
        if in_rows and line.strip():
            parts = line.split(None, 5)
            name = parts[5]
            if name.endswith(" (inline)"):
                name = name[: -len(" (inline)")]
            flat, cum = num(parts[0]), num(parts[3])
            f0, c0 = rows.get(name, (0, 0))
            rows[name] = (f0 + flat, c0 + cum)
    if total is None:  # "Showing nodes accounting for ..." absent when empty
        total = 0
    return total, rows


def folded_reference(path):
    """Total and self per leaf frame, counted like awk '{n=$NF; ...}'."""
    total = 0
    self_by_leaf = {}
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip():
                continue
            stack, _, count = line.rpartition(" ")
            n = int(count)
            total += n
            leaf = stack.split(";")[-1]
            self_by_leaf[leaf] = self_by_leaf.get(leaf, 0) + n
    return total, self_by_leaf


class _ClassCleanup:
    def __init__(self, cls):
        self.cls = cls

    def addCleanup(self, fn, *a):
        self.cls.addClassCleanup(fn, *a)


class HubQueries(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cc = _ClassCleanup(cls)
        cls.ch = ClickHouse(cc).start()
        cls.hub = Hub(cc, cls.ch).start()
        h = cls.hub
        st, js = h.create_project("alpha", 14)
        assert st == 201, (st, js)
        st, js = h.create_project("beta")
        assert st == 201, (st, js)
        cls.up_a = h.create_token("alpha", "upload")
        cls.rd_a = h.create_token("alpha", "read")
        cls.up_b = h.create_token("beta", "upload")
        cls.rd_b = h.create_token("beta", "read")
        with open(GO_CPU, "rb") as f:
            cls.cpu_bytes = f.read()
        with open(GO_HEAP, "rb") as f:
            cls.heap_bytes = f.read()
        for data, svc, fmt in ((cls.cpu_bytes, "gowork", "pprof"), (cls.heap_bytes, "gowork-heap", "pprof")):
            st, js = h.upload(data, cls.up_a, svc, format=fmt)
            assert st == 200, (st, js)
        with open(FOLDED, "rb") as f:
            st, js = h.upload(f.read(), cls.up_a, "cwork", format="folded")
        assert st == 200, (st, js)
        # beta gets only the folded profile
        with open(FOLDED, "rb") as f:
            st, js = h.upload(gzip.compress(f.read()), cls.up_b, "cwork-b", format="folded")
        assert st == 200, (st, js)

    def table(self, service, token=None, project="alpha", **kw):
        params = dict(ALL_TIME, service=service, limit="1000000")
        params.update(kw)
        st, js = self.hub.query(project, "table", token or self.rd_a, **params)
        self.assertEqual(st, 200, js)
        return js

    def compare_pprof(self, service, path, index, extra=(), **kw):
        total, ref = pprof_top(path, index, extra)
        if extra:  # with -tagfocus "of X total" stays the unfiltered total
            total = sum(flat for flat, _ in ref.values())
        js = self.table(service, type=index, **kw)
        self.assertEqual(js["total"], total)
        got = {r["function"]: (r["self"], r["total"]) for r in js["rows"]}
        top = sorted(ref.items(), key=lambda kv: -kv[1][0])[:25]
        for name, (flat, cum) in top:
            self.assertIn(name, got, f"function {name} missing")
            self.assertEqual(got[name], (flat, cum), name)
        # every function with nonzero self in the reference, exactly
        for name, (flat, cum) in ref.items():
            if flat:
                self.assertEqual(got.get(name, (0, 0))[0], flat, name)
        self.assertEqual(sum(r["self"] for r in js["rows"]), total)
        return js

    def test_cpu_table_matches_pprof(self):
        js = self.compare_pprof("gowork", GO_CPU, "cpu")
        self.assertEqual(js["unit"], "nanoseconds")

    def test_default_type_is_cpu(self):
        params = dict(ALL_TIME, service="gowork")
        st, js = self.hub.query("alpha", "table", self.rd_a, **params)
        self.assertEqual(st, 200, js)
        self.assertEqual(js["type"], "cpu")
        total, _ = pprof_top(GO_CPU, "cpu")
        self.assertEqual(js["total"], total)

    def test_heap_types_match_pprof(self):
        for idx in ("alloc_space", "alloc_objects", "inuse_space", "inuse_objects"):
            with self.subTest(idx):
                self.compare_pprof("gowork-heap", GO_HEAP, idx)

    def test_label_filter_matches_pprof_tagfocus(self):
        self.compare_pprof("gowork", GO_CPU, "cpu", extra=("-tagfocus=stage=hash",),
                           **{"label.stage": "hash"})

    def test_folded_matches_awk(self):
        total, self_ref = folded_reference(FOLDED)
        js = self.table("cwork")
        self.assertEqual(js["total"], total)
        got = {r["function"]: r["self"] for r in js["rows"]}
        for leaf, v in sorted(self_ref.items(), key=lambda kv: -kv[1])[:20]:
            self.assertEqual(got.get(leaf), v, leaf)

    def test_flamegraph_totals(self):
        total, ref = pprof_top(GO_CPU, "cpu")
        params = dict(ALL_TIME, service="gowork", type="cpu")
        st, js = self.hub.query("alpha", "flamegraph", self.rd_a, **params)
        self.assertEqual(st, 200, js)
        self.assertEqual(js["total"], total)
        root = js["root"]
        self.assertEqual(root["total"], total)
        self.assertEqual(sum(c["total"] for c in root["children"]) + root.get("self", 0), total)
        self.assertFalse(js["truncated"])
        # a node budget truncates but keeps the total
        st, js = self.hub.query("alpha", "flamegraph", self.rd_a, max_nodes="20", **params)
        self.assertEqual(st, 200, js)
        self.assertTrue(js["truncated"])
        self.assertEqual(js["root"]["total"], total)

    def test_callgraph(self):
        params = dict(ALL_TIME, service="gowork", type="cpu")
        st, js = self.hub.query("alpha", "callgraph", self.rd_a, **params)
        self.assertEqual(st, 200, js)
        total, ref = pprof_top(GO_CPU, "cpu")
        self.assertEqual(js["total"], total)
        nodes = {n["function"]: n for n in js["nodes"]}
        name, (flat, cum) = max(ref.items(), key=lambda kv: kv[1][0])
        self.assertEqual((nodes[name]["self"], nodes[name]["total"]), (flat, cum))

    def test_empty_selection_is_zero(self):
        js = self.table("no-such-service")
        self.assertEqual(js["total"], 0)
        self.assertEqual(js["rows"], [])
        js = self.table("gowork", **{"from": "0", "until": "1"})
        self.assertEqual(js["total"], 0)

    def test_bad_parameters_name_the_parameter(self):
        for params, name in (({"from": "yesterday-ish"}, "from"),
                             ({"until": "2024-13-45T00:00:00Z"}, "until"),
                             ({"max_nodes": "0"}, "max_nodes"),
                             ({"limit": "x"}, "limit"),
                             ({"from": "200", "until": "100"}, "until"),
                             ({"label.1bad": "v"}, "label.1bad")):
            with self.subTest(name):
                st, js = self.hub.query("alpha", "table", self.rd_a, service="gowork", **params)
                self.assertEqual(st, 400, js)
                self.assertIn(name, js["detail"])
                self.assertEqual(js["error"], "invalid_input")

    def test_documented_special_values(self):
        # docs/api.md: table `limit` 0 = all rows, else 1-1000000; `max_nodes`
        # 1-1000000; `symbolize=0` shows frames as stored
        every = self.table("gowork")["rows"]
        self.assertGreater(len(every), 10)
        self.assertEqual(self.table("gowork", limit="0")["rows"], every)
        self.assertEqual(self.table("gowork", limit="1")["rows"], every[:1])
        self.assertEqual(self.table("gowork", limit="1000000")["rows"], every)
        self.assertEqual(self.table("gowork", symbolize="0")["total"], self.table("gowork")["total"])
        st, js = self.hub.query("alpha", "flamegraph", self.rd_a, service="gowork", max_nodes="1",
                                **ALL_TIME)
        self.assertEqual(st, 200, js)
        self.assertTrue(js["truncated"])
        for params, name in (({"limit": "-1"}, "limit"), ({"limit": "1000001"}, "limit"),
                             ({"max_nodes": "1000001"}, "max_nodes")):
            with self.subTest(params=params):
                st, js = self.hub.query("alpha", "table", self.rd_a, service="gowork", **params)
                self.assertEqual(st, 400, js)
                self.assertIn(name, js["detail"])

    def test_project_isolation(self):
        # beta's token never reads alpha and vice versa
        for token, project in ((self.rd_b, "alpha"), (self.rd_a, "beta")):
            st, js = self.hub.query(project, "table", token, service="gowork", **ALL_TIME)
            self.assertEqual(st, 403, js)
            st, js = self.hub.query(project, "flamegraph", token, service="cwork-b", **ALL_TIME)
            self.assertEqual(st, 403, js)
        # alpha's data is invisible in beta even for beta's own token
        js = self.table("gowork", token=self.rd_b, project="beta")
        self.assertEqual(js["total"], 0)
        # beta sees its own folded upload, with the same total as the file
        total, _ = folded_reference(FOLDED)
        js = self.table("cwork-b", token=self.rd_b, project="beta")
        self.assertEqual(js["total"], total)
        # roles: upload tokens do not read, read tokens do not upload
        st, _ = self.hub.query("alpha", "table", self.up_a, service="gowork", **ALL_TIME)
        self.assertEqual(st, 403)
        st, _ = self.hub.upload(self.cpu_bytes, self.rd_a, "x", format="pprof")
        self.assertEqual(st, 403)
        st, _ = self.hub.query("alpha", "table", "not-a-token", service="gowork")
        self.assertEqual(st, 401)
        st, _ = self.hub.query("alpha", "table", None, service="gowork")
        self.assertEqual(st, 401)
        # project tokens cannot use the admin API
        st, _ = self.hub.request("GET", "/v1/admin/projects", token=self.rd_a)
        self.assertEqual(st, 403)
        st, _ = self.hub.request("POST", "/v1/admin/tokens", json.dumps({"project": "alpha", "role": "admin"}),
                                 token=self.up_b)
        self.assertEqual(st, 403)

    def test_admin_api(self):
        h = self.hub
        st, js = h.create_project("alpha", 14)
        self.assertEqual(st, 200, js)
        st, js = h.create_project("alpha", 99)
        self.assertEqual(st, 409, js)
        st, js = h.create_project("bad name!")
        self.assertEqual(st, 400, js)
        self.assertIn("name", js["detail"])
        st, js = h.request("GET", "/v1/admin/projects", token=h.admin_token)
        self.assertEqual(st, 200)
        names = {p["name"]: p["retention_days"] for p in js["projects"]}
        self.assertEqual(names.get("alpha"), 14)
        self.assertEqual(names.get("beta"), 30)
        st, js = h.request("POST", "/v1/admin/tokens", json.dumps({"project": "alpha", "role": "root"}),
                           token=h.admin_token)
        self.assertEqual(st, 400)
        self.assertIn("role", js["detail"])
        st, js = h.request("POST", "/v1/admin/tokens", json.dumps({"project": "nope", "role": "read"}),
                           token=h.admin_token)
        self.assertEqual(st, 404)
        st, js = h.request("POST", "/v1/admin/tokens",
                           json.dumps({"project": "alpha", "role": "DeleteTelemetry"}), token=h.admin_token)
        self.assertEqual(st, 201)
        self.assertRegex(js["token"], r"^[0-9a-f]{64}$")
        # secrets are stored hashed: the plain token appears nowhere in ClickHouse
        dump = self.ch.query("SELECT * FROM tokens_v1 FORMAT TabSeparated", database="watchtower")
        self.assertNotIn(js["token"], dump)
        self.assertIn(js["id"], dump)
        audit = self.ch.query("SELECT action FROM audit_events_v1 WHERE project = 'alpha' FORMAT TabSeparated",
                              database="watchtower")
        self.assertIn("project.create", audit)
        self.assertIn("token.create", audit)

    def test_bad_upload_stores_nothing(self):
        before = self.ch.query("SELECT count() FROM profile_samples_v1", database="watchtower")
        objs = self.ch.query("SELECT count() FROM raw_objects_v1", database="watchtower")
        st, js = self.hub.upload(self.cpu_bytes[: len(self.cpu_bytes) // 2], self.up_a, "broken", format="pprof")
        self.assertTrue(400 <= st < 500, (st, js))
        self.assertIn("error", js)
        st, js = self.hub.upload(b"\x00\x01garbage", self.up_a, "broken", format="pprof")
        self.assertTrue(400 <= st < 500, (st, js))
        st, js = self.hub.upload(b"main;foo 1\n", self.up_a, "broken", format="nosuch")
        self.assertEqual(st, 415, js)
        st, js = self.hub.upload(b"main;foo 1\n", self.up_a, "", format="folded")
        self.assertEqual(st, 400, js)
        self.assertIn("service", js["detail"])
        self.assertEqual(self.ch.query("SELECT count() FROM profile_samples_v1", database="watchtower"), before)
        self.assertEqual(self.ch.query("SELECT count() FROM raw_objects_v1", database="watchtower"), objs)

    def test_original_in_object_store(self):
        st, js = self.hub.upload(self.cpu_bytes, self.up_a, "gowork-copy", format="pprof")
        self.assertEqual(st, 200, js)
        path = os.path.join(self.hub.dir, "data", "objects", js["object_key"])
        with open(path, "rb") as f:
            self.assertEqual(f.read(), self.cpu_bytes)

    def test_time_range_and_from_override(self):
        data = b"main;work;hot 7\nmain;idle 3\n"
        st, js = self.hub.upload(data, self.up_a, "timed", format="folded", **{"from": "1700000000"})
        self.assertEqual(st, 200, js)
        js = self.table("timed", **{"from": "1699999999", "until": "1700000001"})
        self.assertEqual(js["total"], 10)
        js = self.table("timed", **{"from": "2023-11-14T22:13:20Z", "until": "2023-11-14T22:13:30Z"})
        self.assertEqual(js["total"], 10)
        js = self.table("timed", **{"from": "1700000001", "until": "1800000000"})
        self.assertEqual(js["total"], 0)

    def test_healthz_and_metrics(self):
        st, js = self.hub.request("GET", "/healthz")
        self.assertEqual(st, 200)
        self.assertEqual(js["clickhouse"]["status"], "up")
        self.assertTrue(js["clickhouse"]["version"].startswith("18.16"))
        with urllib.request.urlopen(self.hub.url + "/metrics", timeout=10) as r:
            text = r.read().decode()
        self.assertIn("wt_hub_clickhouse_up 1", text)
        m = re.search(r"^wt_hub_uploads_total (\d+)$", text, re.M)
        self.assertTrue(m and int(m.group(1)) >= 4)

    def test_schema_recorded(self):
        out = self.ch.query("SELECT version, name FROM schema_migrations ORDER BY version FORMAT TabSeparated",
                            database="watchtower")
        names = [l.split("\t")[1] for l in out.splitlines()]
        for t in ("profile_samples_v1", "profile_stacks_v1", "function_rollup_v1",
                  "profile_type_retention_v1", "projects_v1", "tokens_v1", "audit_events_v1"):
            self.assertIn(t, names)
        # rollup: self per function per minute sums to the profile total
        total, _ = pprof_top(GO_CPU, "cpu")
        out = self.ch.query("SELECT sum(self) FROM function_rollup_v1 WHERE project = 'alpha'"
                            " AND service = 'gowork' AND sample_type = 'cpu'", database="watchtower")
        self.assertEqual(int(out), total)


class HubClickHouseOutage(unittest.TestCase):
    def test_outage_503_and_recovery(self):
        ch = ClickHouse(self).start()
        hub = Hub(self, ch).start()
        self.assertEqual(hub.create_project("demo")[0], 201)
        up = hub.create_token("demo", "upload")
        rd = hub.create_token("demo", "read")
        with open(GO_CPU, "rb") as f:
            data = f.read()
        total, _ = pprof_top(GO_CPU, "cpu")
        st, js = hub.upload(data, up, "svc", format="pprof")
        self.assertEqual(st, 200, js)  # acknowledged

        ch.stop()
        deadline = time.time() + 10
        while time.time() < deadline:
            st, js = hub.request("GET", "/healthz")
            if st == 503:
                break
            time.sleep(0.1)
        self.assertEqual(st, 503)
        self.assertEqual(js["clickhouse"]["status"], "down")
        st, js = hub.upload(data, up, "svc", format="pprof")
        self.assertEqual(st, 503, js)
        self.assertEqual(js["error"], "unavailable")
        st, js = hub.query("demo", "table", rd, service="svc", type="cpu", **ALL_TIME)
        self.assertEqual(st, 503, js)
        self.assertIsNone(hub.proc.poll(), "hub must keep running")

        ch.start()
        deadline = time.time() + 20
        while time.time() < deadline:
            st, js = hub.request("GET", "/healthz")
            if st == 200:
                break
            time.sleep(0.1)
        self.assertEqual(st, 200, js)
        st, js = hub.query("demo", "table", rd, service="svc", type="cpu", **ALL_TIME)
        self.assertEqual(st, 200, js)
        self.assertEqual(js["total"], total)  # the acknowledged upload survived
        # the same bytes and parameters again: the stored upload, once
        # (docs/api.md: retries never double-count)
        st, js = hub.upload(data, up, "svc", format="pprof")
        self.assertEqual(st, 200, js)
        self.assertTrue(js.get("duplicate"), js)
        # stored again on purpose: a new Idempotency-Key
        st, js = hub.request("POST", "/v1/profiles?service=svc&format=pprof", data, token=up,
                             headers={"Idempotency-Key": "second-copy"})
        self.assertEqual(st, 200, js)
        st, js = hub.query("demo", "table", rd, service="svc", type="cpu", **ALL_TIME)
        self.assertEqual(js["total"], 2 * total)
        self.assertIn("clickhouse down", hub.read_log())


def s3rver_dir():
    """node_modules with s3rver, installed with npm under the build dir."""
    build = os.path.join(ROOT, os.environ.get("BUILD", "build"))
    d = os.path.join(build, "npm")
    js = os.path.join(d, "node_modules", "s3rver", "bin", "s3rver.js")
    if not os.path.exists(js):
        os.makedirs(d, exist_ok=True)
        r = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", d, "s3rver@3"],
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0 or not os.path.exists(js):
            return None, r.stderr[-2000:]
    return js, None


class HubS3(unittest.TestCase):
    def test_s3_backend_against_s3rver(self):
        js_path, why = s3rver_dir()
        if js_path is None:
            self.fail("cannot install npm s3rver: " + why)
        sdir = tempfile.mkdtemp(prefix="wt-s3rver-")
        self.addCleanup(shutil.rmtree, sdir, True)
        port = free_port()
        log = open(os.path.join(sdir, "s3rver.log"), "wb")
        proc = subprocess.Popen(["node", js_path, "-d", os.path.join(sdir, "data"), "-a", "127.0.0.1",
                                 "-p", str(port), "--silent"], stdout=log, stderr=log)
        log.close()

        def stop():
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.addCleanup(stop)
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        ch = ClickHouse(self).start()
        hub = Hub(self, ch, object_store=f'backend = "s3"; s3 = {{ endpoint = "http://127.0.0.1:{port}";'
                                          f' bucket = "wt-raw"; region = "us-east-1";'
                                          f' access_key = "S3RVER"; secret_key = "S3RVER"; }};').start()
        self.assertEqual(hub.create_project("demo")[0], 201)
        up = hub.create_token("demo", "upload")
        with open(GO_CPU, "rb") as f:
            data = f.read()
        st, js = hub.upload(data, up, "svc", format="pprof")
        self.assertEqual(st, 200, (js, hub.read_log()[-1500:]))
        key = js["object_key"]
        # read it back through s3rver's own HTTP API (anonymous GET of the stored object file
        # is not allowed; check the on-disk copy s3rver keeps instead)
        found = None
        for root, _dirs, files in os.walk(os.path.join(sdir, "data")):
            for fn in files:
                p = os.path.join(root, fn)
                if p.endswith(os.path.basename(key) + "._S3rver_object") or p.endswith(os.path.basename(key)):
                    found = p
        self.assertIsNotNone(found, f"object {key} not in s3rver data dir")
        with open(found, "rb") as f:
            self.assertEqual(f.read(), data)
        # an unknown access key is refused by s3rver → upload fails with 5xx, nothing acknowledged
        hub2 = Hub(self, ch, object_store=f'backend = "s3"; s3 = {{ endpoint = "http://127.0.0.1:{port}";'
                                           f' bucket = "wt-raw"; access_key = "NOSUCHKEY"; secret_key = "S3RVER"; }};')
        try:
            hub2.start()
        except RuntimeError:
            return  # refusing to start on bad credentials is acceptable too
        with open(FOLDED, "rb") as f:
            st, js = hub2.upload(f.read(), up, "svc2", format="folded")
        self.assertGreaterEqual(st, 500, js)
        self.assertEqual(ch.query("SELECT count() FROM profile_samples_v1 WHERE service = 'svc2'",
                                  database="watchtower").strip(), "0")


if __name__ == "__main__":
    unittest.main()
