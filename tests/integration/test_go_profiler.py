#!/usr/bin/env python3
"""test_go_profiler.py — the first-party Go profiler (clients/go, docs/profilers.md "## Go").

1. `go test ./...` in clients/go: the package's unit tests (uploader retries,
   backoff, bounded queue, Stop flush against net/http/httptest servers;
   span labels and per-period deltas checked with `go tool pprof`).
2. End to end with real processes on loopback: a private ClickHouse, wt-hub
   with its mTLS replication listener, and wt-edge replicating to it (PKI
   from `wtctl pki`, as test_replication.py). clients/go/example runs
   against the edge with a 2 s period for ~5 s. Expectations come from the
   example's design (which function does what), not from our code: under
   the span's id the hub's CPU table has main.hotSpanWork on top and none of
   the unlabelled work; heap, goroutine, mutex and block profiles arrive
   under their canonical sample types with the functions that cause them.

Go is built offline (no module proxy): GOPROXY=off, GOCACHE/HOME under the
build dir so the test never touches the user's Go state.
"""
import http.client
import http.server
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import threading
import urllib.parse
import unittest
import json

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness.clickhouse import ClickHouse  # noqa: E402
from harness.edge import Edge, UPLOAD_TOKEN, READ_TOKEN  # noqa: E402
from harness.hub import Hub, BIN, ROOT  # noqa: E402

CLIENT = os.path.join(ROOT, "clients", "go")
WTCTL = os.path.join(BIN, "wtctl")
SPAN = "abc123def4567890"
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
SERVICE = "go-e2e"
ASYNC_PREEMPT = "runtime.asyncPreempt"


def go_env():
    build = os.environ.get("BUILD", "build")
    if not os.path.isabs(build):
        build = os.path.join(ROOT, build)
    home = os.path.join(build, "gohome-client")
    for d in ("cache", "tmp"):
        os.makedirs(os.path.join(home, d), exist_ok=True)
    env = dict(os.environ)
    env.update(HOME=home, GOCACHE=os.path.join(home, "cache"), GOTMPDIR=os.path.join(home, "tmp"),
               GOPATH=os.path.join(home, "gopath"), GOFLAGS="", GO111MODULE="on", GOPROXY="off",
               GOTOOLCHAIN="local", CGO_ENABLED="0")
    return env


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)


class RecordingProxy:
    """Forwards POSTs to the edge and keeps every (query, body) the edge
    acknowledged, so the test can read the very profiles that were stored
    with `go tool pprof` (the independent reference)."""

    def __init__(self, testcase, target_port):
        self.uploads = []
        lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                c = http.client.HTTPConnection("127.0.0.1", target_port, timeout=60)
                try:
                    c.request("POST", self.path, body=body,
                              headers={"Authorization": self.headers.get("Authorization", "")})
                    r = c.getresponse()
                    data, status = r.read(), r.status
                finally:
                    c.close()
                if status == 200:
                    with lock:
                        outer.uploads.append((urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query), body))
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.srv.server_address[1]}"
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        testcase.addCleanup(self.srv.server_close)
        testcase.addCleanup(self.srv.shutdown)

    def bodies(self, type_):
        return [b for q, b in self.uploads if q.get("type") == [type_]]


SAMPLE_RE = re.compile(r"^\s+(\d+(?:\s+\d+)*):((?:\s+\d+)*)\s*$")
LABEL_RE = re.compile(r"^\s+(\S+:\[.*\])\s*$")  # "k:[v] k2:[v2]" (string labels)
LABEL_KV = re.compile(r"(\S+?):\[([^\]]*)\]")
LOC_RE = re.compile(r"^\s+(\d+): 0x[0-9a-f]+ M=\d+ (\S+) ")


def pprof_raw(env, path):
    """`go tool pprof -raw` -> (value names, [(values, leaf function, {label: value})])."""
    r = run(["go", "tool", "pprof", "-raw", path], env=env, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(r.stderr)
    names, samples, locs, section = None, [], {}, ""
    for line in r.stdout.splitlines():
        if line in ("Samples:", "Locations", "Mappings"):
            section = line
            continue
        if section == "Samples:":
            if names is None:
                names = [x.split("/")[0] for x in line.split()]
            elif (m := SAMPLE_RE.match(line)):
                samples.append(([int(v) for v in m.group(1).split()], m.group(2).split(), {}))
            elif (m := LABEL_RE.match(line)) and samples:
                samples[-1][2].update(LABEL_KV.findall(m.group(1)))
        elif section == "Locations" and (m := LOC_RE.match(line)):
            locs[m.group(1)] = m.group(2)  # first function listed = innermost
    return names, [(v, locs.get(ids[0]) if ids else None, lab) for v, ids, lab in samples]


class GoProfilerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not shutil.which("go"):
            raise RuntimeError("go not found: appliance/install-deps installs golang-go")
        cls.env = go_env()

    def test_1_go_unit_tests(self):
        r = run(["go", "vet", "./..."], cwd=CLIENT, env=self.env, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = run(["go", "test", "-count=1", "./..."], cwd=CLIENT, env=self.env, timeout=300)
        print(r.stdout, r.stderr, file=sys.stderr)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("ok  \twatchtower/clients/go/profiler", r.stdout)

    # ---- end to end -------------------------------------------------------------
    def hub_table(self, type_, **params):
        q = {"service": SERVICE, "type": type_, "from": "0", "until": str(int(time.time()) + 3600)}
        q.update(params)
        st, js = self.hub.query("demo", "table", self.read, **q)
        self.assertEqual(st, 200, js)
        return js

    @staticmethod
    def functions(js):
        return {r["function"]: r for r in js["rows"]}

    def test_2_end_to_end(self):
        tmp = tempfile.mkdtemp(prefix="wt-goclient-")
        self.addCleanup(shutil.rmtree, tmp, True)
        # build the example while the daemons start
        build = subprocess.Popen(["go", "build", "-o", os.path.join(tmp, "example"), "./example"], cwd=CLIENT,
                                 env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.addCleanup(lambda: build.poll() is None and build.kill())

        t_start = time.time()

        def phase(name):
            print(f"  [{time.time() - t_start:5.1f}s] {name}", file=sys.stderr)
        ch = ClickHouse(self).start()
        phase("clickhouse up")
        pki = os.path.join(tmp, "pki")
        r = run([WTCTL, "pki", "init", "--dir", pki, "--hub-host", "127.0.0.1"])
        self.assertEqual(r.returncode, 0, r.stderr)
        r = run([WTCTL, "pki", "issue-edge", "--ca", pki, "--edge-id", "edge1"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.hub = Hub(self, ch, database="goclient", pki=pki).start()
        st, _ = self.hub.create_project("demo")
        self.assertIn(st, (200, 201))
        self.read = self.hub.create_token("demo", "read")
        self.hub.allow_edge("edge1")
        edge = Edge(self, edge_id="edge1",
                    hub={"url": self.hub.repl_url, "ca": os.path.join(pki, "ca.crt"),
                         "cert": os.path.join(pki, "edge1.crt"), "key": os.path.join(pki, "edge1.key")},
                    replication="backoff_initial_ms = 50; backoff_max_ms = 500; interval_ms = 100;").start()

        phase("hub and edge up")
        out, _ = build.communicate(timeout=240)
        phase("example built")
        self.assertEqual(build.returncode, 0, out)

        t0 = time.time()
        proxy = RecordingProxy(self, edge.port)
        r = run([os.path.join(tmp, "example"), "-endpoint", proxy.url, "-token", UPLOAD_TOKEN,
                 "-service", SERVICE, "-period", "2s", "-duration", "5s", "-span", SPAN, "-trace", TRACE],
                timeout=60)
        elapsed = time.time() - t0
        self.assertEqual(r.returncode, 0, f"example failed: {r.stdout} {r.stderr}\nedge log: {edge.read_log()[-2000:]}")
        stats = json.loads(r.stdout.strip().splitlines()[-1])
        print(f"example ran {elapsed:.1f}s, stats {stats}", file=sys.stderr)
        # 3 windows (2 s, 2 s, ~1 s ended by Stop) x 5 types; mutex/block/heap
        # windows without news are skipped, so at least the 3 CPU windows.
        self.assertGreaterEqual(stats["Uploaded"], 3 * 2, stats)
        self.assertEqual(stats["Failed"] + stats["Rejected"] + stats["Dropped"], 0, stats)
        self.assertLess(elapsed, 20)

        # the edge's own view: every Go type under the service, mutex and
        # block told apart by the type= hint
        want_types = {"cpu", "alloc_objects", "alloc_space", "inuse_objects", "inuse_space", "goroutine",
                      "mutex_contentions", "mutex_delay", "block_contentions", "block_delay"}
        st, js = edge.query("services", service=SERVICE)
        self.assertEqual(st, 200, js)
        svc = [s for s in js["services"] if s["name"] == SERVICE]
        self.assertEqual(len(svc), 1, js)
        types = {t["type"]: t["unit"] for t in svc[0]["types"]}
        self.assertTrue(want_types <= set(types), f"missing {want_types - set(types)} in {types}")
        self.assertNotIn("contentions", types)
        self.assertNotIn("delay", types)
        self.assertEqual(types["mutex_delay"], "nanoseconds")
        self.assertEqual(types["block_delay"], "nanoseconds")
        self.assertEqual(types["alloc_space"], "bytes")

        phase("example done, edge checked")
        # wait until the edge has replicated everything
        deadline = time.time() + 60
        while time.time() < deadline:
            m = edge.metrics()
            if m.get("wt_edge_unreplicated_uploads", 1) == 0:
                break
            time.sleep(0.3)
        else:
            self.fail(f"edge did not replicate: {edge.metrics()} hub log: {self.hub.read_log()[-1500:]}")

        phase("replicated")
        # span: the hot function on top, nothing of the unlabelled work
        span = self.hub_table("cpu", span_id=SPAN)
        self.assertGreater(span["total"], 0, span)
        rows = [x for x in span["rows"] if x["function"] != ASYNC_PREEMPT]
        self.assertTrue(rows, span)
        self.assertEqual(rows[0]["function"], "main.hotSpanWork", span["rows"][:5])
        fn = self.functions(span)
        self.assertGreaterEqual(fn["main.hotSpanWork"]["self"] + fn.get(ASYNC_PREEMPT, {"self": 0})["self"],
                                0.8 * span["total"], span["rows"][:5])
        for other in ("main.backgroundHash", "main.allocWorker", "main.mutexWorker", "crypto/sha256.block"):
            self.assertNotIn(other, fn, f"{other} is not under span {SPAN}")
        # the trace id selects the same samples; a wrong span id selects none
        trace = self.hub_table("cpu", trace_id=TRACE)
        self.assertEqual(trace["total"], span["total"])
        self.assertEqual(self.hub_table("cpu", span_id="0000000000000000")["total"], 0)
        # the service as a whole also has the unlabelled work
        whole = self.functions(self.hub_table("cpu"))
        self.assertIn("main.backgroundHash", whole)
        self.assertGreater(sum(r["self"] for r in whole.values()), span["total"])
        # independent reference: the CPU profiles the edge acknowledged, read
        # by `go tool pprof -raw` — the span's total and the hot function's
        # self value equal the hub's, to the nanosecond
        cpu_bodies = proxy.bodies("cpu")
        self.assertGreaterEqual(len(cpu_bodies), 2)
        ref_total = ref_self = 0
        for i, b in enumerate(cpu_bodies):
            path = os.path.join(tmp, f"cpu{i}.pb.gz")
            with open(path, "wb") as f:
                f.write(b)
            names, samples = pprof_raw(self.env, path)
            ci = names.index("cpu")
            for v, leaf, lab in samples:
                if lab.get("span_id") == SPAN:
                    self.assertEqual(lab.get("trace_id"), TRACE)
                    ref_total += v[ci]
                    if leaf == "main.hotSpanWork":
                        ref_self += v[ci]
        self.assertEqual(span["total"], ref_total)
        self.assertEqual(fn["main.hotSpanWork"]["self"], ref_self)
        # the mutex and block deltas the edge acknowledged add up on the hub
        for kind in ("mutex", "block"):
            ref = {"contentions": 0, "delay": 0}
            for i, b in enumerate(proxy.bodies(kind)):
                path = os.path.join(tmp, f"{kind}{i}.pb.gz")
                with open(path, "wb") as f:
                    f.write(b)
                names, samples = pprof_raw(self.env, path)
                for v, _, _ in samples:
                    for n in ref:
                        ref[n] += v[names.index(n)]
            for n, want in ref.items():
                self.assertGreater(want, 0, f"{kind} {n}")
                self.assertEqual(self.hub_table(f"{kind}_{n}")["total"], want, f"{kind}_{n}")
        # the edge's local view of the span agrees with the hub
        st, local = edge.query("table", service=SERVICE, type="cpu", **{"label.span_id": SPAN})
        self.assertEqual(st, 200, local)
        self.assertEqual(local["total"], span["total"])

        # heap, goroutine, mutex, block: totals > 0 and the functions that cause them
        expect = {
            "alloc_space": "main.allocWorker", "alloc_objects": "main.allocWorker",
            "inuse_space": "main.allocWorker", "inuse_objects": "main.allocWorker",
            "goroutine": "main.main",
            "mutex_contentions": "main.mutexWorker", "mutex_delay": "main.mutexWorker",
            "block_contentions": "main.channelConsumer", "block_delay": "main.channelConsumer",
        }
        for t, f in expect.items():
            js = self.hub_table(t)
            self.assertGreater(js["total"], 0, f"{t}: {js}")
            self.assertIn(f, self.functions(js), f"{t}: {js['rows'][:8]}")
        # the mutex profile is not the block profile
        self.assertNotIn("main.channelConsumer", self.functions(self.hub_table("mutex_delay")))
        # the service labels arrive
        self.assertGreater(self.hub_table("cpu", **{"label.env": "example"})["total"], 0)
        phase("hub checked")


if __name__ == "__main__":
    unittest.main()
