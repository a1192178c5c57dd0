"""test_bounds.py — memory bounds of the edge's receivers under abuse.

OTLP/gRPC (edge/otlp_recv.c): a client without a token opens many streams
and sends large bodies it never ends; a client with a token does the same
within the in-flight budget (limits.max_inflight_mb), the per-connection
stream cap (edge.max_streams) and the stream timeout (edge.stream_timeout_s).
The flood client is tests/tools/h2flood.c (nghttp2); the edge's RSS is read
from /proc while it runs, and legitimate uploads (HTTP and grpcio) are made
during the flood.
"""
import json
import os
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness.edge import CORPUS, ROOT, UPLOAD_TOKEN, Edge  # noqa: E402
from test_otlp import GOOD, GRPC_CLIENT, METHOD, SYSPY, have_grpc  # noqa: E402

BUILD = os.environ.get("BUILD", "build")
H2FLOOD = os.path.join(ROOT, BUILD, "tests", "tools", "h2flood")
FOLDED = os.path.join(CORPUS, "folded")
MB = 1 << 20


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def folded_sample():
    for name in sorted(os.listdir(FOLDED)):
        p = os.path.join(FOLDED, name)
        if os.path.isfile(p) and os.path.getsize(p) < (1 << 20):
            with open(p, "rb") as f:
                return f.read()
    return b"main;work 10\nmain;idle 5\n"


class Sampler:
    """Peak RSS of a process, read every 50 ms in a thread."""

    def __init__(self, pid):
        self.pid, self.peak, self.stop = pid, 0.0, False
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while not self.stop:
            try:
                self.peak = max(self.peak, rss_mb(self.pid))
            except OSError:
                return
            time.sleep(0.05)

    def done(self):
        self.stop = True
        self.t.join()
        return self.peak


class GrpcFlood(unittest.TestCase):
    def flood(self, port, streams, nbytes, hold_s, token=""):
        return subprocess.Popen([H2FLOOD, str(port), str(streams), str(nbytes), str(hold_s), token],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def finish(self, p):
        out, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 0, err)
        return json.loads(out)

    def grpc_upload(self, edge, service):
        r = subprocess.run([SYSPY, "-c", GRPC_CLIENT, str(edge.otlp_grpc_port), UPLOAD_TOKEN, service,
                            GOOD, "0", METHOD], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def legit_uploads(self, edge, tag):
        st, body = edge.upload(folded_sample(), format="folded", service=f"legit-{tag}")
        self.assertEqual(st, 200, body)
        if have_grpc():
            r = self.grpc_upload(edge, f"legit-grpc-{tag}")
            self.assertEqual(r["code"], 0, r)

    def test_unauthenticated_flood(self):
        """10 streams x 40 MB without a token, never ended: refused on the
        HEADERS (UNAUTHENTICATED), nothing buffered, RSS stays flat, and
        legitimate uploads succeed meanwhile."""
        edge = Edge(self).start()
        self.legit_uploads(edge, "warm")
        base = rss_mb(edge.proc.pid)
        s = Sampler(edge.proc.pid)
        p = self.flood(edge.otlp_grpc_port, 10, 40 * MB, 8)
        time.sleep(2)
        self.legit_uploads(edge, "during")
        res = self.finish(p)
        peak = s.done()
        self.assertLess(peak, base + 50, f"edge RSS {base:.0f} -> {peak:.0f} MB under the flood: {res}")
        self.assertEqual(len(res["streams"]), 10, res)
        for st in res["streams"]:
            self.assertEqual(st["status"], 16, res)  # UNAUTHENTICATED
            self.assertEqual(st["closed"], 1, res)
            # refused on the headers: the client stops long before 40 MB
            self.assertLess(st["sent"], 8 * MB, res)
        self.assertGreaterEqual(edge.metrics()['wt_edge_rejects_total{reason="unauthorized"}'], 10)

    def test_authenticated_flood_bounded(self):
        """With a token, never-ended streams are held only within the budget:
        streams past edge.max_streams are refused, bodies past the in-flight
        budget get RESOURCE_EXHAUSTED, the rest time out, and uploads work
        again afterwards."""
        edge = Edge(self, extra_edge="max_streams = 6; stream_timeout_s = 4;",
                    extra_limits="max_inflight_mb = 64;").start()
        self.legit_uploads(edge, "warm")
        base = rss_mb(edge.proc.pid)
        s = Sampler(edge.proc.pid)
        p = self.flood(edge.otlp_grpc_port, 10, 40 * MB, 10, UPLOAD_TOKEN)
        res = self.finish(p)
        peak = s.done()
        self.assertLess(peak, base + 64 + 50, f"edge RSS {base:.0f} -> {peak:.0f} MB: {res}")
        statuses = [st["status"] for st in res["streams"]]
        rsts = [st["rst"] for st in res["streams"]]
        self.assertEqual(rsts.count(7), 4, res)      # REFUSED_STREAM past max_streams
        self.assertIn(8, statuses, res)              # RESOURCE_EXHAUSTED past the budget
        self.assertIn(4, statuses, res)              # DEADLINE_EXCEEDED: never ended
        self.assertTrue(all(st["closed"] for st in res["streams"]), res)
        self.legit_uploads(edge, "after")
        m = edge.metrics()
        self.assertEqual(m["wt_edge_inflight_bytes"], 0)


if __name__ == "__main__":
    unittest.main()
