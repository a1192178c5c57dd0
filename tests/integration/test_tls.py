#!/usr/bin/env python3
"""test_tls.py — the mutual-TLS replication listener (hub/tls_server.c)
and client (edge/tls_client.c) with certificates from `wtctl pki`
(common/pki.c), checked with independent clients: `curl`, `openssl
s_client`, `openssl verify` and Python's ssl module (all OpenSSL).

The server under test is tests/tools/tls_echo, which answers every request
with the verified peer id it got from hub_tls_server. The matrix: a valid
edge certificate is served (200, peer id echoed); no client certificate, a
self-signed one, one from another CA, an expired one and the hub's own
(serverAuth-only) certificate are rejected in the handshake; clients that
expect another host name refuse the hub. Plus HTTP details (keep-alive,
pipelining, 100-continue, 400/411/413), certificate reload on SIGHUP and
graceful stop with an idle connection open.
"""
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import unittest

ROOT = os.environ.get("WT_ROOT") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD", "build")
TOOL = os.path.join(ROOT, BUILD, "tests", "tools", "tls_echo")
WTCTL = os.path.join(ROOT, BUILD, "bin", "wtctl")
MAX_BODY = 1 << 20


def pki_cmd():
    """`wtctl pki` once wtctl dispatches it, else the same code via tls_echo."""
    if os.access(WTCTL, os.X_OK):
        r = subprocess.run([WTCTL, "pki", "help"], capture_output=True, text=True, timeout=20)
        if r.returncode == 0 and "issue-edge" in r.stdout:
            return [WTCTL, "pki"]
    return [TOOL, "pki"]


def run(cmd, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("timeout", 30)
    return subprocess.run(cmd, **kw)


class Server:
    """A running tls_echo serve; stop() sends SIGTERM and returns the exit code."""

    def __init__(self, tmp, ca, cert, key, *extra):
        self.log_path = os.path.join(tmp, "server-%d.log" % time.monotonic_ns())
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [TOOL, "serve", "--host", "127.0.0.1", "--port", "0", "--ca", ca, "--cert", cert,
             "--key", key, "--workers", "4", "--max-body", str(MAX_BODY), *extra],
            stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("PORT "):
            self.stop()
            raise RuntimeError("tls_echo did not start: %r; log: %s" % (line, self.logtext()))
        self.port = int(line.split()[1])

    def logtext(self):
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    def stop(self, timeout=10):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                return None
            finally:
                self.proc.stdout.close()
        if not self.log.closed:
            self.log.close()
        return self.proc.returncode


class TlsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(TOOL, os.X_OK):
            raise unittest.SkipTest("%s not built (make BUILD=%s integration)" % (TOOL, BUILD))
        cls.tmp = tempfile.mkdtemp(prefix="wt-test-tls-")
        cls.server = None
        try:
            cls._make_pki()
            cls.server = Server(cls.tmp, cls.site("ca.crt"), cls.site("hub.crt"), cls.site("hub.key"))
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            if cls.server:
                srv, cls.server = cls.server, None
                rc = srv.stop()
                assert rc == 0, "tls_echo exit code %r; log:\n%s" % (rc, srv.logtext()[-3000:])
        finally:
            shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def site(cls, name):
        return os.path.join(cls.tmp, "site", name)

    @classmethod
    def _make_pki(cls):
        pki = pki_cmd()
        site = os.path.join(cls.tmp, "site")
        other = os.path.join(cls.tmp, "other")
        now = int(time.time())
        for cmd in (
            ["init", "--dir", site, "--hub-host", "localhost", "--hub-host", "127.0.0.1",
             "--hub-host", "hub.test", "--days", "30"],
            ["issue-edge", "--ca", site, "--edge-id", "edge-1"],
            ["issue-edge", "--ca", site, "--edge-id", "edge-old", "--not-before",
             str(now - 20 * 86400), "--not-after", str(now - 86400)],
            ["init", "--dir", other, "--ca-name", "Other CA"],
            ["issue-edge", "--ca", other, "--edge-id", "edge-1"],
        ):
            r = run(pki + cmd, text=True)
            assert r.returncode == 0, "pki %s failed: %s" % (cmd, r.stderr)
        # A self-signed client certificate naming edge-1, made by OpenSSL.
        r = run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                 "-nodes", "-keyout", os.path.join(cls.tmp, "self.key"), "-out",
                 os.path.join(cls.tmp, "self.crt"), "-days", "5", "-subj", "/CN=edge-1",
                 "-addext", "extendedKeyUsage=clientAuth"], text=True)
        assert r.returncode == 0, r.stderr

    # ---- helpers ----------------------------------------------------------------

    def curl(self, cert=None, key=None, name="localhost", path="/v1/replicate", extra=(), data=None,
             ca=None):
        cmd = ["curl", "-sS", "--max-time", "10", "--cacert", ca or self.site("ca.crt"),
               "--resolve", "%s:%d:127.0.0.1" % (name, self.server.port), "-w", "\n%{http_code}"]
        if cert:
            cmd += ["--cert", cert, "--key", key]
        if data is not None:
            cmd += ["--data-binary", "@-"]
        cmd += list(extra) + ["https://%s:%d%s" % (name, self.server.port, path)]
        return run(cmd, input=data)

    def edge(self, name="edge-1"):
        return self.site(name + ".crt"), self.site(name + ".key")

    def assert_rejected(self, cert, key, why):
        r = self.curl(cert, key)
        self.assertNotEqual(r.returncode, 0, "curl with %s was served: %r" % (why, r.stdout))
        self.assertNotIn(b"peer_id", r.stdout)
        # The same with openssl s_client sending a request: never a response.
        cmd = ["openssl", "s_client", "-connect", "127.0.0.1:%d" % self.server.port, "-CAfile",
               self.site("ca.crt"), "-verify_return_error", "-servername", "localhost", "-ign_eof",
               "-quiet"]
        if cert:
            cmd += ["-cert", cert, "-key", key]
        r = run(cmd, input=b"GET /x HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        self.assertNotIn(b"HTTP/1.1", r.stdout, "s_client with %s was served" % why)
        self.assertNotIn(b"peer_id", r.stdout)

    def py_ssl(self, cert=None, key=None):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.load_verify_locations(self.site("ca.crt"))
        if cert is None:
            cert, key = self.edge()
        ctx.load_cert_chain(cert, key)
        s = socket.create_connection(("127.0.0.1", self.server.port), timeout=10)
        return ctx.wrap_socket(s, server_hostname="localhost")

    @staticmethod
    def read_response(f):
        """Read one HTTP/1.1 response from a file object: (status, headers, body)."""
        status = int(f.readline().split()[1])
        headers = {}
        while True:
            line = f.readline().decode()
            if line in ("\r\n", ""):
                break
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
        body = f.read(int(headers.get("content-length", "0")))
        return status, headers, body

    # ---- the matrix -------------------------------------------------------------

    def test_pki_files_verify_with_openssl(self):
        r = run(["openssl", "verify", "-x509_strict", "-purpose", "sslclient", "-CAfile",
                 self.site("ca.crt"), self.site("edge-1.crt")], text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = run(["openssl", "verify", "-x509_strict", "-purpose", "sslserver", "-CAfile",
                 self.site("ca.crt"), self.site("hub.crt")], text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # wrong purposes and wrong CA fail
        r = run(["openssl", "verify", "-purpose", "sslserver", "-CAfile", self.site("ca.crt"),
                 self.site("edge-1.crt")], text=True)
        self.assertNotEqual(r.returncode, 0)
        r = run(["openssl", "verify", "-CAfile", os.path.join(self.tmp, "other", "ca.crt"),
                 self.site("edge-1.crt")], text=True)
        self.assertNotEqual(r.returncode, 0)
        r = run(["openssl", "verify", "-CAfile", self.site("ca.crt"), self.site("edge-old.crt")], text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("expired", r.stdout + r.stderr)
        text = run(["openssl", "x509", "-noout", "-text", "-in", self.site("hub.crt")], text=True).stdout
        self.assertIn("DNS:localhost, IP Address:127.0.0.1, DNS:hub.test", text)
        text = run(["openssl", "x509", "-noout", "-subject", "-in", self.site("edge-1.crt")], text=True).stdout
        self.assertIn("CN = edge-1", text)
        text = run(["openssl", "x509", "-noout", "-text", "-in", self.site("ca.crt")], text=True).stdout
        self.assertIn("CA:TRUE, pathlen:0", text)
        self.assertEqual(os.stat(self.site("ca.key")).st_mode & 0o777, 0o600)
        self.assertEqual(os.stat(self.site("edge-1.key")).st_mode & 0o777, 0o600)
        # never overwritten without --force
        r = run(pki_cmd() + ["issue-edge", "--ca", os.path.join(self.tmp, "site"), "--edge-id", "edge-1"])
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"already exists", r.stderr)

    def test_valid_edge_curl(self):
        body = os.urandom(50000)
        r = self.curl(*self.edge(), path="/v1/replicate?seq=42", data=body,
                      extra=["-H", "Content-Type: application/x-protobuf", "-H", "Content-Encoding: zstd",
                             "-H", "X-WT-Edge: edge-1", "-H", "X-WT-Seq: 42"])
        self.assertEqual(r.returncode, 0, r.stderr)
        out, code = r.stdout.rsplit(b"\n", 1)
        self.assertEqual(code, b"200")
        j = json.loads(out)
        self.assertEqual(j["peer_id"], "edge-1")
        self.assertEqual(j["dns"], ["edge-1"])
        self.assertEqual(j["method"], "POST")
        self.assertEqual(j["path"], "/v1/replicate")
        self.assertEqual(j["query"], "seq=42")
        self.assertEqual(j["body_len"], len(body))
        self.assertEqual(j["content_type"], "application/x-protobuf")
        self.assertEqual(j["x_wt"], {"x-wt-edge": "edge-1", "x-wt-seq": "42"})

    def test_valid_edge_s_client(self):
        cert, key = self.edge()
        r = run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % self.server.port, "-cert", cert,
                 "-key", key, "-CAfile", self.site("ca.crt"), "-verify_return_error",
                 "-verify_hostname", "localhost", "-servername", "localhost", "-ign_eof", "-quiet"],
                input=b"GET /hello?a=b HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        self.assertIn(b"HTTP/1.1 200 OK", r.stdout, r.stderr)
        self.assertIn(b'"peer_id":"edge-1"', r.stdout)
        self.assertIn(b'"query":"a=b"', r.stdout)

    def test_no_client_cert_rejected(self):
        self.assert_rejected(None, None, "no client certificate")
        self.assertIn("Certificate was missing", self.server.logtext())

    def test_self_signed_rejected(self):
        self.assert_rejected(os.path.join(self.tmp, "self.crt"), os.path.join(self.tmp, "self.key"),
                             "a self-signed certificate")

    def test_other_ca_rejected(self):
        other = os.path.join(self.tmp, "other")
        self.assert_rejected(os.path.join(other, "edge-1.crt"), os.path.join(other, "edge-1.key"),
                             "a certificate from another CA")

    def test_expired_rejected(self):
        self.assert_rejected(*self.edge("edge-old"), why="an expired certificate")
        self.assertIn("validity has expired", self.server.logtext())

    def test_server_cert_as_client_rejected(self):
        # The hub's certificate chains to the site CA but is serverAuth only.
        self.assert_rejected(self.site("hub.crt"), self.site("hub.key"), "a serverAuth-only certificate")

    def test_client_checks_server_name(self):
        r = self.curl(*self.edge(), name="hub.test", path="/n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.endswith(b"\n200"))
        r = self.curl(*self.edge(), name="wrong.test", path="/n")
        self.assertEqual(r.returncode, 60, r.stderr)  # peer certificate cannot be authenticated
        self.assertNotIn(b"peer_id", r.stdout)
        # a client trusting another CA refuses the hub
        r = self.curl(*self.edge(), ca=os.path.join(self.tmp, "other", "ca.crt"))
        self.assertEqual(r.returncode, 60, r.stderr)
        cert, key = self.edge()
        r = run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % self.server.port, "-cert", cert,
                 "-key", key, "-CAfile", self.site("ca.crt"), "-verify_return_error",
                 "-verify_hostname", "wrong.test", "-ign_eof", "-quiet"],
                input=b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        self.assertNotEqual(r.returncode, 0)
        self.assertNotIn(b"HTTP/1.1", r.stdout)

    # ---- our client ---------------------------------------------------------------

    def tls_client(self, url, *extra):
        cert, key = self.edge()
        return run([TOOL, "post", "--ca", self.site("ca.crt"), "--cert", cert, "--key", key, "--url", url,
                    *extra], text=True)

    def test_tls_client_keepalive(self):
        r = self.tls_client("https://localhost:%d/v1/replicate?b=1" % self.server.port, "--n", "50",
                            "--size", "1000", "--header", "Content-Type: application/x-protobuf",
                            "--header", "X-WT-Seq: 9")
        self.assertEqual(r.returncode, 0, r.stderr)
        j = json.loads(r.stdout)
        self.assertEqual((j["peer_id"], j["body_len"], j["x_wt"]), ("edge-1", 1000, {"x-wt-seq": "9"}))
        self.assertIn("status=200 requests=50 connects=1 ", r.stderr)  # one connection, reused
        # by IP address (iPAddress SAN)
        r = self.tls_client("https://127.0.0.1:%d/echo" % self.server.port, "--size", "70000")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "".join(chr(ord("a") + i % 26) for i in range(70000)))
        # status codes arrive as such
        r = self.tls_client("https://localhost:%d/fail" % self.server.port)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("status=503", r.stderr)

    def test_tls_client_refuses_wrong_name(self):
        r = self.tls_client("https://wrong.test:%d/x" % self.server.port, "--resolve",
                            "wrong.test:%d:127.0.0.1" % self.server.port)
        self.assertEqual(r.returncode, 1)
        self.assertIn("wrong.test", r.stderr)
        self.assertNotIn("peer_id", r.stdout)
        r = self.tls_client("http://localhost:%d/x" % self.server.port)  # no plain HTTP
        self.assertEqual(r.returncode, 1)

    # ---- HTTP details -------------------------------------------------------------

    def test_keepalive_pipelining(self):
        with self.py_ssl() as s:
            f = s.makefile("rb")
            reqs = b"".join(b"POST /p%d HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s"
                            % (i, i * 10, b"z" * (i * 10)) for i in range(5))
            s.sendall(reqs)
            for i in range(5):
                st, h, body = self.read_response(f)
                self.assertEqual(st, 200)
                self.assertEqual(h["connection"], "keep-alive")
                j = json.loads(body)
                self.assertEqual((j["path"], j["body_len"]), ("/p%d" % i, i * 10))
            s.sendall(b"GET /last HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            st, h, body = self.read_response(f)
            self.assertEqual((st, h["connection"]), (200, "close"))
            self.assertEqual(f.read(), b"")  # server closed

    def test_bad_requests(self):
        cases = [
            (b"NONSENSE\r\n\r\n", 400),
            (b"GET nopath HTTP/1.1\r\n\r\n", 400),
            (b"GET / HTTP/2.0\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nContent-Length: 12x\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 411),
            (b"POST / HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % (MAX_BODY + 1), 413),
            (b"GET / HTTP/1.1\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n", 431),
        ]
        for raw, want in cases:
            with self.subTest(raw=raw[:40]), self.py_ssl() as s:
                s.sendall(raw)
                f = s.makefile("rb")
                st, h, body = self.read_response(f)
                self.assertEqual(st, want, body)
                self.assertEqual(h["connection"], "close")
                self.assertIn(b'"error":', body)
        # exactly max_body is fine
        with self.py_ssl() as s:
            s.sendall(b"POST / HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % MAX_BODY + b"q" * MAX_BODY)
            st, _, body = self.read_response(s.makefile("rb"))
            self.assertEqual((st, json.loads(body)["body_len"]), (200, MAX_BODY))

    def test_expect_continue(self):
        body = b"e" * 300000
        r = self.curl(*self.edge(), data=body, extra=["-H", "Expect: 100-continue"])
        self.assertEqual(r.returncode, 0, r.stderr)
        out, code = r.stdout.rsplit(b"\n", 1)
        self.assertEqual((code, json.loads(out)["body_len"]), (b"200", len(body)))

    # ---- lifecycle ------------------------------------------------------------------

    def test_reload_and_stop(self):
        """A second server on copies of the files: rotate its certificate by
        replacing the files and sending SIGHUP; then stop it while a client
        holds an idle keep-alive connection."""
        d = os.path.join(self.tmp, "rot")
        os.makedirs(d)
        for n in ("ca.crt", "hub.crt", "hub.key"):
            shutil.copy(self.site(n), os.path.join(d, n))
        srv = Server(self.tmp, os.path.join(d, "ca.crt"), os.path.join(d, "hub.crt"), os.path.join(d, "hub.key"))
        try:
            def get(name):
                cert, key = self.edge()
                return run(["curl", "-sS", "--max-time", "10", "--cacert", self.site("ca.crt"), "--cert", cert,
                            "--key", key, "--resolve", "%s:%d:127.0.0.1" % (name, srv.port),
                            "https://%s:%d/r" % (name, srv.port)])
            self.assertEqual(get("rotated.test").returncode, 60)
            r = run(pki_cmd() + ["issue-hub", "--ca", os.path.join(self.tmp, "site"), "--hub-host", "rotated.test",
                                 "--out", d, "--force"])
            self.assertEqual(r.returncode, 0, r.stderr)
            srv.proc.send_signal(signal.SIGHUP)
            deadline = time.time() + 5
            while "reloaded" not in srv.logtext() and time.time() < deadline:
                time.sleep(0.05)
            r = get("rotated.test")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn(b'"peer_id":"edge-1"', r.stdout)
            self.assertEqual(get("localhost").returncode, 60)  # old name gone
            # a broken file is refused and the server keeps its material
            with open(os.path.join(d, "hub.key"), "w") as f:
                f.write("garbage\n")
            srv.proc.send_signal(signal.SIGHUP)
            deadline = time.time() + 5
            while "reload failed" not in srv.logtext() and time.time() < deadline:
                time.sleep(0.05)
            self.assertIn("reload failed", srv.logtext())
            self.assertEqual(get("rotated.test").returncode, 0)
            # stop with an idle keep-alive connection open
            cert, key = self.edge()
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.load_verify_locations(self.site("ca.crt"))
            ctx.load_cert_chain(cert, key)
            s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", srv.port), timeout=10),
                                server_hostname="rotated.test")
            s.sendall(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
            st, _, _ = self.read_response(s.makefile("rb"))
            self.assertEqual(st, 200)
            t0 = time.monotonic()
            rc = srv.stop(timeout=5)
            self.assertEqual(rc, 0)
            self.assertLess(time.monotonic() - t0, 3)
            s.close()
        finally:
            srv.stop()


if __name__ == "__main__":
    unittest.main()
