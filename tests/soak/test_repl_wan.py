#!/usr/bin/env python3
"""test_repl_wan.py — `make soak`: replication exactly-once and tenancy,
everything at once, with the edges behind a WAN-like link.

Network: the test creates network namespaces named wtwan<pid>h (hubs,
ClickHouse and this test process itself) and wtwan<pid>e<k> (one per edge),
joined by veth pairs with addresses from 10.77.0.0/16 that exist only
inside those namespaces; the hubs' replication address is 10.77.0.1 on the
hub namespace's loopback, so nothing reaches any other network. The link
is 200 ms RTT with 2 % loss each way: when the kernel has netem, each veth
end gets `tc qdisc ... netem delay 100ms loss 2%`; when it has not (the
test prints tc's exact error; WT_SOAK_REQUIRE_NETEM=1 makes that a
failure) each edge is joined to the hub namespace by tests/soak/wanlink.py
instead of a veth: a userspace emulator holding a TUN device in each of
the two namespaces that forwards every packet after 100 ms and drops 2 %
of them (seeded by WT_SOAK_SEED). The test prints which one it used, the
link's TCP connect time and, for wanlink, its packet counters. In the
middle of the run every edge link is cut for a partition (60 s at the
default duration: netem links go down, wanlink drops everything) and
comes back.

At once, for WT_SOAK_SECONDS (default 300; WT_SOAK_SEED picks the random
choices): two hubs on one ClickHouse (insert blocks of 1500 rows, so every
upload is a multi-block insert), each edge failing over between them;
  wan1    steady uploads of two files (the big one is 3 sample blocks);
  slow    its applies take 1 s more per block (WT_FAILPOINT_SLOW), longer
          than its replication.timeout_s of 5 s: it times out and resends
          while the first apply still holds the claim;
  wipe    stopped (after its backlog drained), its data dir removed and
          started again, twice: a new incarnation, seqs from 1;
  foreign a valid certificate registered only to project "other": its edge
          process replicates uploads for "demo", and crafted batches (for
          "secret", "demo", a mixed batch, a forged seq 900000001 in
          "other", another edge's id) go straight to the hubs;
and a chaos loop that kills a hub (SIGKILL at a random moment, or the
hub's own crash switch WT_FAILPOINT=repl_after_block:K, i.e. right after
the K-th block INSERT) and restarts it. At the end, links up and both hubs
running: per service, the samples and rollups stored equal the uploads the
edges acknowledged times the file's sample count (no loss, no duplicate);
the ledger holds one applied seq per acknowledged upload; nothing at all is
stored in "secret" or "other" nor from the foreign edge in "demo".

Before the chaos it measures replication throughput: a backlog of
WT_SOAK_TPUT_UPLOADS uploads (default 60) drained by an edge over the link
and by one on loopback, on a third hub with default settings, alternately
for WT_SOAK_TPUT_ROUNDS rounds (default 2); samples/s and bytes/s are
printed, with the TCP retransmissions in the link edge's namespace.

Cleanup: every process the run starts lives in one of its namespaces. The
harness cleanups stop them, then Net.teardown kills whatever is left in the
namespaces and removes them (their veths and qdiscs go with them; the
wanlink processes get SIGTERM first and their TUN devices go with them) — after
the test passed or failed (addCleanup), on SIGTERM (turned into an exit),
and at interpreter exit (atexit: also after Ctrl-C, which unittest does not
clean up after). Namespaces of an earlier run whose process is gone are
removed at start.
Needs root (ip netns). Run: `make soak` or
`python3 tests/soak/test_repl_wan.py -v`.
"""
import atexit
import ctypes
import http.client
import json
import os
import random
import re
import select
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from harness.clickhouse import ClickHouse  # noqa: E402
from harness.edge import Edge, ROOT  # noqa: E402
from harness.hub import Hub, BIN, CORPUS  # noqa: E402
from test_repl_exactly_once import batch_msg, folded, upload_msg  # noqa: E402

WTCTL = os.path.join(BIN, "wtctl")
BIG = os.path.join(CORPUS, "folded/cargo-flamegraph__rust-rayon-stacks.folded")       # 4133 stacks
SMALL = os.path.join(CORPUS, "folded/flamegraph__perf-vertx-java-collapsed-all.txt")  # 199 stacks
PREFIX = "wtwan"
HUB_ADDR = "10.77.0.1"
CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)
_tls = threading.local()


def awk_total(path):
    out = subprocess.run(["awk", r'{n=$NF; sub(/^\[/,"",n); sub(/\]$/,"",n); s+=n} END {printf "%d", s}', path],
                         check=True, capture_output=True, text=True).stdout
    return int(out)


def setns(path):
    """Move the calling thread (and what it starts later) into a netns."""
    fd = os.open(path, os.O_RDONLY)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            e = ctypes.get_errno()
            raise OSError(e, f"setns {path}: {os.strerror(e)}")
    finally:
        os.close(fd)


def ip(*args, ns=None, check=True):
    cmd = (["ip", "netns", "exec", ns] if ns else []) + list(args)
    out = subprocess.run(cmd, capture_output=True, text=True)
    if check and out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {out.stderr.strip()}")
    return out


def in_ns(ns, fn, *a, **kw):
    """fn(*a, **kw) in a short-lived thread inside netns `ns`."""
    res = {}

    def run():
        try:
            setns("/run/netns/" + ns)
            _tls.ns = ns
            res["v"] = fn(*a, **kw)
        except BaseException as e:  # handed to the caller
            res["e"] = e
    t = threading.Thread(target=run)
    t.start()
    t.join()
    if "e" in res:
        raise res["e"]
    return res["v"]


WANLINK = os.path.join(HERE, "wanlink.py")


class Net:
    """The namespaces, veths, qdiscs and wanlink processes of one run;
    teardown() is idempotent and safe to call from atexit or a signal
    handler. The link is netem on veth when the kernel has it, else
    wanlink.py (same delay and loss)."""

    def __init__(self, netem="delay 100ms loss 2%", delay_ms=100, loss=0.02, seed=1):
        self.tag = f"{PREFIX}{os.getpid()}"
        self.hub_ns = self.tag + "h"
        self.edge_ns = {}   # k -> ns name
        self.netem = netem
        self.netem_error = None
        self.delay_ms, self.loss, self.seed = delay_ms, loss, seed
        self.emulator = None  # "netem" or "wanlink", chosen by setup_hub
        self.links = {}       # k -> wanlink Popen
        self.link_dir = None  # wanlink logs and counters
        self.created = []
        self.root_fd = os.open("/proc/self/ns/net", os.O_RDONLY)
        self.lock = threading.Lock()

    @staticmethod
    def remove_leftovers():
        """Namespaces of earlier runs (prefix + a pid no longer alive)."""
        for line in ip("ip", "netns", "list", check=False).stdout.splitlines():
            name = line.split()[0] if line.split() else ""
            m = re.match(PREFIX + r"(\d+)[he]", name)
            if not m:
                continue
            try:
                os.kill(int(m.group(1)), 0)
                continue  # its run is still going
            except ProcessLookupError:
                pass
            except PermissionError:
                continue
            Net._kill_in(name)
            ip("ip", "netns", "del", name, check=False)
            print(f"wan soak: removed leftover namespace {name}", flush=True)

    @staticmethod
    def _kill_in(ns):
        for pid in ip("ip", "netns", "pids", ns, check=False).stdout.split():
            if int(pid) != os.getpid():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except OSError:
                    pass

    def setup_hub(self):
        ip("ip", "netns", "add", self.hub_ns)
        self.created.append(self.hub_ns)
        ip("ip", "link", "set", "lo", "up", ns=self.hub_ns)
        ip("ip", "addr", "add", HUB_ADDR + "/32", "dev", "lo", ns=self.hub_ns)
        # this process (and every process it starts from now) lives there
        setns("/run/netns/" + self.hub_ns)
        # does the kernel have netem? (a veth pair that exists for the question)
        ip("ip", "link", "add", "wprobe0", "type", "veth", "peer", "name", "wprobe1", ns=self.hub_ns)
        out = ip("tc", "qdisc", "add", "dev", "wprobe0", "root", "netem", *self.netem.split(), ns=self.hub_ns,
                 check=False)
        ip("ip", "link", "del", "wprobe0", ns=self.hub_ns, check=False)
        if out.returncode != 0:
            self.netem_error = out.stderr.strip() or f"tc exited {out.returncode}"
            self.emulator = "wanlink"
            self.link_dir = tempfile.mkdtemp(prefix="wt-soak-wanlink-")
        else:
            self.emulator = "netem"

    def _start_wanlink(self, k, ns):
        """wanlink.py between ns (device te<k>) and the hub namespace (th<k>);
        it runs in the hub namespace (this process's)."""
        h, e = f"th{k}", f"te{k}"
        err = open(os.path.join(self.link_dir, f"wanlink{k}.log"), "ab")
        p = subprocess.Popen([sys.executable, WANLINK, "--edge-ns", ns, "--edge-dev", e, "--hub-ns", self.hub_ns,
                              "--hub-dev", h, "--delay-ms", str(self.delay_ms), "--loss", str(self.loss),
                              "--seed", str(self.seed * 1000 + k), "--stats", self.stats_path(k)],
                             stdout=subprocess.PIPE, stderr=err)
        err.close()
        self.links[k] = p
        r, _, _ = select.select([p.stdout], [], [], 10)
        line = p.stdout.readline() if r else b""
        if line.strip() != b"ready":
            raise RuntimeError(f"wanlink for edge {k} did not start: {line!r}, exit {p.poll()}: "
                               + open(os.path.join(self.link_dir, f"wanlink{k}.log")).read()[-2000:])
        ip("ip", "addr", "add", f"10.77.{k}.1", "peer", f"10.77.{k}.2", "dev", h, ns=self.hub_ns)
        ip("ip", "link", "set", h, "up", ns=self.hub_ns)
        ip("ip", "addr", "add", f"10.77.{k}.2", "peer", f"10.77.{k}.1", "dev", e, ns=ns)
        ip("ip", "link", "set", e, "up", ns=ns)
        ip("ip", "route", "add", HUB_ADDR + "/32", "via", f"10.77.{k}.1", ns=ns)

    def stats_path(self, k):
        return os.path.join(self.link_dir, f"wanlink{k}.json")

    def link_stats(self, k):
        """wanlink's counters for edge k (refreshed every second), or None."""
        if self.emulator != "wanlink":
            return None
        try:
            with open(self.stats_path(k)) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def add_edge(self, k):
        ns = f"{self.tag}e{k}"
        ip("ip", "netns", "add", ns)
        self.created.append(ns)
        self.edge_ns[k] = ns
        h, e = f"wh{k}", f"we{k}"
        ip("ip", "link", "set", "lo", "up", ns=ns)
        if self.emulator == "wanlink":
            self._start_wanlink(k, ns)
            return ns
        ip("ip", "link", "add", h, "netns", self.hub_ns, "type", "veth", "peer", "name", e, "netns", ns)
        ip("ip", "addr", "add", f"10.77.{k}.1/24", "dev", h, ns=self.hub_ns)
        ip("ip", "link", "set", h, "up", ns=self.hub_ns)
        ip("ip", "addr", "add", f"10.77.{k}.2/24", "dev", e, ns=ns)
        ip("ip", "link", "set", e, "up", ns=ns)
        ip("ip", "route", "add", HUB_ADDR + "/32", "via", f"10.77.{k}.1", ns=ns)
        if self.netem and self.netem_error is None:
            for dev, n in ((h, self.hub_ns), (e, ns)):
                out = ip("tc", "qdisc", "add", "dev", dev, "root", "netem", *self.netem.split(), "limit", "100000",
                         ns=n, check=False)
                if out.returncode != 0:
                    self.netem_error = out.stderr.strip() or f"tc exited {out.returncode}"
                    break
        return ns

    def partition(self, down):
        for k in self.edge_ns:
            if self.emulator == "wanlink":
                self.links[k].send_signal(signal.SIGUSR1 if down else signal.SIGUSR2)
            else:
                ip("ip", "link", "set", f"wh{k}", "down" if down else "up", ns=self.hub_ns)

    def shaped(self):
        return self.emulator == "wanlink" or (bool(self.netem) and self.netem_error is None)

    def describe(self):
        if self.emulator == "wanlink":
            return (f"wanlink.py userspace TUN emulator: {2 * self.delay_ms} ms RTT, {self.loss * 100:g} % loss"
                    " each way")
        return f"netem {self.netem}: {2 * self.delay_ms} ms RTT, {self.loss * 100:g} % loss each way"

    def teardown(self):
        with self.lock:
            if self.root_fd is not None:
                try:
                    _libc.setns(self.root_fd, CLONE_NEWNET)  # leave the hub namespace
                except Exception:
                    pass
            for p in self.links.values():
                if p.poll() is None:
                    p.terminate()
            for p in self.links.values():
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
                p.stdout.close()
            self.links = {}
            for ns in reversed(self.created):
                self._kill_in(ns)
                ip("ip", "netns", "del", ns, check=False)
            self.created = []
            if self.link_dir:
                keep = os.environ.get("WT_SOAK_LOGS")
                if keep:
                    shutil.copytree(self.link_dir, os.path.join(keep, "wanlink"), dirs_exist_ok=True)
                shutil.rmtree(self.link_dir, True)
                self.link_dir = None
            if self.root_fd is not None:
                os.close(self.root_fd)
                self.root_fd = None


class NsEdge(Edge):
    """harness.edge.Edge run inside a network namespace (ns None: here)."""

    def __init__(self, *a, ns=None, **kw):
        self.ns = ns
        super().__init__(*a, **kw)

    def start(self, timeout=30, env=None):
        logf = open(self.log, "ab")
        pre = ["ip", "netns", "exec", self.ns] if self.ns else []
        self.proc = subprocess.Popen(pre + [os.path.join(BIN, "wt-edge"), "--config", self.cfg],
                                     stdout=logf, stderr=logf, env=dict(os.environ, **(env or {})))
        logf.close()
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"wt-edge exited with {self.proc.returncode}: {self.read_log()[-2000:]}")
            try:
                st, _ = self.request("GET", "/healthz", timeout=1)
                if st == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("wt-edge did not become healthy: " + self.read_log()[-2000:])

    def request(self, method, path, body=None, headers=None, timeout=60):
        if not self.ns or getattr(_tls, "ns", None) == self.ns:
            return Edge.request(self, method, path, body, headers, timeout)
        return in_ns(self.ns, Edge.request, self, method, path, body, headers, timeout)

    def set_hub_urls(self, urls):
        with open(self.cfg) as f:
            cfg = f.read()
        cfg = re.sub(r'hub = \{ (?:urls = \[[^\]]*\];|url = "[^"]*";)',
                     "hub = { urls = [" + ", ".join(f'"{u}"' for u in urls) + "];", cfg)
        with open(self.cfg, "w") as f:
            f.write(cfg)


class WanHub(Hub):
    """harness.hub.Hub whose replication listener takes every address of
    the hub namespace (the edges come in over their veths)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        with open(self.cfg) as f:
            cfg = f.read()
        with open(self.cfg, "w") as f:
            f.write(cfg.replace(f'listen = "127.0.0.1:{self.repl_port}"', f'listen = "0.0.0.0:{self.repl_port}"'))

    @property
    def wan_url(self):
        return f"https://{HUB_ADDR}:{self.repl_port}"


class ReplicationWan(unittest.TestCase):
    def setUp(self):
        if os.geteuid() != 0:
            self.fail("needs root for ip netns (network namespaces, veth, tc)")
        Net.remove_leftovers()
        self.net = Net(seed=int(os.environ.get("WT_SOAK_SEED", "1")))
        atexit.register(self.net.teardown)
        self.addCleanup(self.net.teardown)  # runs last: after the harness stopped its processes
        self._old_term = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        self.addCleanup(signal.signal, signal.SIGTERM, self._old_term)
        self.net.setup_hub()

    def tearDown(self):
        # the harness cleanups stop hubs, edges and ClickHouse; then Net.teardown
        pass

    # ---- helpers --------------------------------------------------------------------
    def q(self, sql):
        return self.ch.query(sql, database="watchtower").strip()

    def wait(self, cond, timeout, what):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                if cond():
                    return
            except OSError:
                pass
            time.sleep(0.3)
        self.fail(f"timed out after {timeout}s: {what}")

    def edge(self, k, edge_id, urls, replication="", project="demo"):
        ns = self.net.add_edge(k) if k is not None else None
        crt, key = os.path.join(self.pki, edge_id + ".crt"), os.path.join(self.pki, edge_id + ".key")
        if not os.path.exists(crt):
            subprocess.run([WTCTL, "pki", "issue-edge", "--ca", self.pki, "--edge-id", edge_id], check=True,
                           capture_output=True)
        e = NsEdge(self, ns=ns, edge_id=edge_id, project=project,
                   hub={"urls": urls, "ca": os.path.join(self.pki, "ca.crt"), "cert": crt, "key": key},
                   replication="backoff_initial_ms = 100; backoff_max_ms = 2000; interval_ms = 200; " + replication)
        return e

    def tls_ctx(self, edge_id):
        ctx = ssl.create_default_context(cafile=os.path.join(self.pki, "ca.crt"))
        ctx.load_cert_chain(os.path.join(self.pki, edge_id + ".crt"), os.path.join(self.pki, edge_id + ".key"))
        return ctx

    def post_as(self, edge_id, hub, method, path, body=None, timeout=20):
        """A request on a hub's replication port with edge_id's certificate,
        from edge_id's namespace over its link: (status, json or bytes)."""
        def do():
            c = http.client.HTTPSConnection(HUB_ADDR, hub.repl_port, context=self.tls_ctx(edge_id),
                                            timeout=timeout)
            try:
                h = {"Content-Type": "application/x-wt-repl-batch", "Content-Encoding": "identity"} if body else {}
                c.request(method, path, body=body, headers=h)
                r = c.getresponse()
                data = r.read()
            finally:
                c.close()
            try:
                return r.status, json.loads(data) if data else None
            except ValueError:
                return r.status, data
        return in_ns(self.foreign.ns, do)

    def keep_logs(self):
        out = os.environ.get("WT_SOAK_LOGS")
        if out:
            os.makedirs(out, exist_ok=True)
            for name, path in self.keep:
                try:
                    shutil.copy(path, os.path.join(out, name))
                except OSError:
                    pass

    # ---- throughput: drain a backlog over the link and on loopback ---------------------
    def measure_drain(self, e, hub_url, service, n, data, per):
        """Fill e's buffer with n uploads while it has no reachable hub,
        then give it hub_url and time until the hub holds them all."""
        e.set_hub_urls(["https://127.0.0.1:9"])  # nothing listens there: the backlog builds up
        e.start()
        for _ in range(n):
            st, body = e.upload(data, service=service, format="folded")
            self.assertEqual(st, 200, body)
        e.stop()
        e.set_hub_urls([hub_url])
        t0 = time.time()
        e.start()
        want = n * per
        m = {}

        def done():  # every upload acknowledged to the edge
            m.clear()
            m.update(e.metrics())
            return m.get("wt_edge_repl_uploads_sent_total") == n and m.get("wt_edge_repl_backlog_uploads") == 0
        self.wait(done, 600, f"{service}: backlog of {n} uploads drained")
        dt = time.time() - t0
        e.stop()
        got = int(self.q(f"SELECT sum(value) FROM profile_samples_v1 WHERE project = 'demo' AND service = '{service}'"))
        self.assertEqual(got, want, f"{service}: drained backlog stored once")
        return {"s": dt, "samples_s": want / dt, "bytes_s": m["wt_edge_repl_bytes_sent_total"] / dt,
                "raw_bytes_s": m["wt_edge_repl_bytes_uncompressed_total"] / dt,
                "batches": m["wt_edge_repl_batches_sent_total"]}

    # ---- the scenario -----------------------------------------------------------------
    def test_wan_soak(self):
        seconds = int(os.environ.get("WT_SOAK_SECONDS", "300"))
        rnd = random.Random(int(os.environ.get("WT_SOAK_SEED", "1")))
        n_tput = int(os.environ.get("WT_SOAK_TPUT_UPLOADS", "60"))
        part_s = max(10, min(60, seconds // 5))
        t_start = time.time()

        self.pki = tempfile.mkdtemp(prefix="wt-soak-pki-")
        self.addCleanup(shutil.rmtree, self.pki, True)
        subprocess.run([WTCTL, "pki", "init", "--dir", self.pki, "--hub-host", "127.0.0.1",
                        "--hub-host", HUB_ADDR], check=True, capture_output=True)
        self.ch = ClickHouse(self)
        self.ch.start()
        slow_ms = 1000
        hub_env = {"WT_FAILPOINT_SLOW": f"slow:{slow_ms}"}
        # a dead hub's claim blocks its seqs for claim_ttl_s: short here
        hubs = [WanHub(self, self.ch, pki=self.pki, clickhouse_extra="insert_batch_rows = 1500;",
                       repl_extra="claim_ttl_s = 12;", ch_timeout_ms=5000) for _ in range(2)]
        for h in hubs:
            h.start(env=hub_env)
        hub = hubs[0]
        self.keep = []  # (name, log path): copied to $WT_SOAK_LOGS at the end when set
        self.keep += [(f"hub{i + 1}.log", h.log) for i, h in enumerate(hubs)]
        for p in ("demo", "secret", "other"):
            st, js = hub.create_project(p)
            self.assertIn(st, (200, 201), js)
        read = hub.create_token("demo", "read")
        for e in ("wan1", "slow", "wipe", "tput-wan", "tput-lo"):
            hub.allow_edge(e, "demo")
        hub.allow_edge("foreign", "other")  # the foreign edge may write "other" only (and never does validly)
        with open(BIG, "rb") as f:
            big = f.read()
        with open(SMALL, "rb") as f:
            small = f.read()
        per = {BIG: awk_total(BIG), SMALL: awk_total(SMALL)}

        # -- 1. throughput over the link and on loopback (a third hub, default settings)
        thub = WanHub(self, self.ch, pki=self.pki)
        thub.start()
        e_lo = self.edge(None, "tput-lo", [thub.repl_url], "batch_max_uploads = 64;")
        e_wan = self.edge(9, "tput-wan", [thub.wan_url], "batch_max_uploads = 64;")
        if self.net.netem_error:
            msg = (f"wan soak: netem is NOT available here: `tc qdisc add dev wprobe0 root netem "
                   f"{self.net.netem}` -> {self.net.netem_error!r}; the edges are joined by tests/soak/wanlink.py"
                   " (userspace TUN link emulator; the partition drops everything)")
            print(msg, flush=True)
            if os.environ.get("WT_SOAK_REQUIRE_NETEM") == "1":
                self.fail(msg)
        link = self.net.describe()
        print(f"wan soak: link: {link}", flush=True)
        # the link really has the delay: a TCP connect takes one round trip
        rtts = []
        for _ in range(5):
            def connect():
                t = time.monotonic()
                socket.create_connection((HUB_ADDR, thub.repl_port), timeout=10).close()
                return (time.monotonic() - t) * 1000
            rtts.append(in_ns(e_wan.ns, connect))
        print(f"wan soak: TCP connect over the link: {', '.join(f'{r:.0f}' for r in rtts)} ms", flush=True)
        self.assertGreaterEqual(min(rtts), 1.9 * self.net.delay_ms, "the link delays packets")
        rates = {"loopback": [], "link": []}

        def tcp_counters(ns):
            lines = [ln.split() for ln in ip("cat", "/proc/net/snmp", ns=ns).stdout.splitlines()
                     if ln.startswith("Tcp:")]
            return dict(zip(lines[0][1:], map(int, lines[1][1:])))
        for r in range(int(os.environ.get("WT_SOAK_TPUT_ROUNDS", "2"))):  # interleaved: load changes alike
            for name, e, url in (("loopback", e_lo, thub.repl_url), ("link", e_wan, thub.wan_url)):
                c0 = tcp_counters(e.ns) if e.ns else None
                t = self.measure_drain(e, url, f"tput-{name}-{r}", n_tput, big, per[BIG])
                if c0 is not None:
                    c1 = tcp_counters(e.ns)
                    # the namespace's loopback (the test talking to the edge) retransmits nothing
                    t["batches"] = f"{t['batches']:.0f} batches, TCP retransmitted segments in the edge's" \
                        f" namespace {c1['RetransSegs'] - c0['RetransSegs']}"
                else:
                    t["batches"] = f"{t['batches']:.0f} batches"
                rates[name].append(t["samples_s"])
                print(f"wan soak: round {r + 1}: drain of {n_tput} uploads x {per[BIG]} samples over"
                      f" {name if name == 'loopback' else 'the link (' + link + ')'}: {t['s']:.1f} s,"
                      f" {t['samples_s']:,.0f} samples/s, {t['bytes_s'] / 1e6:.2f} MB/s sent (zstd),"
                      f" {t['raw_bytes_s'] / 1e6:.2f} MB/s uncompressed, {t['batches']}", flush=True)
        print(f"wan soak: link/loopback drain rate {sum(rates['link']) / sum(rates['loopback']):.2f}"
              f" (mean samples/s: link {sum(rates['link']) / len(rates['link']):,.0f},"
              f" loopback {sum(rates['loopback']) / len(rates['loopback']):,.0f})", flush=True)
        ls = self.net.link_stats(9)
        if ls is not None:
            print(f"wan soak: wanlink counters of the throughput link: {ls}", flush=True)
            self.assertGreater(ls["edge_to_hub"]["lost"] + ls["hub_to_edge"]["lost"], 0, "the link drops packets")
        thub.cleanup()

        # -- 2. the edges
        urls12 = [hubs[0].wan_url, hubs[1].wan_url]
        urls21 = [hubs[1].wan_url, hubs[0].wan_url]
        wan1 = self.edge(1, "wan1", urls12)
        slow = self.edge(2, "slow", urls21, "timeout_s = 5;")
        wipe = self.edge(3, "wipe", urls12)
        self.foreign = self.edge(4, "foreign", urls12)
        for e in (wan1, slow, wipe, self.foreign):
            e.start()
            self.keep.append((f"edge-{e.edge_id}.log", e.log))
        self.addCleanup(self.keep_logs)  # before the harness removes the edges' and hubs' dirs
        # the foreign edge gets no config for "demo" (and no token hashes of it)
        st, cfg = self.post_as("foreign", hub, "GET", "/v1/edges/foreign/config?project=demo")
        self.assertEqual((st, cfg["projects"], cfg["not_allowed"]), (200, [], ["demo"]), cfg)

        acked, tried = {}, {}
        lock = threading.Lock()
        stop = threading.Event()
        wipe_pause = threading.Event()
        wipe_idle = threading.Event()
        wipe_gen = [0]
        errors = []

        def client(e, service, data, period, pause=None, idle=None):
            try:
                setns("/run/netns/" + e.ns)
                _tls.ns = e.ns
                while not stop.is_set():
                    if pause is not None and pause.is_set():
                        idle.set()
                        time.sleep(0.1)
                        continue
                    svc = service() if callable(service) else service
                    try:
                        st, _ = e.upload(data, service=svc, format="folded")
                    except OSError:
                        st = 0
                    with lock:
                        tried[svc] = tried.get(svc, 0) + 1
                        if st == 200:
                            acked[svc] = acked.get(svc, 0) + 1
                            self.files[svc] = data
                    stop.wait(period * rnd.uniform(0.5, 1.5))
            except BaseException as ex:  # reported by the main thread
                errors.append(repr(ex))
        self.files = {}
        threads = [threading.Thread(target=client, args=a) for a in (
            (wan1, "wan1-big", big, 3.0), (wan1, "wan1-small", small, 1.0),
            (slow, "slow-big", big, 12.0),
            (wipe, lambda: f"wipe-g{wipe_gen[0]}", small, 1.0, wipe_pause, wipe_idle),
            (self.foreign, "foreign-demo", small, 3.0))]
        for t in threads:
            t.start()

        # crafted batches from the foreign edge's certificate, over its link
        fdata, ftotal, fleaves = folded("foreign", 300)
        now = time.time_ns()
        crafted = {
            "secret": batch_msg("foreign", [upload_msg(1, "secret", "foreign-x", fdata, fleaves, now, True)], 1, 1),
            "demo": batch_msg("foreign", [upload_msg(1, "demo", "foreign-x", fdata, fleaves, now, True)], 1, 1),
            "mixed": batch_msg("foreign", [upload_msg(1, "other", "foreign-x", fdata, fleaves, now, True),
                                           upload_msg(2, "demo", "foreign-x", fdata, fleaves, now, True)], 1, 2),
            "forged-seq": batch_msg("foreign", [upload_msg(900000001, "other", "foreign-x", fdata, fleaves, now,
                                                           True)], 900000001, 900000001),
            "as-wan1": batch_msg("wan1", [upload_msg(1, "demo", "foreign-x", fdata, fleaves, now, True)], 1, 1),
        }
        crafted_answers = {k: [] for k in crafted}

        def foreign_try():
            for name, body in crafted.items():
                h = rnd.choice(hubs)
                try:
                    st, js = self.post_as("foreign", h, "POST", "/v1/replicate", body)
                except (OSError, http.client.HTTPException):
                    st, js = 0, None
                crafted_answers[name].append((st, js))

        # -- 3. chaos for `seconds`, a partition in the middle, two wipes
        actions = {"sigkill": 0, "crash_after_block": 0, "restart_armed": 0, "wipe": 0}
        events = []
        part_at = t0 = time.time()
        part_at = t0 + seconds / 2 - part_s / 2
        wipe_at = [t0 + seconds * 0.2, t0 + seconds * 0.8]
        partitioned = False
        part_done = False
        wan1_backlog_at_heal = None
        deadline = t0 + seconds

        def revive():
            for i, h in enumerate(hubs):
                if h.proc is not None and h.proc.poll() is not None:
                    actions["crash_after_block"] += 1
                    events.append(f"{time.time() - t0:.0f}s hub{i + 1} died at its armed block")
                    h.proc = None
                if h.proc is None:
                    h.start(env=hub_env)

        def do_wipe():
            wipe_pause.set()
            wipe_idle.clear()
            self.assertTrue(wipe_idle.wait(60), "wipe client did not pause")
            self.wait(lambda: wipe.metrics().get("wt_edge_repl_backlog_uploads") == 0, 120,
                      "the wipe edge's backlog drained before its data dir is removed")
            wipe.stop()
            shutil.rmtree(os.path.join(wipe.dir, "data"))
            wipe_gen[0] += 1
            wipe.start()
            wipe_pause.clear()
            actions["wipe"] += 1
            events.append(f"{time.time() - t0:.0f}s wipe edge restarted empty (generation {wipe_gen[0]})")

        try:
            while time.time() < deadline:
                stop.wait(rnd.uniform(4, 10))
                now_t = time.time()
                revive()
                if not partitioned and not part_done and now_t >= part_at:
                    self.net.partition(True)
                    partitioned, part_from = True, now_t  # lasts part_s from when it began, not from part_at
                    events.append(f"{now_t - t0:.0f}s partition: every edge link down")
                elif partitioned and now_t >= part_from + part_s:
                    wan1_backlog_at_heal = wan1.metrics().get("wt_edge_repl_backlog_uploads")
                    self.net.partition(False)
                    partitioned, part_done = False, True
                    events.append(f"{now_t - t0:.0f}s partition healed after {now_t - part_from:.0f}s"
                                  f" (wan1 backlog {wan1_backlog_at_heal:.0f})")
                if wipe_at and now_t >= wipe_at[0] and not partitioned:
                    wipe_at.pop(0)
                    do_wipe()
                    continue
                if not partitioned:  # over a cut wanlink each crafted batch would wait out its timeout
                    foreign_try()
                # kill one hub (the other is running): SIGKILL now, or arm its crash switch
                i = rnd.randrange(2)
                h = hubs[i]
                if hubs[1 - i].proc is None or hubs[1 - i].proc.poll() is not None:
                    continue
                h.proc.kill()
                h.proc.wait()
                h.proc = None
                actions["sigkill"] += 1
                stop.wait(rnd.uniform(0.5, 3))
                if rnd.random() < 0.6:
                    k = rnd.randint(1, 40)
                    h.start(env=dict(hub_env, WT_FAILPOINT=f"repl_after_block:{k}"))
                    actions["restart_armed"] += 1
                else:
                    h.start(env=hub_env)
                events.append(f"{time.time() - t0:.0f}s hub{i + 1} SIGKILLed and restarted")
            if partitioned:
                self.net.partition(False)
                part_done = True
        finally:
            stop.set()
            for t in threads:
                t.join()
        self.assertEqual(errors, [])
        self.assertTrue(part_done, "the partition happened")
        # both hubs up without crash switches for the drain
        for h in hubs:
            if h.proc is not None and h.proc.poll() is not None:
                actions["crash_after_block"] += 1
            h.proc = None if h.proc is None or h.proc.poll() is not None else h.proc
            if h.proc is not None:
                h.stop()
            h.start(env=hub_env)
        foreign_try()
        chaos_s = time.time() - t0
        print(f"wan soak: {chaos_s:.0f}s of chaos ({link}), partition {part_s}s, actions {actions}", flush=True)
        for ev in events:
            print("  " + ev, flush=True)
        for k in (1, 2, 3, 4):
            ls = self.net.link_stats(k)
            if ls is not None:
                print(f"  wanlink edge {k}: " + ", ".join(
                    f"{d} {v['packets']} packets {v['lost']} lost {v['partitioned']} partitioned"
                    for d, v in ls.items() if isinstance(v, dict)), flush=True)
                self.assertEqual(ls["partitions"], 1, "the partition reached the emulator")
        print(f"wan soak: acknowledged uploads {dict(sorted(acked.items()))} (of {dict(sorted(tried.items()))}"
              " tried)", flush=True)

        # -- 4. drain, then exactly once per service
        want = {svc: n * per[BIG if self.files[svc] is big else SMALL] for svc, n in acked.items()
                if not svc.startswith("foreign")}

        def stored():
            rows = self.q("SELECT service, sum(value) FROM profile_samples_v1 WHERE project = 'demo'"
                          " AND service NOT LIKE 'tput-%' GROUP BY service FORMAT TSV")
            return {r.split("\t")[0]: int(r.split("\t")[1]) for r in rows.splitlines() if r}
        drain_t0 = time.time()
        got = {}

        last_print = [drain_t0]

        def drained():
            got.clear()
            got.update(stored())
            if time.time() - last_print[0] > 15:
                last_print[0] = time.time()
                missing = {s: (got.get(s, 0), v) for s, v in want.items() if got.get(s, 0) != v}
                backlog = {e.edge_id: e.metrics().get("wt_edge_repl_backlog_uploads") for e in (wan1, slow, wipe)}
                print(f"wan soak: draining {time.time() - drain_t0:.0f}s: (stored, expected) {missing},"
                      f" edge backlogs {backlog}", flush=True)
            if not all(got.get(s, 0) >= v for s, v in want.items()):
                return False
            # and acknowledged to the edges: the ledger's "applied" rows are
            # written after the data rows, before the answer
            return all(e.metrics().get("wt_edge_repl_backlog_uploads") == 0 for e in (wan1, slow, wipe))
        try:
            self.wait(drained, 600, "every acknowledged upload at the hub")
        finally:
            print(f"wan soak: drain after the chaos took {time.time() - drain_t0:.1f}s", flush=True)
        time.sleep(3)  # anything still in flight would show now
        got = stored()
        self.assertEqual(got, want, "samples per service at the hub = acknowledged uploads x file samples")
        rows = self.q("SELECT service, sum(self) FROM function_rollup_v1 WHERE project = 'demo'"
                      " AND sample_type != '_repl_marker' AND service NOT LIKE 'tput-%' GROUP BY service FORMAT TSV")
        rollup = {r.split("\t")[0]: int(r.split("\t")[1]) for r in rows.splitlines() if r}
        self.assertEqual(rollup, want, "rollup self per service = acknowledged uploads x file samples")
        st, js = hub.query("demo", "table", read, service="wan1-big",
                           **{"from": "0", "until": str(int(time.time()) + 3600)})
        self.assertEqual((st, js.get("total")), (200, want["wan1-big"]), "the hub's own API agrees")
        # the ledger: one applied seq per acknowledged upload, per edge
        acked_edge = {"wan1": acked.get("wan1-big", 0) + acked.get("wan1-small", 0),
                      "slow": acked.get("slow-big", 0),
                      "wipe": sum(n for s, n in acked.items() if s.startswith("wipe-"))}
        rows = self.q("SELECT edge_id, uniqExact(incarnation, seq), uniqExact(incarnation) FROM repl_ledger_v2"
                      " WHERE state = 2 AND edge_id IN ('wan1', 'slow', 'wipe', 'foreign')"
                      " GROUP BY edge_id FORMAT TSV")
        ledger = {r.split("\t")[0]: (int(r.split("\t")[1]), int(r.split("\t")[2])) for r in rows.splitlines()}
        self.assertEqual({k: v[0] for k, v in ledger.items()}, acked_edge, "applied seqs per edge")
        gens = len([s for s in acked if s.startswith("wipe-")])
        self.assertEqual(ledger["wipe"][1], gens, "one incarnation per generation of the wipe edge's data dir")

        # -- 5. tenancy: nothing where nobody was allowed to write
        for table in ("profile_samples_v1", "function_rollup_v1", "raw_objects_v1", "repl_ledger_v2"):
            n = int(self.q(f"SELECT count() FROM {table} WHERE project IN ('secret', 'other')"
                           f" OR (project = 'demo' AND service LIKE 'foreign%')"))
            self.assertEqual(n, 0, f"{table}: rows in projects the writer was not allowed to")
        self.assertEqual(self.q("SELECT count() FROM repl_ledger_v2 WHERE edge_id = 'foreign'"), "0")
        for h in hubs + [thub]:
            for p in ("secret", "other"):
                self.assertFalse(os.path.exists(os.path.join(h.dir, "data", "objects", "raw", p)),
                                 f"originals stored for {p}")
        answered = {k: sorted({st for st, _ in v}) for k, v in crafted_answers.items()}
        print(f"wan soak: foreign crafted batches, statuses seen {answered}", flush=True)
        for k, v in crafted_answers.items():
            self.assertTrue(any(st == 403 for st, _ in v), f"{k}: never refused with 403: {v[-3:]}")
            self.assertFalse([st for st, _ in v if st not in (0, 403, 503)], f"{k}: {v}")
        fm = self.foreign.metrics()
        self.assertGreater(fm.get('wt_edge_repl_errors_total{reason="http_4xx"}', 0), 0, "foreign edge refused")
        self.assertEqual(fm.get("wt_edge_repl_uploads_sent_total", 0), 0, "foreign edge: nothing acknowledged")

        # -- 6. the hard cases really happened
        sm, wm = slow.metrics(), wipe.metrics()
        timeouts = sm.get('wt_edge_repl_errors_total{reason="timeout"}', 0)
        print(f"wan soak: slow edge timeouts {timeouts:.0f},"
              f" busy answers {sm.get('wt_edge_repl_hub_busy_total', 0):.0f},"
              f" failovers {sm.get('wt_edge_repl_failovers_total', 0):.0f};"
              f" wipe edge other-incarnation answers {wm.get('wt_edge_repl_other_incarnation_total', 0):.0f};"
              f" wan1 backlog when the partition healed {wan1_backlog_at_heal}", flush=True)
        self.assertGreater(timeouts, 0, "the slow edge's applies outlasted its timeout")
        self.assertEqual(actions["wipe"], 2)
        self.assertGreater(wan1_backlog_at_heal or 0, 0, "the partition cut the edges off")
        logs = "".join(h.read_log() for h in hubs)
        self.assertGreater(actions["sigkill"], 0)
        self.assertIn("recovering interrupted replicated upload", logs, "a killed apply was recovered")
        print(f"wan soak: total run {time.time() - t_start:.0f}s", flush=True)


if __name__ == "__main__":
    unittest.main()
