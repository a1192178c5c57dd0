"""test_edge.py — wt-edge end to end on loopback: ingest real pprof and
folded profiles, compare the edge's local table with independent references
(`go tool pprof -raw` parsed here, awk over folded text), Pyroscope /ingest
(name{labels}, multipart), durability across kill -9 during concurrent
uploads, rejects (400/401/413/415) that store nothing, clean SIGTERM.
"""
import concurrent.futures
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness.edge import CORPUS, Edge  # noqa: E402

GO_CPU = os.path.join(CORPUS, "gen/go/go-cpu.pb.gz")
GO_HEAP = os.path.join(CORPUS, "gen/go/go-heap.pb.gz")
FOLDED_C = os.path.join(CORPUS, "gen/c/folded-c-fp.stackcollapse-perf.txt")
FOLDED_JAVA = os.path.join(CORPUS, "folded/flamegraph__perf-vertx-java-collapsed-all.txt")

SAMPLE_RE = re.compile(r"^\s*(-?\d+(?:\s+-?\d+)*):((?:\s+\d+)*)\s*$")
LOC_RE = re.compile(r"^\s*(\d+): 0x[0-9a-f]+(?: M=\d+)?(?: (.*))?$")


def go_raw(path):
    """Parse `go tool pprof -raw`: (type names, [(values, [loc ids])], {loc: [func names leaf first]})."""
    out = subprocess.run(["go", "tool", "pprof", "-raw", path], check=True, capture_output=True, text=True).stdout
    types, samples, locs = [], [], {}
    section, cur = None, None
    for line in out.splitlines():
        if line.startswith("Samples:"):
            section = "s"
            continue
        if line.startswith("Locations"):
            section = "l"
            continue
        if line.startswith("Mappings"):
            section = None
            continue
        if section == "s":
            if not types:
                types = [t.split("/")[0] for t in line.split()]
                continue
            m = SAMPLE_RE.match(line)
            if m:
                samples.append(([int(v) for v in m.group(1).split()], [int(x) for x in m.group(2).split()]))
        elif section == "l":
            m = LOC_RE.match(line)
            if m:
                cur = int(m.group(1))
                locs[cur] = []
                rest = m.group(2)
            else:
                rest = line.strip()
            if rest:
                rest = re.sub(r" s=\d+$", "", rest.strip())
                func = rest.rsplit(" ", 1)[0] if " " in rest else rest
                locs[cur].append(func)
    return types, samples, locs


def pprof_reference(path, type_name):
    types, samples, locs = go_raw(path)
    idx = types.index(type_name)
    total, self_, cum = 0, {}, {}
    for values, ids in samples:
        v = values[idx]
        if not v:
            continue
        frames = [f for i in ids for f in locs[i]]  # leaf first, inlined frames expanded
        total += v
        if frames:
            self_[frames[0]] = self_.get(frames[0], 0) + v
        for f in set(frames):
            cum[f] = cum.get(f, 0) + v
    return total, self_, cum


AWK = r"""
{ sub(/\r$/, ""); if ($0 == "") next; n = $NF; line = $0; sub(/ [0-9]+$/, "", line);
  sub(/[ ;]+$/, "", line);  # an empty trailing frame ("a;b;  3") is no frame
  k = split(line, f, ";"); tot += n; self[f[k]] += n; delete seen;
  for (i = 1; i <= k; i++) if (!(f[i] in seen)) { seen[f[i]] = 1; cum[f[i]] += n } }
END { printf "T\t%d\n", tot; for (x in cum) printf "F\t%s\t%d\t%d\n", x, self[x], cum[x] }
"""


def folded_reference(path):
    out = subprocess.run(["awk", AWK, path], check=True, capture_output=True, text=True).stdout
    total, self_, cum = 0, {}, {}
    for line in out.splitlines():
        p = line.split("\t")
        if p[0] == "T":
            total = int(p[1])
        else:
            self_[p[1]] = int(p[2])
            cum[p[1]] = int(p[3])
    return total, {k: v for k, v in self_.items() if v}, cum


def table_maps(js):
    return ({r["function"]: r["self"] for r in js["rows"] if r["self"]},
            {r["function"]: r["total"] for r in js["rows"]})


class EdgeTest(unittest.TestCase):
    def start_edge(self, **kw):
        return Edge(self, **kw).start()

    def assert_table_matches(self, edge, ref, **params):
        total, self_, cum = ref
        st, js = edge.query("table", **params)
        self.assertEqual(st, 200, js)
        self.assertEqual(js["total"], total)
        got_self, got_cum = table_maps(js)
        self.assertEqual(got_self, self_)
        self.assertEqual(got_cum, cum)
        # top functions by self, as `go tool pprof -top` / the awk count rank them
        top_ref = sorted(self_.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
        top_got = [(r["function"], r["self"]) for r in js["rows"] if r["self"]][:10]
        self.assertEqual([v for _, v in top_got], [v for _, v in top_ref])
        return js

    def test_pprof_cpu_matches_go_tool_pprof(self):
        e = self.start_edge()
        with open(GO_CPU, "rb") as f:
            st, body = e.upload(f.read(), format="pprof", service="gowork")
        self.assertEqual(st, 200, body)
        self.assertEqual(json.loads(body)["format"], "pprof")
        js = self.assert_table_matches(e, pprof_reference(GO_CPU, "cpu"), service="gowork", type="cpu")
        self.assertEqual(js["unit"], "nanoseconds")
        # type defaults to cpu when the selection has it
        st, js2 = e.query("table", service="gowork")
        self.assertEqual(js2["type"], "cpu")
        self.assertEqual(js2["total"], js["total"])
        # the flame graph's root total is the same figure
        st, fl = e.query("flamegraph", service="gowork")
        self.assertEqual(st, 200)
        self.assertEqual(fl["root"]["total"], js["total"])

    def test_pprof_heap_matches_go_tool_pprof(self):
        e = self.start_edge()
        with open(GO_HEAP, "rb") as f:
            st, body = e.upload(f.read(), format="pprof", service="goheap")
        self.assertEqual(st, 200, body)
        for t in ("inuse_space", "alloc_objects"):
            self.assert_table_matches(e, pprof_reference(GO_HEAP, t), service="goheap", type=t)
        st, svcs = e.query("services")
        self.assertEqual(st, 200)
        types = {t["type"] for s in svcs["services"] if s["name"] == "goheap" for t in s["types"]}
        self.assertEqual(types, {"alloc_objects", "alloc_space", "inuse_objects", "inuse_space"})

    def test_folded_matches_awk(self):
        e = self.start_edge()
        for i, path in enumerate((FOLDED_C, FOLDED_JAVA)):
            with open(path, "rb") as f:
                st, body = e.upload(f.read(), format="folded", service=f"folded{i}", **{"label.env": "ci"})
            self.assertEqual(st, 200, body)
            self.assert_table_matches(e, folded_reference(path), service=f"folded{i}")
        # label filter: matching label keeps everything, another value selects nothing
        st, js = e.query("table", service="folded0", **{"label.env": "ci"})
        self.assertEqual(js["total"], folded_reference(FOLDED_C)[0])
        st, js = e.query("table", service="folded0", **{"label.env": "prod"})
        self.assertEqual((st, js["total"]), (200, 0))
        # empty selection is 200 with a zero total
        st, js = e.query("table", service="no-such-service")
        self.assertEqual((st, js["total"], js["rows"]), (200, 0, []))
        # a time window before the upload selects nothing
        st, js = e.query("table", service="folded0", **{"from": "1000000000", "until": "1000000600"})
        self.assertEqual((st, js["total"]), (200, 0))

    def test_pyroscope_ingest_folded_and_multipart(self):
        e = self.start_edge()
        ref = folded_reference(FOLDED_C)
        now = int(time.time())
        with open(FOLDED_C, "rb") as f:
            data = f.read()
        st, body = e.upload(data, path="/ingest", name="app.cpu{env=prod,region=eu-1}", format="folded",
                            sampleRate="100", spyName="perf", units="samples", aggregationType="sum",
                            **{"from": str(now - 10), "until": str(now)})
        self.assertEqual(st, 200, body)
        self.assert_table_matches(e, ref, service="app", type="cpu", **{"label.env": "prod"})
        st, js = e.query("table", service="app", **{"label.region": "eu-1", "label.env": "prod"})
        self.assertEqual(js["total"], ref[0])
        st, js = e.query("table", service="app", **{"label.env": "staging"})
        self.assertEqual(js["total"], 0)
        # the upload lands at `from`
        st, js = e.query("table", service="app", **{"from": str(now - 120), "until": str(now + 60)})
        self.assertEqual(js["total"], ref[0])

        # multipart/form-data as the Go SDK sends it
        with open(GO_CPU, "rb") as f:
            prof = f.read()
        boundary = "----wtboundary7MA4YWxkTrZu0gW"
        stc = json.dumps({"cpu": {"units": "nanoseconds", "aggregation": "sum"}}).encode()
        parts = []
        for name, fname, payload in (("profile", "profile.pprof", prof), ("sample_type_config", "stc.json", stc)):
            parts.append((f"--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{fname}\"\r\n"
                          "Content-Type: application/octet-stream\r\n\r\n").encode() + payload + b"\r\n")
        mp = b"".join(parts) + f"--{boundary}--\r\n".encode()
        st, body = e.upload(mp, path="/ingest", name="gomp.cpu{env=prod}", format="pprof", spyName="gospy",
                            headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
        self.assertEqual(st, 200, body)
        self.assert_table_matches(e, pprof_reference(GO_CPU, "cpu"), service="gomp", type="cpu")
        # the Pyroscope Java agent's form: the recording in a part named "jfr";
        # stored exactly as a direct format=jfr upload of the same bytes
        jfr = os.path.join(CORPUS, "jfr/jfr-parser__example.jfr")
        with open(jfr, "rb") as f:
            rec = f.read()
        mpj = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"jfr\"; filename=\"jfr\"\r\n"
               "Content-Type: application/octet-stream\r\n\r\n").encode() + rec + f"\r\n--{boundary}--\r\n".encode()
        st, body = e.upload(mpj, path="/ingest", name="javamp.cpu{env=prod}", format="jfr", spyName="javaspy",
                            headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
        self.assertEqual(st, 200, body)
        st, body = e.upload(rec, service="javadirect", format="jfr")
        self.assertEqual(st, 200, body)
        far = {"from": "0", "until": str(now + 3600), "type": "cpu"}
        st, a = e.query("table", service="javamp", **far)
        st2, b = e.query("table", service="javadirect", **far)
        self.assertGreater(b["total"], 0)
        self.assertEqual(a["total"], b["total"])
        # multipart without a profile part is a 400, not a crash
        bad = f"--{boundary}\r\nContent-Disposition: form-data; name=\"other\"\r\n\r\nx\r\n--{boundary}--\r\n".encode()
        st, body = e.upload(bad, path="/ingest", name="gomp.cpu", format="pprof",
                            headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
        self.assertEqual(st, 400, body)
        self.assertIn("profile", json.loads(body)["detail"])

    def test_rejects_store_nothing_and_daemon_keeps_serving(self):
        e = self.start_edge(max_body_mb=1)
        with open(FOLDED_C, "rb") as f:
            good = f.read()
        before = e.metrics()["wt_edge_last_seq"]
        cases = [
            ("bad token", dict(data=good, token="nope", format="folded", service="s"), 401),
            ("no token", dict(data=good, token=None, format="folded", service="s"), 401),
            ("read token for upload", dict(data=good, token="test-read-token", format="folded", service="s"), 401),
            ("unknown format", dict(data=good, format="bogus", service="s"), 415),
            ("malformed pprof", dict(data=b"\x0a\xff\xff\xff\xff\x0fgarbage" * 10, format="pprof", service="s"), 400),
            ("bad folded count", dict(data=b"a;b;c notanumber\n", format="folded", service="s"), 400),
            ("no service", dict(data=good, format="folded"), 400),
            ("bad from", dict(data=good, format="folded", service="s", **{"from": "yesterday"}), 400),
            ("oversize", dict(data=b"a;b 1\n" * 200000, format="folded", service="s"), 413),
            ("empty body", dict(data=b"", format="folded", service="s"), 400),
            ("gzip bomb-ish garbage", dict(data=b"\x1f\x8b\x08\x00" + os.urandom(200), format="pprof", service="s"), 400),
        ]
        for name, kw, want in cases:
            with self.subTest(name):
                data = kw.pop("data")
                st, body = e.upload(data, **kw)
                self.assertEqual(st, want, (name, body))
                js = json.loads(body)
                self.assertIn("error", js)
                self.assertIn("detail", js)
        st, body = e.upload(b"x", path="/ingest", name="app.cpu{env=", format="folded")
        self.assertEqual(st, 400, body)
        st, body = e.upload(b"\x00\x01\x02junk", path="/ingest", name="j.cpu", format="jfr")
        self.assertIn(st, (400, 415), body)
        # read endpoint auth
        st, js = e.query("table", token="nope", service="s")
        self.assertEqual(st, 401)
        st, js = e.query("table", token="test-upload-token", service="s")
        self.assertEqual(st, 401)
        # nothing was stored
        m = e.metrics()
        self.assertEqual(m["wt_edge_last_seq"], before)
        self.assertGreaterEqual(m['wt_edge_rejects_total{reason="too_large"}'], 1)
        self.assertGreaterEqual(m['wt_edge_rejects_total{reason="unauthorized"}'], 3)
        st, svcs = e.query("services")
        self.assertEqual(svcs["services"], [])
        # still serving: a good upload works
        st, body = e.upload(good, format="folded", service="after")
        self.assertEqual(st, 200, body)
        self.assertEqual(e.query("table", service="after")[1]["total"], folded_reference(FOLDED_C)[0])

    def test_route_metrics_count_replies_when_sent(self):
        # wt_edge_route_responses_total / _seconds_total: counted per route of
        # edge_routes when the reply goes out, also for replies a worker
        # finishes later (uploads, queries)
        e = self.start_edge()
        with open(FOLDED_C, "rb") as f:
            good = f.read()
        up = 'route="/v1/profiles"'
        table = 'route="/v1/projects/{project}/profiles/table"'

        def counts():
            m = e.metrics()
            return {k: v for k, v in m.items() if k.startswith("wt_edge_route_")}

        def n(c, method, route, cls):
            return c.get(f'wt_edge_route_responses_total{{method="{method}",{route},class="{cls}"}}', 0)

        before = counts()
        for svc in ("a", "b"):
            st, body = e.upload(good, format="folded", service=svc)
            self.assertEqual(st, 200, body)
        st, body = e.upload(b"a;b;c notanumber\n", format="folded", service="s")  # 400 from a worker
        self.assertEqual(st, 400, body)
        st, js = e.query("table", service="a")
        self.assertEqual(st, 200, js)
        st, js = e.query("table", token="nope", service="a")  # 401 before any worker
        self.assertEqual(st, 401, js)
        st, _ = e.request("GET", "/healthz")
        self.assertEqual(st, 200)
        after = counts()
        self.assertEqual(n(after, "POST", up, "2xx") - n(before, "POST", up, "2xx"), 2, after)
        self.assertEqual(n(after, "POST", up, "4xx") - n(before, "POST", up, "4xx"), 1, after)
        self.assertEqual(n(after, "GET", table, "2xx") - n(before, "GET", table, "2xx"), 1, after)
        self.assertEqual(n(after, "GET", table, "4xx") - n(before, "GET", table, "4xx"), 1, after)
        self.assertEqual(n(after, "GET", 'route="/healthz"', "2xx") - n(before, "GET", 'route="/healthz"', "2xx"), 1)
        self.assertEqual(n(after, "POST", up, "5xx"), 0)
        secs = 'wt_edge_route_seconds_total{method="POST",route="/v1/profiles"}'
        self.assertGreater(after.get(secs, 0), before.get(secs, 0), after)
        # a path no route matches is not a route's
        st, _ = e.request("GET", "/nowhere")
        self.assertEqual(st, 404)
        self.assertNotIn("/nowhere", json.dumps(counts()))

    def test_kill9_during_concurrent_uploads_loses_no_acked_upload(self):
        e = self.start_edge(workers=4)
        n = 200

        def one(i):
            try:
                st, _ = e.upload(f"main;handler;work_{i} 7\nmain;idle 1\n".encode(), format="folded", service="crash")
                return i, st
            except OSError:
                return i, None

        acked = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
            futs = [pool.submit(one, i) for i in range(n)]
            # kill once a good part has been acknowledged, while the rest is in flight
            deadline = time.time() + 60
            while time.time() < deadline and sum(1 for f in futs if f.done()) < n // 3:
                time.sleep(0.005)
            e.kill9()
            for f in futs:
                i, st = f.result()
                if st is not None and 200 <= st < 300:
                    acked.append(i)
        self.assertGreater(len(acked), 0)
        print(f"kill -9 after {len(acked)} of {n} uploads acknowledged", file=sys.stderr)
        e.start()
        st, js = e.query("table", service="crash")
        self.assertEqual(st, 200)
        got = {r["function"]: r["self"] for r in js["rows"]}
        missing = [i for i in acked if got.get(f"work_{i}") != 7]
        self.assertEqual(missing, [], f"{len(missing)} of {len(acked)} acknowledged uploads lost")
        stored = sum(1 for k in got if k.startswith("work_"))
        self.assertGreaterEqual(stored, len(acked))
        self.assertEqual(got.get("idle"), stored)
        # and the restarted edge keeps accepting
        st, _ = e.upload(b"main;after_restart 3\n", format="folded", service="crash")
        self.assertEqual(st, 200)

    def test_sigterm_clean_shutdown_keeps_data(self):
        e = self.start_edge()
        with open(FOLDED_C, "rb") as f:
            st, _ = e.upload(f.read(), format="folded", service="term")
        self.assertEqual(st, 200)
        self.assertEqual(e.stop(), 0)
        self.assertIn("clean shutdown", e.read_log())
        e.start()
        self.assertEqual(e.query("table", service="term")[1]["total"], folded_reference(FOLDED_C)[0])

    def test_ipv6_listen_addresses(self):
        """edge.listen and both OTLP listeners take "[::1]:port"; the edge
        then serves on IPv6 loopback only."""
        e = self.start_edge(host="::1")
        st, body = e.request("GET", "/healthz")
        self.assertEqual(st, 200, body)
        st, body = e.upload(b"main;work 7\n", service="v6", format="folded")
        self.assertEqual(st, 200, body)
        st, js = e.query("table", service="v6")
        self.assertEqual(st, 200, js)
        self.assertEqual(js["total"], 7)
        for port in (e.otlp_http_port, e.otlp_grpc_port):
            socket.create_connection(("::1", port), timeout=2).close()
        with self.assertRaises(OSError):
            socket.create_connection(("127.0.0.1", e.port), timeout=2).close()

    def test_check_config(self):
        e = Edge(self)
        from harness.edge import BIN
        r = subprocess.run([os.path.join(BIN, "wt-edge"), "--config", e.cfg, "--check-config"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        bad = os.path.join(e.dir, "bad.cfg")
        with open(bad, "w") as f:
            f.write('edge = { listen = "nohostport"; };\n')
        r = subprocess.run([os.path.join(BIN, "wt-edge"), "--config", bad, "--check-config"],
                           capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("listen", r.stderr)


if __name__ == "__main__":
    if not shutil.which("go"):
        print("go not found", file=sys.stderr)
    unittest.main()
