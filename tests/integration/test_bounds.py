"""test_bounds.py — memory bounds of the edge's receivers under abuse.

HTTP ingest (common/http_guard.c in front of evhttp): a request is
admitted on its head — an upload needs its token before any body byte is
read, bodies reserve the in-flight budget (503 + Retry-After past it),
connections past edge.max_connections are answered 503.

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
import socket
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness.edge import CORPUS, ROOT, UPLOAD_TOKEN, Edge  # noqa: E402
from harness.clickhouse import ClickHouse  # noqa: E402
from harness.hub import Hub  # noqa: E402
from test_otlp import GOOD, GRPC_CLIENT, METHOD, SYSPY, have_grpc  # noqa: E402

BUILD = os.environ.get("BUILD", "build")
H2FLOOD = os.path.join(ROOT, BUILD, "tests", "tools", "h2flood")
FOLDED = os.path.join(CORPUS, "folded")
MB = 1 << 20
# Under ASan (make asan: BUILD=build-asan) freed memory sits in the
# allocator's quarantine and RSS says nothing about what is held: the RSS
# bounds are checked only in the normal build; every other assertion runs
# in both.
SANITIZED = "asan" in BUILD or os.environ.get("SANITIZE") == "1"


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
        if not SANITIZED:
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
        if not SANITIZED:
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


def raw_request(port, head, body_bytes=0, chunk=1 << 20):
    """Send a request head and body_bytes zero bytes of its body; return the
    socket (the caller reads and closes)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(head.encode())
    zeros = bytes(chunk)
    sent = 0
    while sent < body_bytes:
        n = min(chunk, body_bytes - sent)
        s.sendall(zeros[:n])
        sent += n
    return s


def read_response(s, timeout=10):
    """(status, headers dict, body) of one response, or (None, {}, b"") on timeout."""
    s.settimeout(timeout)
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            got = s.recv(65536)
            if not got:
                break
            data += got
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        hdrs = {k.strip().lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:] if ":" in ln)}
        n = int(hdrs.get("content-length", "0"))
        while len(rest) < n:
            got = s.recv(65536)
            if not got:
                break
            rest += got
        return status, hdrs, rest
    except (socket.timeout, IndexError, ValueError):
        return None, {}, b""


def post_head(path, length, token=None):
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    return (f"POST {path} HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/octet-stream\r\n"
            f"Content-Length: {length}\r\n\r\n")


class HttpGuard(unittest.TestCase):
    def test_unauthenticated_bodies_not_read(self):
        """10 connections x 40 MB declared, 30 MB sent, never ended, no token:
        each is answered 401 on its head and nothing is kept."""
        edge = Edge(self).start()
        st, body = edge.upload(folded_sample(), format="folded", service="warm")
        self.assertEqual(st, 200, body)
        base = rss_mb(edge.proc.pid)
        s = Sampler(edge.proc.pid)
        socks = []
        for path in ["/v1/profiles?format=folded&service=x", "/ingest?name=x.cpu"] * 5:
            socks.append(raw_request(edge.port, post_head(path, 40 * MB), 30 * MB))
        st, body = edge.upload(folded_sample(), format="folded", service="legit-during")
        self.assertEqual(st, 200, body)
        answers = [read_response(x) for x in socks]
        peak = s.done()
        for x in socks:
            x.close()
        if not SANITIZED:
            self.assertLess(peak, base + 50, f"edge RSS {base:.0f} -> {peak:.0f} MB")
        for status, hdrs, body in answers:
            self.assertEqual(status, 401, body)
            self.assertEqual(json.loads(body)["error"], "unauthorized")
            self.assertEqual(hdrs.get("www-authenticate"), "Bearer")
        # OTLP/HTTP is guarded the same way
        x = raw_request(edge.otlp_http_port, post_head("/v1development/profiles", 40 * MB, "wrong"), 4 * MB)
        status, _, body = read_response(x)
        x.close()
        self.assertEqual(status, 401, body)
        # a non-upload endpoint takes no large body, token or not
        x = raw_request(edge.port, post_head("/healthz", 10 * MB), 1 * MB)
        status, _, body = read_response(x)
        x.close()
        self.assertEqual(status, 413, body)

    def test_inflight_budget_and_connections(self):
        """Bodies reserve limits.max_inflight_mb: past it 503 + Retry-After;
        past edge.max_connections 503; both recover without a restart."""
        edge = Edge(self, extra_limits="max_inflight_mb = 64;", extra_edge="max_connections = 6;").start()
        path = "/v1/profiles?format=folded&service=big"
        a = raw_request(edge.port, post_head(path, 30 * MB, UPLOAD_TOKEN), 10 * MB)
        b = raw_request(edge.port, post_head(path, 30 * MB, UPLOAD_TOKEN), 10 * MB)
        time.sleep(0.3)
        c = raw_request(edge.port, post_head(path, 30 * MB, UPLOAD_TOKEN), 0)
        status, hdrs, body = read_response(c)
        c.close()
        self.assertEqual(status, 503, body)
        self.assertEqual(hdrs.get("retry-after"), "1")
        self.assertIn("limits.max_inflight_mb", json.loads(body)["detail"])
        m = edge.metrics()
        self.assertEqual(m["wt_edge_inflight_bytes"], 60 * MB)
        self.assertGreaterEqual(m["wt_edge_inflight_refused_total"], 1)
        # a small upload still fits
        st, body = edge.upload(folded_sample(), format="folded", service="small")
        self.assertEqual(st, 200, body)
        a.close()
        b.close()
        deadline = time.time() + 5
        while time.time() < deadline and edge.metrics()["wt_edge_inflight_bytes"] != 0:
            time.sleep(0.1)
        self.assertEqual(edge.metrics()["wt_edge_inflight_bytes"], 0)
        # connections: 6 idle ones fill edge.max_connections
        idle = [socket.create_connection(("127.0.0.1", edge.port)) for _ in range(6)]
        time.sleep(0.3)
        x = raw_request(edge.port, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        status, _, body = read_response(x)
        x.close()
        self.assertEqual(status, 503, body)
        self.assertIn("edge.max_connections", json.loads(body)["detail"])
        for i in idle:
            i.close()
        time.sleep(0.3)
        st, body = edge.upload(folded_sample(), format="folded", service="after")
        self.assertEqual(st, 200, body)


class HubGuard(unittest.TestCase):
    def test_unauthenticated_bodies_not_read(self):
        """The hub reads a body over 64 KiB only for a valid token: 10
        connections x 40 MB declared (30 MB sent, never ended) without one
        are answered 401 on their head, RSS stays flat, uploads succeed."""
        ch = ClickHouse(self).start()
        hub = Hub(self, ch).start()
        st, js = hub.create_project("demo")
        self.assertIn(st, (200, 201), js)
        tok = hub.create_token("demo", "upload")
        data = folded_sample()
        st, js = hub.upload(data, tok, "warm", format="folded")
        self.assertEqual(st, 200, js)
        base = rss_mb(hub.proc.pid)
        s = Sampler(hub.proc.pid)
        socks = []
        for i in range(10):
            path = ["/v1/profiles?service=x", "/v1/projects/demo/debuginfo/abcd", "/v1/admin/tokens"][i % 3]
            socks.append(raw_request(hub.port, post_head(path, 40 * MB, "wrong" if i % 2 else None),
                                     30 * MB))
        st, js = hub.upload(data, tok, "legit-during", format="folded")
        self.assertEqual(st, 200, js)
        answers = [read_response(x) for x in socks]
        peak = s.done()
        for x in socks:
            x.close()
        if not SANITIZED:
            self.assertLess(peak, base + 50, f"hub RSS {base:.0f} -> {peak:.0f} MB")
        for status, hdrs, body in answers:
            self.assertEqual(status, 401, body)
            self.assertEqual(json.loads(body)["error"], "unauthorized")
        # small requests without a token still reach their handler (same answer as before)
        st, js = hub.request("POST", "/v1/profiles?service=x", b"main 1\n")
        self.assertEqual(st, 401, js)


class OfflineBomb(unittest.TestCase):
    """wtctl profile summary/convert of a gzip bomb (1 GiB of zeros in ~1 MB)."""

    @classmethod
    def setUpClass(cls):
        import gzip
        import tempfile
        cls.dir = tempfile.mkdtemp(prefix="wt-bounds-bomb-")
        cls.bomb = os.path.join(cls.dir, "bomb.gz")
        zeros = bytes(8 * MB)
        with gzip.open(cls.bomb, "wb", compresslevel=9) as f:
            for _ in range(128):
                f.write(zeros)
        cls.good = os.path.join(cls.dir, "good.folded.gz")
        with gzip.open(cls.good, "wb") as f:
            f.write(folded_sample() * 40)

    @classmethod
    def tearDownClass(cls):
        import shutil
        shutil.rmtree(cls.dir, ignore_errors=True)

    def wtctl(self, *args):
        """(rc, stdout, stderr, max RSS MB) of one wtctl run (GNU time's %M)."""
        tf = os.path.join(self.dir, "time.out")
        cmd = ["/usr/bin/time", "-o", tf, "-f", "%M", os.path.join(ROOT, BUILD, "bin", "wtctl")] + list(args)
        if os.environ.get("WT_BIN"):
            cmd[5] = os.path.join(os.environ["WT_BIN"], "wtctl")
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        with open(tf) as f:
            rss = int(f.read().split()[-1]) / 1024
        return r.returncode, r.stdout, r.stderr, rss

    def test_bomb_summary_bounded(self):
        self.assertLess(os.path.getsize(self.bomb), 2 * MB)
        for extra in ([], ["--format", "folded"], ["--format", "pprof"]):
            rc, out, err, rss = self.wtctl("profile", "summary", *extra, self.bomb)
            self.assertNotEqual(rc, 0, out)
            if not SANITIZED:
                self.assertLess(rss, 200, f"wtctl profile summary {extra} of the bomb: {rss:.0f} MB RSS; {err}")
            self.assertIn("after decompression", err)
        rc, out, err, rss = self.wtctl("profile", "convert", "--to", "folded", self.bomb)
        self.assertNotEqual(rc, 0, out)
        if not SANITIZED:
            self.assertLess(rss, 200, err)

    def test_max_decompressed_flag(self):
        rc, out, err, _ = self.wtctl("profile", "summary", self.good)
        self.assertEqual(rc, 0, err)
        rc, out, err, _ = self.wtctl("profile", "summary", "--max-decompressed", "1K", self.good)
        self.assertNotEqual(rc, 0, out)
        self.assertIn("--max-decompressed", err)
        rc, out, err, _ = self.wtctl("profile", "summary", "--max-decompressed", "64M", self.good)
        self.assertEqual(rc, 0, err)


def can_mount():
    return os.geteuid() == 0 and os.path.exists("/bin/mount")


@unittest.skipUnless(can_mount(), "needs root to mount a small tmpfs (the test machine runs tests as root)")
class DiskFull(unittest.TestCase):
    """The edge's data_dir on a 24 MiB tmpfs filled by another file: uploads
    are refused 503 with a clear message and nothing half-stored, the edge
    accepts again once space returns, without a restart."""

    def setUp(self):
        import tempfile
        self.mnt = tempfile.mkdtemp(prefix="wt-bounds-disk-")
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", self.mnt], check=True)
        self.addCleanup(self.unmount)

    def unmount(self):
        import shutil
        subprocess.run(["umount", "-l", self.mnt])
        shutil.rmtree(self.mnt, ignore_errors=True)

    def test_edge_disk_full(self):
        edge = Edge(self, retention={"min_free_mb": 4, "reserve_mb": 2})
        data_dir = os.path.join(self.mnt, "data")
        with open(edge.cfg) as f:
            cfg = f.read().replace(f'data_dir = "{edge.dir}/data"', f'data_dir = "{data_dir}"')
        with open(edge.cfg, "w") as f:
            f.write(cfg)
        edge.start()
        self.addCleanup(edge.kill9)  # before the unmount
        pid = edge.proc.pid
        data = folded_sample()
        st, body = edge.upload(data, format="folded", service="before")
        self.assertEqual(st, 200, body)
        seq = json.loads(body)["seq"]
        filler = os.path.join(self.mnt, "filler")
        subprocess.run(f"dd if=/dev/zero of={filler} bs=1M 2>/dev/null", shell=True)
        for i in range(3):
            st, body = edge.upload(data, format="folded", service="during")
            self.assertEqual(st, 503, body)
            self.assertIn("disk is full", json.loads(body)["detail"])
            self.assertIn("retention.min_free_mb", json.loads(body)["detail"])
        m = edge.metrics()
        self.assertEqual(m["wt_edge_disk_full"], 1)
        self.assertGreaterEqual(m["wt_edge_disk_full_refused_total"], 3)
        self.assertEqual(m["wt_edge_last_seq"], seq)  # nothing half-stored
        st, js = edge.query("services")
        self.assertEqual(st, 200, js)
        self.assertNotIn("during", json.dumps(js))
        os.remove(filler)
        st, body = edge.upload(data, format="folded", service="after")
        self.assertEqual(st, 200, body)
        self.assertEqual(edge.proc.pid, pid)
        self.assertEqual(edge.metrics()["wt_edge_disk_full"], 0)
        st, js = edge.query("services")
        self.assertIn("before", json.dumps(js))
        self.assertIn("after", json.dumps(js))
        self.assertTrue(os.path.exists(os.path.join(data_dir, "wt-reserve")))


def mount_tmpfs(testcase, size):
    import shutil
    import tempfile
    d = tempfile.mkdtemp(prefix="wt-bounds-disk-")
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", d], check=True)

    def unmount():
        subprocess.run(["umount", "-l", d])
        shutil.rmtree(d, ignore_errors=True)
    testcase.addCleanup(unmount)
    return d


def fill(path):
    subprocess.run(f"dd if=/dev/zero of={path} bs=1M 2>/dev/null", shell=True)


@unittest.skipUnless(can_mount(), "needs root to mount a small tmpfs (the test machine runs tests as root)")
class DiskFullReplication(unittest.TestCase):
    """Edge buffer full while the hub was away: replication still drains the
    backlog. Hub object store full: its uploads are answered 503, batches
    are refused whole and retried, nothing acknowledged is lost."""

    def test_full_disks_and_replication(self):
        import shutil
        import tempfile
        from test_replication import pki_edge, pki_init
        edge_mnt = mount_tmpfs(self, "24m")
        hub_mnt = mount_tmpfs(self, "16m")
        pki = tempfile.mkdtemp(prefix="wt-pki-")
        self.addCleanup(shutil.rmtree, pki, True)
        pki_init(pki)
        ch = ClickHouse(self).start()
        hub = Hub(self, ch, pki=pki, object_store=f'backend = "fs"; path = "{hub_mnt}/objects";').start()
        self.assertIn(hub.create_project("demo")[0], (200, 201))
        hub.allow_edge("edge1")  # edges write only into projects they are registered to
        read, up = hub.create_token("demo", "read"), hub.create_token("demo", "upload")
        c = pki_edge(pki, "edge1")
        edge = Edge(self, edge_id="edge1", retention={"min_free_mb": 4, "reserve_mb": 2},
                    hub={"url": hub.repl_url, "ca": os.path.join(pki, "ca.crt"), "cert": c["crt"], "key": c["key"]},
                    replication="backoff_initial_ms = 50; backoff_max_ms = 500; interval_ms = 100;")
        with open(edge.cfg) as f:
            cfg = f.read().replace(f'data_dir = "{edge.dir}/data"', f'data_dir = "{edge_mnt}/data"')
        with open(edge.cfg, "w") as f:
            f.write(cfg)
        edge.start()
        self.addCleanup(edge.kill9)
        self.addCleanup(hub.stop)
        data = b"main;work;leaf 7\nmain;idle 3\n"

        def hub_total(svc):
            st, js = hub.query("demo", "table", read, service=svc, **{"from": "0", "until": str(int(time.time()) + 3600)})
            return js.get("total") if st == 200 else None

        def wait(cond, what, timeout=60):
            deadline = time.time() + timeout
            while time.time() < deadline:
                if cond():
                    return
                time.sleep(0.3)
            self.fail(f"{what}; hub log: {hub.read_log()[-1200:]}; edge log: {edge.read_log()[-1200:]}")

        self.assertEqual(edge.upload(data, format="folded", service="s")[0], 200)
        wait(lambda: hub_total("s") == 10, "first upload replicated")
        # hub away: a backlog builds, then the edge's disk fills
        hub.stop()
        for _ in range(3):
            self.assertEqual(edge.upload(data, format="folded", service="s")[0], 200)
        fill(os.path.join(edge_mnt, "filler"))
        st, body = edge.upload(data, format="folded", service="s")
        self.assertEqual(st, 503, body)
        self.assertIn("disk is full", body.decode())
        self.assertGreater(edge.metrics()["wt_edge_unreplicated_uploads"], 0)
        # the hub returns: the backlog drains although the edge's disk is full
        hub.start()
        wait(lambda: hub_total("s") == 40, "backlog drained with the edge's disk full")
        wait(lambda: edge.metrics()["wt_edge_unreplicated_uploads"] == 0, "edge cursor advanced")
        self.assertEqual(edge.metrics()["wt_edge_disk_full"], 1)
        os.remove(os.path.join(edge_mnt, "filler"))
        # the hub's object store fills: direct uploads 503, batches refused whole
        fill(os.path.join(hub_mnt, "filler"))
        st, js = hub.upload(data, up, "direct", format="folded")
        self.assertEqual(st, 503, js)
        self.assertIn("object store is full", js["detail"])
        self.assertEqual(edge.upload(data, format="folded", service="s")[0], 200)
        time.sleep(2)
        self.assertEqual(hub_total("s"), 40)
        self.assertEqual(edge.metrics()["wt_edge_unreplicated_uploads"], 1)
        os.remove(os.path.join(hub_mnt, "filler"))
        wait(lambda: hub_total("s") == 50, "batch stored once space returned")
        st, js = hub.upload(data, up, "direct", format="folded")
        self.assertEqual(st, 200, js)
        self.assertEqual(edge.metrics()["wt_edge_disk_full"], 0)


def many_stacks_gz(n):
    """A folded profile of n distinct stacks (gzip), like a long-running
    service's collapsed output."""
    import gzip
    return gzip.compress("".join(
        f"main;svc.handler{i % 7};lib.process{(i // 7) % 11};core.step{(i // 77) % 13};"
        f"util.work{(i // 1001) % 17};leaf{i} {1 + i % 5}\n" for i in range(n)).encode(), 6)


class LargeUploadMemory(unittest.TestCase):
    """Memory a large upload took is given back afterwards (malloc_trim
    after requests over 1 MiB): 320 000 distinct stacks (1.2 MB gzip)."""

    @classmethod
    def setUpClass(cls):
        cls.data = many_stacks_gz(320000)

    def settle(self, pid, limit, seconds=30):
        deadline = time.time() + seconds
        rss = rss_mb(pid)
        while time.time() < deadline and rss >= limit:
            time.sleep(1)
            rss = rss_mb(pid)
        return rss

    def test_edge_gives_memory_back(self):
        edge = Edge(self).start()
        s = Sampler(edge.proc.pid)
        st, body = edge.request("POST", "/v1/profiles?format=folded&service=big", body=self.data,
                                headers={"Authorization": f"Bearer {UPLOAD_TOKEN}"}, timeout=600)
        self.assertEqual(st, 200, body)
        self.assertEqual(json.loads(body)["samples"], 320000)
        peak = s.done()
        rss = self.settle(edge.proc.pid, 200)
        # before: peak 377-433 MB, then 271-327 MB held; now ~95 MB (RocksDB memtables)
        if not SANITIZED:
            self.assertLess(rss, 200, f"edge RSS {rss:.0f} MB 30 s after the upload (peak {peak:.0f} MB)")

    def test_hub_gives_memory_back(self):
        ch = ClickHouse(self).start()
        # the frames cache (hub.stack_cache_bytes, 256 MiB by default) is
        # memory kept on purpose, not given back: small here, as in
        # test_large_upload
        hub = Hub(self, ch, hub_extra="stack_cache_bytes = 16777216;").start()
        self.assertIn(hub.create_project("demo")[0], (200, 201))
        tok = hub.create_token("demo", "upload")
        base = rss_mb(hub.proc.pid)
        # a 503 (ClickHouse slow on a loaded machine) is retried as a
        # client would: a direct upload's retry stores only what is missing
        for _ in range(3):
            st, js = hub.request("POST", "/v1/profiles?service=big&format=folded", self.data, token=tok,
                                 timeout=600)
            if st != 503:
                break
            time.sleep(2)
        self.assertEqual(st, 200, js)
        rss = self.settle(hub.proc.pid, base + 40)
        # before: 14 -> 77 MB held (peak 205); now ~32 MB
        if not SANITIZED:
            self.assertLess(rss, base + 40, f"hub RSS {base:.0f} -> {rss:.0f} MB 30 s after the upload")


if __name__ == "__main__":
    unittest.main()
