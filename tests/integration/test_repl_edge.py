#!/usr/bin/env python3
"""test_repl_edge.py — the edge's replication client (edge/repl_client.c)
against real TLS peers, without a hub: tests/tools/tls_echo (our mbedtls
mTLS server, which answers with the verified peer id and the request's
path and X-WT-* headers), a TCP listener that never answers, and a closed
port. End-to-end replication with a real hub is test_replication.py.

Checked here: the edge presents its certificate (tls_echo sees peer id =
edge id) and POSTs /v1/replicate with the contract's headers; a non-ack
answer is not taken for an ack (cursor stays 0, backlog stays); a
certificate from another CA is refused in the handshake (tls_echo counts a
failed handshake and no request); a hub certificate without the URL's name
is refused by the edge; backoff cadence against a closed port; SIGTERM
while a request hangs exits cleanly within 2 s; against a fake hub (Python
ssl) that acknowledges only part of each batch, every batch starts right
after the last acknowledged seq (the prefetched next batch is dropped); a
hub answering 503 busy with retry_after_s is asked again after that long.
"""
import http.server
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import shutil
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness.edge import BIN, ROOT, Edge, free_port  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
from pbwire import varint  # noqa: E402

BUILD = os.environ.get("BUILD", "build")
TLS_ECHO = os.path.join(ROOT, BUILD, "tests", "tools", "tls_echo")
WTCTL = os.path.join(BIN, "wtctl")
FOLDED = b"main;work;leaf 7\nmain;idle 3\n"
FAST = "backoff_initial_ms = 50; backoff_max_ms = 200; interval_ms = 50;"


def pki_cmd():
    if os.access(WTCTL, os.X_OK):
        r = subprocess.run([WTCTL, "pki", "help"], capture_output=True, text=True, timeout=20)
        if r.returncode == 0 and "issue-edge" in r.stdout:
            return [WTCTL, "pki"]
    return [TLS_ECHO, "pki"]


class Echo:
    """tls_echo serve; stop() returns its final stats line as a dict."""

    def __init__(self, tmp, ca, cert, key):
        self.log_path = os.path.join(tmp, "echo-%d.log" % time.monotonic_ns())
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen([TLS_ECHO, "serve", "--host", "127.0.0.1", "--port", "0", "--ca", ca,
                                      "--cert", cert, "--key", key, "--workers", "4"],
                                     stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("PORT "):
            self.stop()
            raise RuntimeError("tls_echo did not start: %r" % line)
        self.port = int(line.split()[1])

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        if not self.log.closed:
            self.log.close()
        with open(self.log_path) as f:
            text = f.read()
        m = re.search(r"connections=(\d+) handshakes_ok=(\d+) handshakes_failed=(\d+) requests=(\d+)", text)
        if not m:
            return {}
        return dict(zip(("connections", "handshakes_ok", "handshakes_failed", "requests"), map(int, m.groups())))


class Blackhole:
    """Accepts TCP connections and never answers (a hung hub)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        self.accepted = threading.Event()
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)
            self.accepted.set()

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        for c in self.conns:
            c.close()


def batch_seqs(pb):
    """first_seq (field 2) and last_seq (field 3) of a watchtower.repl.Batch."""
    i, out = 0, {}
    while i < len(pb):
        key, i = varint(pb, i)
        field, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(pb, i)
            out[field] = v
        elif wt == 2:
            n, i = varint(pb, i)
            i += n
        else:
            raise ValueError("wire type %d" % wt)
    return out.get(2, 0), out.get(3, 0)


class PartialAckHub:
    """An mTLS hub that acknowledges at most `ack` uploads of each batch
    (503 until open() is called) and records (first_seq, last_seq, ack)."""

    def __init__(self, site, ack=2, busy=0):
        """busy: answer the first `busy` requests 503 {"error":"busy",
        "retry_after_s":1} with Retry-After (a hub applying the batch
        already); self.times records when each request arrived."""
        self.requests, self.gate, self.times = [], threading.Event(), []
        self.busy = busy
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.times.append(time.monotonic())
                if not outer.gate.is_set():
                    return self.answer(503, b'{"error":"unavailable"}')
                if outer.busy > 0:
                    outer.busy -= 1
                    return self.answer(503, b'{"error":"busy","detail":"being applied","retry_after_s":1}',
                                       {"Retry-After": "1"})
                pb = subprocess.run(["zstd", "-d", "-c", "-q"], input=body, capture_output=True, check=True).stdout
                first, last = batch_seqs(pb)
                acked = min(last, first + ack - 1)
                outer.requests.append((first, last, acked))
                self.answer(200, json.dumps({"last_seq": acked, "applied": acked - first + 1}).encode())

            def answer(self, status, body, headers=None):
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(site, "hub.crt"), os.path.join(site, "hub.key"))
        ctx.load_verify_locations(os.path.join(site, "ca.crt"))
        ctx.verify_mode = ssl.CERT_REQUIRED
        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.srv.socket = ctx.wrap_socket(self.srv.socket, server_side=True)
        self.port = self.srv.server_address[1]
        self.t = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.t.start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


def wait_for(pred, timeout=15, step=0.05):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()


class ReplEdgeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for b in (TLS_ECHO, os.path.join(BIN, "wt-edge")):
            if not os.access(b, os.X_OK):
                raise unittest.SkipTest("%s not built" % b)
        cls.tmp = tempfile.mkdtemp(prefix="wt-test-repl-edge-")
        try:
            pki = pki_cmd()
            site, other, odd = (os.path.join(cls.tmp, d) for d in ("site", "other", "odd"))
            for cmd in (["init", "--dir", site, "--hub-host", "localhost", "--hub-host", "127.0.0.1"],
                        ["issue-edge", "--ca", site, "--edge-id", "edge-a"],
                        ["issue-edge", "--ca", site, "--edge-id", "edge-c"],
                        ["init", "--dir", other, "--ca-name", "Other CA"],
                        ["issue-edge", "--ca", other, "--edge-id", "edge-b"],
                        ["issue-hub", "--ca", site, "--hub-host", "hub.elsewhere.test", "--out", odd]):
                r = subprocess.run(pki + cmd, capture_output=True, text=True, timeout=30)
                assert r.returncode == 0, "pki %s: %s" % (cmd, r.stderr)
            cls.site, cls.other, cls.odd = site, other, odd
        except BaseException:
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def echo(self, cert_dir=None):
        d = cert_dir or self.site
        e = Echo(self.tmp, os.path.join(self.site, "ca.crt"), os.path.join(d, "hub.crt"), os.path.join(d, "hub.key"))
        self.addCleanup(e.stop)
        return e

    def edge(self, edge_id, port, ca_dir=None, host="127.0.0.1", replication=FAST):
        ca_dir = ca_dir or self.site
        hub = {"url": "https://%s:%d" % (host, port), "ca": os.path.join(self.site, "ca.crt"),
               "cert": os.path.join(ca_dir, edge_id + ".crt"), "key": os.path.join(ca_dir, edge_id + ".key")}
        e = Edge(self, edge_id=edge_id, hub=hub, replication=replication)
        e.start()
        return e

    def upload(self, e, n=1):
        for i in range(n):
            st, body = e.upload(FOLDED, format="folded", service="svc%d" % i)
            self.assertEqual(st, 200, body)

    @staticmethod
    def err(m, reason):
        return m.get('wt_edge_repl_errors_total{reason="%s"}' % reason, 0)

    # ---------------------------------------------------------------------------

    def test_presents_certificate_and_contract_headers(self):
        echo = self.echo()
        e = self.edge("edge-a", echo.port)
        self.upload(e, 2)
        # tls_echo answers 200 with its peer report, which is no ack
        self.assertTrue(wait_for(lambda: self.err(e.metrics(), "bad_response") >= 1), e.read_log()[-2000:])
        log = e.read_log()
        line = [ln for ln in log.splitlines() if "bad_response" in ln]
        self.assertTrue(line, log[-2000:])
        # quotes are blanked in the log line: "peer_id":"edge-a" -> " peer_id : edge-a "
        self.assertRegex(line[0], r"peer_id : edge-a ")
        self.assertRegex(line[0], r"method : POST ")
        self.assertRegex(line[0], r"path : /v1/replicate ")
        self.assertRegex(line[0], r"content_type : application/x-wt-repl-batch ")
        self.assertRegex(line[0], r"x-wt-edge-id : edge-a ")
        body_len = int(re.search(r"body_len :(\d+)", line[0]).group(1))
        self.assertGreater(body_len, 8)
        m = e.metrics()
        self.assertEqual(m["wt_edge_repl_cursor"], 0)
        self.assertEqual(m["wt_edge_repl_backlog_uploads"], 2)
        self.assertEqual(m["wt_edge_repl_batches_sent_total"], 0)
        self.assertEqual(m["wt_edge_repl_enabled"], 1)
        self.assertGreater(m["wt_edge_repl_backlog_bytes"], 200)
        self.assertLess(m["wt_edge_repl_backlog_bytes"], 4096)  # two tiny uploads, not memtable arenas
        self.assertGreater(m["wt_edge_repl_oldest_unreplicated_age_seconds"], 0)
        for name in ("wt_edge_repl_uploads_sent_total", "wt_edge_repl_bytes_sent_total",
                     "wt_edge_repl_bytes_uncompressed_total", "wt_edge_repl_last_success_timestamp_seconds"):
            self.assertIn(name, m)
        self.assertEqual(e.stop(), 0)
        stats = echo.stop()
        self.assertGreaterEqual(stats.get("requests", 0), 1, stats)
        self.assertGreaterEqual(stats.get("handshakes_ok", 0), 1, stats)

    def test_certificate_of_another_ca_is_refused(self):
        echo = self.echo()
        e = self.edge("edge-b", echo.port, ca_dir=self.other)
        self.upload(e)
        self.assertTrue(wait_for(lambda: self.err(e.metrics(), "tls") + self.err(e.metrics(), "transport") >= 2),
                        e.read_log()[-2000:])
        m = e.metrics()
        self.assertEqual(self.err(m, "bad_response"), 0)
        self.assertEqual(m["wt_edge_repl_backlog_uploads"], 1)
        self.assertEqual(e.stop(), 0)
        stats = echo.stop()
        self.assertEqual(stats.get("requests"), 0, stats)
        self.assertGreaterEqual(stats.get("handshakes_failed", 0), 1, stats)

    def test_hub_certificate_without_the_url_name_is_refused(self):
        echo = self.echo(cert_dir=self.odd)  # hub.crt names only hub.elsewhere.test
        e = self.edge("edge-c", echo.port)
        self.upload(e)
        self.assertTrue(wait_for(lambda: self.err(e.metrics(), "tls") >= 1), e.read_log()[-2000:])
        self.assertEqual(self.err(e.metrics(), "bad_response"), 0)
        self.assertEqual(e.stop(), 0)
        self.assertEqual(echo.stop().get("requests"), 0)

    def test_backoff_against_a_closed_port_and_ingest_goes_on(self):
        port = free_port()  # nothing listens there
        e = self.edge("edge-a", port)
        self.upload(e)
        t0 = time.time()
        time.sleep(2.0)
        n = self.err(e.metrics(), "connect")
        print("connect errors %d in %.1f s" % (n, time.time() - t0), file=sys.stderr)
        dt = time.time() - t0
        # delays are uniform in [50 ms, min(200 ms, 50 ms * 2^k)]: at least
        # dt/0.2 - 1 attempts, at most dt/0.05 + 1 (plus connect time)
        self.assertGreaterEqual(n, int(dt / 0.2) - 1, n)
        self.assertLessEqual(n, int(dt / 0.05) + 2, n)
        self.upload(e, 3)
        m = e.metrics()
        self.assertEqual(m["wt_edge_repl_backlog_uploads"], 4)
        self.assertEqual(m["wt_edge_repl_failing"], 1)
        self.assertGreater(m["wt_edge_repl_retries_total"], 0)
        self.assertIn("replication: POST https://127.0.0.1:%d/v1/replicate failed" % port, e.read_log())
        self.assertEqual(e.stop(), 0)

    def test_partial_acks_resend_from_the_cursor(self):
        """The next batch is prefetched while one is in flight; when the hub
        acknowledges only part of a batch, that prefetch must be dropped and
        the next batch start right after the acknowledged seq."""
        hub = PartialAckHub(self.site, ack=2)
        self.addCleanup(hub.close)
        e = self.edge("edge-a", hub.port, replication=FAST + " batch_max_uploads = 4;")
        self.upload(e, 11)
        hub.gate.set()
        self.assertTrue(wait_for(lambda: e.metrics()["wt_edge_repl_cursor"] == 11), e.read_log()[-2000:])
        m = e.metrics()
        self.assertEqual(m["wt_edge_repl_backlog_uploads"], 0)
        self.assertEqual(m["wt_edge_repl_uploads_sent_total"], 11)
        self.assertEqual(self.err(m, "ack"), 0)
        reqs = list(hub.requests)
        print("batches (first, last, acked): %s" % reqs, file=sys.stderr)
        self.assertEqual(reqs[0][0], 1, reqs)
        for prev, cur in zip(reqs, reqs[1:]):
            self.assertEqual(cur[0], prev[2] + 1, reqs)  # never the prefetched batch after a partial ack
        self.assertTrue(any(last > acked for _, last, acked in reqs), reqs)  # partial acks did happen
        self.assertEqual(e.stop(), 0)

    def test_busy_hub_is_asked_again_after_retry_after(self):
        """A hub that is applying the batch already answers 503 busy with
        retry_after_s: the edge sends the same batch again after that
        long (not after its 50-200 ms backoff), counts it as busy, not as
        an error, and then goes on."""
        hub = PartialAckHub(self.site, ack=100, busy=2)
        self.addCleanup(hub.close)
        hub.gate.set()
        e = self.edge("edge-a", hub.port)
        self.upload(e, 3)
        self.assertTrue(wait_for(lambda: e.metrics()["wt_edge_repl_cursor"] == 3), e.read_log()[-2000:])
        m = e.metrics()
        self.assertEqual(m["wt_edge_repl_hub_busy_total"], 2)
        self.assertEqual(self.err(m, "http_5xx"), 0)
        t = hub.times
        self.assertGreaterEqual(len(t), 3)
        self.assertGreaterEqual(t[1] - t[0], 0.95, t)
        self.assertGreaterEqual(t[2] - t[1], 0.95, t)
        self.assertEqual(hub.requests[0][0], 1)  # the same batch, from the start
        self.assertIn("is applying batch seq", e.read_log())
        self.assertEqual(e.stop(), 0)

    def test_sigterm_while_a_request_hangs(self):
        hole = Blackhole()
        self.addCleanup(hole.close)
        e = self.edge("edge-a", hole.port, replication="interval_ms = 50;")
        self.upload(e)
        self.assertTrue(hole.accepted.wait(10), "the edge never connected")
        time.sleep(0.5)  # the TLS handshake is now waiting for a ServerHello
        t0 = time.time()
        rc = e.stop(timeout=10)
        dt = time.time() - t0
        self.assertEqual(rc, 0, e.read_log()[-2000:])
        self.assertLess(dt, 2.0, "stop took %.2f s" % dt)
        print("stop took %.2f s" % dt, file=sys.stderr)
        self.assertIn("replication: stopped", e.read_log())
        self.assertIn("clean shutdown", e.read_log())
        # and the upload is still there for the next run
        e.start()
        self.assertEqual(e.metrics()["wt_edge_repl_backlog_uploads"], 1)
        self.assertEqual(e.stop(), 0)


if __name__ == "__main__":
    unittest.main()
