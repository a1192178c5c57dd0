#!/usr/bin/env python3
"""test_otlp.py — OTLP profiles ingest on a real wt-edge.

OTLP/HTTP: the OTel eBPF profiler's 1.8.0 capture POSTed to
/v1development/profiles → 200, and the edge's table totals (cpu, offcpu)
equal the figures of tests/tools/otlp_ref.py, an independent wire-format
reader. OTLP/gRPC: the same request sent with grpcio (Debian
python3-grpcio, run by /usr/bin/python3, an independent HTTP/2 + gRPC
implementation) through a generic unary-unary stub with raw-bytes
serializers, plain and gzip-compressed → OK and the same totals; a bad token
→ UNAUTHENTICATED (16); the corrupted capture → INVALID_ARGUMENT (3) over
gRPC and 400 naming the field over HTTP; protojson (application/json) over
HTTP gives the same figures as the protobuf encoding of the same request.
"""
import http.client
import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness.edge import CORPUS, ROOT, UPLOAD_TOKEN, Edge  # noqa: E402

OTLP = os.path.join(CORPUS, "otlp")
GOOD = os.path.join(OTLP, "pyroscope__otel-ebpf-profiler_otlp-1.8.0.pb")
BAD = os.path.join(OTLP, "pyroscope__otel-ebpf-profiler_otlp-1.8.0-corrupted.pb")
JSONF = os.path.join(OTLP, "pyroscope__otel-ebpf-profiler_otlp-1.8.0.json")
SYSPY = "/usr/bin/python3"  # Debian's python, where python3-grpcio lives
METHOD = "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"

GRPC_CLIENT = r"""
import json, sys, grpc
port, token, service, path, gz = sys.argv[1:6]
data = open(path, "rb").read()
ch = grpc.insecure_channel("127.0.0.1:" + port)
call = ch.unary_unary(sys.argv[6], request_serializer=None, response_deserializer=None)
md = [("authorization", "Bearer " + token)]
if service:
    md.append(("service", service))
try:
    resp = call(data, metadata=md, timeout=60,
                compression=grpc.Compression.Gzip if gz == "1" else None)
    print(json.dumps({"code": 0, "details": "", "response_len": len(resp)}))
except grpc.RpcError as e:
    print(json.dumps({"code": e.code().value[0], "details": e.details()}))
"""


def reference(path):
    out = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "tools", "otlp_ref.py"), path],
                         check=True, capture_output=True, text=True).stdout
    cpu = offcpu = 0
    for p in json.loads(out)["profiles"]:
        t, u = p["sample_types"][0]
        pt = (p["period_type"] or ["", ""])[0]
        if (t, u, pt) == ("samples", "count", "cpu"):
            cpu += p["raw_total"] * p["period"]
        elif (t, u, pt) == ("events", "nanoseconds", ""):
            offcpu += p["raw_total"]
    return cpu, offcpu


def have_grpc():
    return os.path.exists(SYSPY) and subprocess.run([SYSPY, "-c", "import grpc"],
                                                   capture_output=True).returncode == 0


class OtlpIngest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cpu, cls.offcpu = reference(GOOD)
        assert cls.cpu > 0 and cls.offcpu > 0

    def setUp(self):
        self.edge = Edge(self, retention={"rollup_days": 3650}).start()

    def post(self, path, body, ctype="application/x-protobuf", token=UPLOAD_TOKEN, qs=""):
        c = http.client.HTTPConnection("127.0.0.1", self.edge.otlp_http_port, timeout=60)
        try:
            h = {"Content-Type": ctype}
            if token:
                h["Authorization"] = "Bearer " + token
            c.request("POST", path + qs, body=body, headers=h)
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def grpc(self, path, token=UPLOAD_TOKEN, service="", gz=False, method=METHOD):
        r = subprocess.run([SYSPY, "-c", GRPC_CLIENT, str(self.edge.otlp_grpc_port), token, service,
                            path, "1" if gz else "0", method],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def totals(self, service):
        out = {}
        for t in ("cpu", "offcpu"):
            st, js = self.edge.query("table", service=service, type=t)
            self.assertEqual(st, 200, js)
            out[t] = js["total"]
        return out

    def test_http_protobuf(self):
        with open(GOOD, "rb") as f:
            body = f.read()
        st, resp = self.post("/v1development/profiles", body, qs="?service=otlp-http")
        self.assertEqual(st, 200, resp)
        self.assertEqual(resp, b"")  # empty ExportProfilesServiceResponse
        self.assertEqual(self.totals("otlp-http"), {"cpu": self.cpu, "offcpu": self.offcpu})
        m = self.edge.metrics()
        self.assertEqual(m['wt_edge_uploads_total{format="otlp"}'], 1)

    def test_http_json(self):
        # OTLP/JSON (protojson) of the same request: the same figures; the
        # answer is a JSON ExportProfilesServiceResponse
        with open(JSONF, "rb") as f:
            body = f.read()
        st, resp = self.post("/v1development/profiles", body, ctype="application/json",
                             qs="?service=otlp-json")
        self.assertEqual(st, 200, resp)
        self.assertEqual(json.loads(resp), {})
        self.assertEqual(self.totals("otlp-json"), {"cpu": self.cpu, "offcpu": self.offcpu})
        # damaged JSON: 400 naming the position, nothing stored
        st, resp = self.post("/v1development/profiles", body[:len(body) // 2], ctype="application/json",
                             qs="?service=otlp-json-cut")
        self.assertEqual(st, 400, resp)
        self.assertIn("JSON error at line", json.loads(resp)["detail"])
        self.assertEqual(self.totals("otlp-json-cut"), {"cpu": 0, "offcpu": 0})

    def test_http_rejects(self):
        with open(BAD, "rb") as f:
            st, body = self.post("/v1development/profiles", f.read())
        self.assertEqual(st, 400, body)
        self.assertIn("stack_index", json.loads(body)["detail"])
        with open(GOOD, "rb") as f:
            st, body = self.post("/v1development/profiles", f.read(), token="wrong")
        self.assertEqual(st, 401, body)
        st, js = self.edge.query("services")
        self.assertEqual(st, 200)
        self.assertNotIn("unknown_service", json.dumps(js))

    def test_grpc_export(self):
        # python3-grpcio comes with appliance/install-deps: missing is a failure
        self.assertTrue(have_grpc(), "python3-grpcio is not installed (appliance/install-deps)")
        r = self.grpc(GOOD, service="otlp-grpc")
        self.assertEqual(r["code"], 0, r)
        self.assertEqual(self.totals("otlp-grpc"), {"cpu": self.cpu, "offcpu": self.offcpu})
        r = self.grpc(GOOD, service="otlp-grpc-gz", gz=True)
        self.assertEqual(r["code"], 0, r)
        self.assertEqual(self.totals("otlp-grpc-gz"), {"cpu": self.cpu, "offcpu": self.offcpu})
        # without a service fallback the resource's (absent) service.name gives unknown_service
        r = self.grpc(GOOD)
        self.assertEqual(r["code"], 0, r)
        self.assertEqual(self.totals("unknown_service"), {"cpu": self.cpu, "offcpu": self.offcpu})

    def test_grpc_errors(self):
        self.assertTrue(have_grpc(), "python3-grpcio is not installed (appliance/install-deps)")
        r = self.grpc(GOOD, token="not-a-token", service="x")
        self.assertEqual(r["code"], 16, r)  # UNAUTHENTICATED
        r = self.grpc(BAD, service="bad")
        self.assertEqual(r["code"], 3, r)   # INVALID_ARGUMENT
        self.assertIn("stack_index", r["details"])
        r = self.grpc(GOOD, service="x", method="/opentelemetry.proto.collector.trace.v1.TraceService/Export")
        self.assertEqual(r["code"], 12, r)  # UNIMPLEMENTED
        st, js = self.edge.query("services")
        self.assertEqual(st, 200)
        self.assertNotIn('"bad"', json.dumps(js))
        # the daemon is still serving
        r = self.grpc(GOOD, service="after")
        self.assertEqual(r["code"], 0, r)


if __name__ == "__main__":
    unittest.main()
