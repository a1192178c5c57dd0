#!/usr/bin/env python3
"""test_upload_contract.py — one upload, two routes, the same rows.

An upload's parameters (service, label.K=V, from/until, format, type) mean
the same thing whether it is sent to an edge (and replicated to the hub) or
straight to the hub's POST /v1/profiles (docs/api.md "### Ingest"): both
routes run common/upload.c. For every ingest format, a real file of
tests/corpus goes both ways and the hub's profile_samples_v1 rows (time,
sample type, unit, stack, value, label columns and labels) are compared
row for row, read straight from ClickHouse. Label keys include
`k8s/pod`-style keys, which must also be filterable on the hub's query
API. An OTLP request naming three services, sent to the edge's OTLP
receiver, is stored once per service, each original holding only that
service's resource profiles (docs/formats.md "## OTLP profiles"), in
protobuf and in OTLP/JSON.
"""
import copy
import http.client
import json
import os
import shutil
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from harness.clickhouse import ClickHouse  # noqa: E402
from harness.edge import UPLOAD_TOKEN, Edge  # noqa: E402
from harness.hub import Hub, CORPUS  # noqa: E402
from pbwire import f_bytes, fields  # noqa: E402
from test_replication import pki_edge, pki_init  # noqa: E402

FROM = (int(time.time()) // 3600 - 2) * 3600  # inside retention, a whole hour
UNTIL = FROM + 60
LABELS = {"label.k8s/pod": "web-7f9c", "label.env": "prod", "label.app.kubernetes.io/name": "shop"}

# (name, file, params): every format /v1/profiles accepts. Formats without a
# clock of their own get from= (else each route would stamp its own
# receive time); JFR and pprof carry their own clock and go both ways.
CASES = [
    ("pprof", "gen/go/go-cpu.pb.gz", {"format": "pprof"}),
    ("pprof-block", "gen/go/go-block.pb.gz", {"format": "pprof", "type": "block"}),
    ("folded", "folded/flamegraph__perf-vertx-java-collapsed-all.txt", {"format": "folded", "from": FROM}),
    ("folded-type", "gen/python/austin-1.0.1-python3.7-memory.txt", {"format": "folded", "type": "alloc_space",
                                                                     "from": FROM, "until": UNTIL}),
    ("perf", "perf-script/flamegraph__perf-cycles-instructions-01.txt", {"format": "perf", "from": FROM}),
    ("perf-auto", "gen/perf-gzip/perf-script-fp.txt", {"from": FROM, "until": UNTIL}),
    ("jfr", "gen/java/java17-app-profile.jfr", {"format": "jfr"}),
    ("jfr-from", "gen/java/java17-app-profile.jfr", {"format": "jfr", "from": FROM}),
    ("jfr-async-from", "jfr/jfr-parser__async-profiler.jfr", {"format": "jfr", "from": FROM, "until": UNTIL}),
    ("otlp", "otlp/pyroscope__otel-ebpf-profiler_otlp-1.8.0.pb", {"format": "otlp", "from": FROM}),
    ("cpuprofile", "gen/node/node20-cpu.cpuprofile", {"format": "cpuprofile", "from": FROM}),
    ("speedscope", "speedscope/" + sorted(os.listdir(os.path.join(CORPUS, "speedscope")))[0],
     {"format": "speedscope", "from": FROM}),
]

ROWS_SQL = ("SELECT time_ns, sample_type, unit, stack_id, value, host, thread, container, span_id, trace_id,"
            " labels.key, labels.value FROM profile_samples_v1 WHERE project = 'demo' AND service = '{svc}'"
            " FORMAT TabSeparated")


def otlp_three_services(path, services):
    """The request at path with its resource profiles repeated once per
    service, each with a resource attribute service.name = that service
    (protobuf merges a repeated `resource` field: opentelemetry-proto
    ResourceProfiles.resource = 1, Resource.attributes = 1, KeyValue
    key = 1 / value = 2, AnyValue.string_value = 1)."""
    with open(path, "rb") as f:
        req = f.read()
    top = fields(req)
    rps = [v for n, _, v in top if n == 1]
    out = b"".join(f_bytes(n, v) for n, wt, v in top if n != 1 and wt == 2)
    for s in services:
        attr = f_bytes(1, f_bytes(1, "service.name") + f_bytes(2, f_bytes(1, s)))
        out += b"".join(f_bytes(1, rp + f_bytes(1, attr)) for rp in rps)
    return out


def otlp_json_three_services(path, services):
    """The OTLP/JSON request at path with its resourceProfiles repeated
    once per service, each with the resource attribute service.name = that
    service (the JSON counterpart of otlp_three_services)."""
    with open(path, "rb") as f:
        doc = json.load(f)
    rps = doc["resourceProfiles"]
    doc["resourceProfiles"] = []
    for s in services:
        for rp in rps:
            rp = copy.deepcopy(rp)
            rp.setdefault("resource", {}).setdefault("attributes", []).append(
                {"key": "service.name", "value": {"stringValue": s}})
            doc["resourceProfiles"].append(rp)
    return json.dumps(doc, separators=(",", ":")).encode()


class UploadContractTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ch = ClickHouse(None)
        cls.ch.start()

    @classmethod
    def tearDownClass(cls):
        cls.ch.cleanup()

    def setUp(self):
        self.pki = tempfile.mkdtemp(prefix="wt-pki-")
        self.addCleanup(shutil.rmtree, self.pki, True)
        pki_init(self.pki)
        self.db = f"contract{int(time.time() * 1000) % 10**9}"
        self.hub = Hub(self, self.ch, database=self.db, pki=self.pki)
        self.hub.start()
        st, _ = self.hub.create_project("demo")
        self.assertIn(st, (200, 201))
        self.up = self.hub.create_token("demo", "upload")
        self.read = self.hub.create_token("demo", "read")
        c = pki_edge(self.pki, "edge1")
        self.hub.allow_edge("edge1")
        self.edge = Edge(self, edge_id="edge1",
                         hub={"url": self.hub.repl_url, "ca": os.path.join(self.pki, "ca.crt"),
                              "cert": c["crt"], "key": c["key"]},
                         replication="backoff_initial_ms = 50; backoff_max_ms = 500; interval_ms = 100;").start()

    def rows(self, svc):
        out = self.ch.query(ROWS_SQL.format(svc=svc), database=self.db)
        rows = []
        for line in out.splitlines():
            f = line.split("\t")
            keys, vals = f[10].strip("[]"), f[11].strip("[]")
            rows.append(tuple(f[:10]) + (tuple(sorted(zip(keys.split(","), vals.split(",")))),))
        return sorted(rows)

    def wait_rows(self, svc, n, timeout=90):
        deadline = time.time() + timeout
        got = []
        while time.time() < deadline:
            got = self.rows(svc)
            if len(got) >= n:
                time.sleep(1.0)  # a late duplicate would show here
                return self.rows(svc)
            time.sleep(0.3)
        return got

    def test_same_rows_both_routes(self):
        failures = []
        for name, rel, params in CASES:
            with open(os.path.join(CORPUS, rel), "rb") as f:
                data = f.read()
            q = dict(params)
            q.update(LABELS)
            st, body = self.hub.upload(data, self.up, "h-" + name, **q)
            if st != 200:
                failures.append(f"{name}: hub direct upload answered {st}: {body}")
                continue
            st, body = self.edge.upload(data, service="e-" + name, **q)
            if st != 200:
                failures.append(f"{name}: edge upload answered {st}: {body}")
                continue
            direct = self.rows("h-" + name)
            self.assertTrue(direct, name)
            via_edge = self.wait_rows("e-" + name, len(direct))
            if direct != via_edge:
                extra = sorted(set(via_edge) - set(direct))[:2]
                missing = sorted(set(direct) - set(via_edge))[:2]
                failures.append(f"{name}: {len(direct)} direct rows, {len(via_edge)} via the edge; only via the "
                                f"edge {extra}; only direct {missing}")
        self.assertEqual(failures, [], "\n".join(failures))

    def test_slash_label_key_filters_on_hub(self):
        with open(os.path.join(CORPUS, "gen/go/go-cpu.pb.gz"), "rb") as f:
            data = f.read()
        st, body = self.edge.upload(data, service="sl", format="pprof", **LABELS)
        self.assertEqual(st, 200, body)
        self.assertTrue(self.wait_rows("sl", 1))
        span = {"service": "sl", "from": "0", "until": str(int(time.time()) + 3600), "type": "cpu"}
        deadline = time.time() + 60  # rows are in; the upload's apply may still be finishing
        total = 0
        while time.time() < deadline and not total:
            st, js = self.hub.query("demo", "table", self.read, **span)
            self.assertEqual(st, 200, js)
            total = js["total"]
            time.sleep(0.3)
        self.assertGreater(total, 0)
        st, js = self.hub.query("demo", "table", self.read, **span, **{"label.k8s/pod": "web-7f9c"})
        self.assertEqual(st, 200, js)
        self.assertEqual(js["total"], total)
        st, js = self.hub.query("demo", "table", self.read, **span, **{"label.k8s/pod": "other"})
        self.assertEqual(st, 200, js)
        self.assertEqual(js["total"], 0)

    def test_otlp_stored_once_per_service(self):
        services = ["svc-a", "svc-b", "svc-c"]
        req = otlp_three_services(os.path.join(CORPUS, "otlp/pyroscope__otel-ebpf-profiler_otlp-1.8.0.pb"),
                                  services)
        self.stored_once_per_service(req, "application/x-protobuf", services)

    def test_otlp_json_stored_once_per_service(self):
        # OTLP/JSON is split as protobuf is: each stored original is a JSON
        # document with only that service's resourceProfiles
        services = ["js-a", "js-b", "js-c"]
        req = otlp_json_three_services(os.path.join(CORPUS, "otlp/pyroscope__otel-ebpf-profiler_otlp-1.8.0.json"),
                                       services)
        self.stored_once_per_service(req, "application/json", services)

    def stored_once_per_service(self, req, ctype, services):
        c = http.client.HTTPConnection("127.0.0.1", self.edge.otlp_http_port, timeout=60)
        try:
            c.request("POST", "/v1development/profiles", body=req,
                      headers={"Content-Type": ctype, "Authorization": "Bearer " + UPLOAD_TOKEN})
            r = c.getresponse()
            body = r.read()
        finally:
            c.close()
        self.assertEqual(r.status, 200, body)
        first = None
        for s in services:
            rows = self.wait_rows(s, 1)
            self.assertTrue(rows, s)
            rows = sorted(r[:10] + (tuple(kv for kv in r[10] if kv[0] != "service.name"),) for r in rows)
            if first is None:
                first = rows
            self.assertEqual(rows, first, s)
        deadline = time.time() + 30
        sizes = []
        while time.time() < deadline:
            out = self.ch.query("SELECT service, size FROM raw_objects_v1 WHERE project = 'demo' ORDER BY service"
                                " FORMAT TabSeparated", database=self.db)
            sizes = [line.split("\t") for line in out.splitlines()]
            if len(sizes) >= 3:
                break
            time.sleep(0.3)
        self.assertEqual([s for s, _ in sizes], services)
        for s, n in sizes:
            # one third of the request plus the shared dictionary, not all of it
            self.assertLess(int(n), len(req) * 2 // 3, f"{s}: stored {n} of {len(req)} request bytes")


if __name__ == "__main__":
    unittest.main()
