#!/usr/bin/env python3
"""test_appliance.py — the local cluster scripts (appliance/up, ctl, down).

Starts a real cluster (private ClickHouse, hub, two edges) on a free port
range in a temporary directory, from a private copy of the binaries so the
test can "rebuild" one of them, and checks what docs/operations.md "## Local cluster"
promises: DIR/env holds every key and the documented ports, every process
answers its health check, `up` again is a no-op, `up` after a rebuild
restarts exactly the processes whose binary changed, `ctl stop/start/kill`
act on one process and keep DIR/env current, and `down` leaves no process
behind (also when a test fails: cleanup runs `down` and then kills any
recorded process whose executable still matches). With edge1's eBPF
sampler on (where the machine allows it): Debian's gzip gets full stacks
at the hub, and the explorer in headless chromium (names.spec.mjs) shows
a stock python3 program's Python function names.
"""
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request
import urllib.error

ROOT = os.environ.get("WT_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("BUILD", "build")
BIN = os.environ.get("WT_BIN") or os.path.join(ROOT, BUILD, "bin")
CORPUS = os.path.join(ROOT, "tests", "corpus")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # test_browser's harness
EDGES = 2
REQUIRED_KEYS = ["WT_HUB_URL", "WT_EDGE_URLS", "WT_ADMIN_TOKEN", "WT_PROJECT",
                 "WT_UPLOAD_TOKEN", "WT_READ_TOKEN", "WT_CLICKHOUSE_URL", "WT_BUILD_STAMP",
                 "WT_PID_CLICKHOUSE", "WT_PID_HUB", "WT_PID_EDGE1", "WT_PID_EDGE2"]
NAMES = ["clickhouse", "hub", "edge1", "edge2"]
# edge1's eBPF flush interval (appliance/up's WT_EBPF_FLUSH_S; the example
# config's 10 s would have each sampler test wait that long for the hub)
FLUSH_S = 2


def port_free(p):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", p))
        return True
    except OSError:
        return False
    finally:
        s.close()


def free_port_base(span):
    """A base N with N..N+span all free (the cluster uses N..N+10*EDGES+2)."""
    import random
    rnd = random.Random(os.getpid() ^ int(time.time()))
    for _ in range(200):
        base = rnd.randrange(20000, 60000, 50)
        if all(port_free(base + i) for i in range(span + 1)):
            return base
    raise RuntimeError("no free port range")


def read_env(d):
    env = {}
    with open(os.path.join(d, "env")) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            k, _, v = line.partition("=")
            vals = shlex.split(v)  # shell syntax: KEY='value'
            env[k] = vals[0] if vals else ""
    return env


def status_of(url, token=None, timeout=3):
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except (urllib.error.URLError, OSError):
        return None


def exe_of(pid):
    try:
        return os.readlink("/proc/%s/exe" % pid)
    except OSError:
        return None


def running(env, name):
    """True while the recorded pid still runs the recorded executable."""
    u = name.upper()
    pid, exe = env.get("WT_PID_" + u), env.get("WT_EXE_" + u)
    if not pid or not exe:
        return False
    cur = exe_of(pid)
    return cur in (exe, exe + " (deleted)")


class ApplianceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="wt-appliance-")
        cls.dir = os.path.join(cls.tmp, "run")
        cls.bin = os.path.join(cls.tmp, "bin")
        os.makedirs(cls.bin)
        for b in ("wt-hub", "wt-edge", "wtctl"):
            src = os.path.join(BIN, b)
            if not os.access(src, os.X_OK):
                raise unittest.SkipTest("%s not built" % src)
            shutil.copy2(src, os.path.join(cls.bin, b))
        cls.base = free_port_base(10 * EDGES + 2)
        cls.seen_pids = {}  # every (pid, exe) we ever saw recorded
        cls.addClassCleanup(cls.cleanup)
        r = cls.run_script("up", "--port-base", str(cls.base), "--edges", str(EDGES))
        cls.remember()
        if r.returncode != 0:  # class cleanups still run (down + safety net)
            raise AssertionError("appliance/up failed (exit %d):\n%s\n%s" % (r.returncode, r.stdout, r.stderr))

    @classmethod
    def run_script(cls, script, *args, timeout=240):
        env = dict(os.environ, WT_BIN=cls.bin, WT_NO_BUILD="1", WT_ROOT=ROOT, WT_EBPF_FLUSH_S=str(FLUSH_S))
        return subprocess.run([os.path.join(ROOT, "appliance", script), "--dir", cls.dir] + list(args),
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=timeout)

    @classmethod
    def remember(cls):
        if not os.path.exists(os.path.join(cls.dir, "env")):
            return
        env = read_env(cls.dir)
        for n in NAMES:
            u = n.upper()
            if env.get("WT_PID_" + u) and env.get("WT_EXE_" + u):
                cls.seen_pids[env["WT_PID_" + u]] = env["WT_EXE_" + u]

    @classmethod
    def cleanup(cls):
        try:
            cls.remember()
            if os.path.exists(os.path.join(cls.dir, "env")):
                cls.run_script("down", timeout=120)
        finally:
            # Safety net: nothing we started may survive the test.
            for pid, exe in cls.seen_pids.items():
                if exe_of(pid) in (exe, exe + " (deleted)"):
                    try:
                        os.kill(int(pid), 9)
                    except OSError:
                        pass
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def ctl(self, action, name):
        r = self.run_script("ctl", action, name)
        self.remember()
        self.assertEqual(r.returncode, 0, "ctl %s %s: %s" % (action, name, r.stderr))
        return read_env(self.dir)

    def health_url(self, env, name):
        if name == "clickhouse":
            return env["WT_CLICKHOUSE_URL"] + "/ping"
        if name == "hub":
            return env["WT_HUB_URL"] + "/healthz"
        return env["WT_EDGE_URLS"].split()[int(name[4:]) - 1] + "/healthz"

    # -- the steps run in name order and share the cluster ------------------------
    def test_1_env_and_ports(self):
        env = read_env(self.dir)
        for k in REQUIRED_KEYS:
            self.assertTrue(env.get(k), "DIR/env lacks %s" % k)
        b = self.base
        self.assertEqual(env["WT_PROJECT"], "demo")
        self.assertEqual(env["WT_HUB_URL"], "http://127.0.0.1:%d" % b)
        self.assertEqual(env["WT_CLICKHOUSE_URL"], "http://127.0.0.1:%d" % (b + 2))
        self.assertEqual(env["WT_PORT_HUB_REPL"], str(b + 1))
        self.assertEqual(env["WT_PORT_CLICKHOUSE_TCP"], str(b + 3))
        self.assertEqual(env["WT_PORT_CLICKHOUSE_INTERSERVER"], str(b + 4))
        self.assertEqual(env["WT_EDGE_URLS"].split(),
                         ["http://127.0.0.1:%d" % (b + 10 * k) for k in range(1, EDGES + 1)])
        for k in range(1, EDGES + 1):
            self.assertEqual(env["WT_PORT_EDGE%d_OTLP_GRPC" % k], str(b + 10 * k + 1))
            self.assertEqual(env["WT_PORT_EDGE%d_OTLP_HTTP" % k], str(b + 10 * k + 2))
        self.assertNotEqual(env["WT_UPLOAD_TOKEN"], env["WT_READ_TOKEN"])
        # the generated configs carry the ports and tokens (read back with libconfig)
        wtctl = os.path.join(self.bin, "wtctl")
        get = lambda f, k: subprocess.run([wtctl, "config", "get", f, k], stdout=subprocess.PIPE,
                                          text=True).stdout.strip()
        self.assertEqual(get(os.path.join(self.dir, "hub", "hub.cfg"), "hub.listen"), "127.0.0.1:%d" % b)
        self.assertEqual(get(os.path.join(self.dir, "hub", "hub.cfg"), "hub.admin_token"),
                         env["WT_ADMIN_TOKEN"])
        self.assertEqual(get(os.path.join(self.dir, "edge2", "edge.cfg"), "edge.listen"),
                         "127.0.0.1:%d" % (b + 20))
        self.assertEqual(get(os.path.join(self.dir, "edge2", "edge.cfg"), "projects.[0].upload_tokens.[0]"),
                         env["WT_UPLOAD_TOKEN"])
        # WT_EBPF_FLUSH_S reaches the sampler's config (edge1 only)
        if get(os.path.join(self.dir, "edge1", "edge.cfg"), "ebpf.enabled") == "true":
            self.assertEqual(get(os.path.join(self.dir, "edge1", "edge.cfg"), "ebpf.flush_interval_s"), str(FLUSH_S))

    def test_2_every_process_healthy(self):
        env = read_env(self.dir)
        for n in NAMES:
            self.assertTrue(running(env, n), "%s not running as recorded" % n)
            self.assertEqual(status_of(self.health_url(env, n)), 200, "%s health" % n)
        self.assertTrue(env["WT_EXE_HUB"].endswith("/wt-hub"))
        self.assertTrue(env["WT_EXE_EDGE1"].endswith("/wt-edge"))

    def test_3_tokens_work(self):
        env = read_env(self.dir)
        wtctl = os.path.join(self.bin, "wtctl")
        prof = os.path.join(CORPUS, "gen", "go", "go-cpu.pb.gz")
        for url in env["WT_EDGE_URLS"].split():
            r = subprocess.run([wtctl, "--edge", url, "--token", env["WT_UPLOAD_TOKEN"], "profile", "upload",
                                prof, "--service", "appliance-test"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            r = subprocess.run([wtctl, "--edge", url, "--token", "not-a-token", "profile", "upload",
                                prof, "--service", "appliance-test"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, timeout=60)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("401", r.stderr)
        # the edges are registered to the demo project, so what they accepted reaches the hub
        r = subprocess.run([wtctl, "--hub", env["WT_HUB_URL"], "--token", env["WT_ADMIN_TOKEN"], "--json", "admin",
                            "edge", "list", "--project", env["WT_PROJECT"]], capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(e["edge_id"] for e in json.loads(r.stdout)["edges"]), ["edge1", "edge2"])
        deadline, total = time.time() + 60, 0
        while time.time() < deadline and not total:
            req = urllib.request.Request(env["WT_HUB_URL"] + "/v1/projects/%s/profiles/table?service=appliance-test"
                                         "&from=0&until=%d" % (env["WT_PROJECT"], time.time() + 3600),
                                         headers={"Authorization": "Bearer " + env["WT_READ_TOKEN"]})
            with urllib.request.urlopen(req, timeout=30) as resp:
                total = json.loads(resp.read())["total"]
            time.sleep(0.5)
        self.assertGreater(total, 0, "uploads at the edges did not reach the hub")

    @staticmethod
    def edge_metrics(url):
        """An edge's /metrics: {name: value} of the unlabelled series."""
        with urllib.request.urlopen(url + "/metrics", timeout=10) as resp:
            out = {}
            for ln in resp.read().decode().splitlines():
                parts = ln.split()
                if len(parts) == 2 and not ln.startswith("#") and "{" not in parts[0]:
                    out[parts[0]] = float(parts[1])
            return out

    def test_3b_debian_program_full_stacks(self):
        """The cluster's whole-system sampler (edge1, eBPF on where the
        machine allows it) gives Debian's own programs, built without
        frame pointers, full stacks at the hub: gzip -9's samples reach
        __libc_start_main (the edge's default ebpf.unwind = "auto")."""
        env = read_env(self.dir)
        edge1 = env["WT_EDGE_URLS"].split()[0]
        with urllib.request.urlopen(edge1 + "/metrics", timeout=10) as resp:
            metrics = resp.read().decode()
        if "wt_edge_ebpf_enabled 1" not in metrics:
            self.fail("edge1's eBPF sampler is not running here (appliance/up enables it where the machine allows)")
        if not os.access("/usr/bin/gzip", os.X_OK):
            self.skipTest("/usr/bin/gzip not installed")
        small, big = os.path.join(self.tmp, "gzip-small"), os.path.join(self.tmp, "gzip-input")
        with open(small, "wb") as f:
            f.write(os.urandom(8 << 20).hex().encode())  # ~1 s of CPU
        with open(big, "wb") as f:
            f.write(os.urandom(28 << 20).hex().encode())  # ~4 s: ~75 samples at the cluster's 19 Hz
        # after the edge's start its loader builds the tables of every
        # running process's files first (10-30 s on a busy machine): until
        # then samples are walked by frame pointers, so wait it out (the
        # rows steady for 3 s, nothing pending)
        last, stable_since, deadline = -1, time.time(), time.time() + 90
        while time.time() < deadline and time.time() - stable_since < 3:
            m = self.edge_metrics(edge1)
            rows = m.get("wt_edge_ebpf_unwind_rows")
            if rows != last or not rows or m.get("wt_edge_ebpf_unwind_pending_processes"):
                last, stable_since = rows, time.time()
            time.sleep(0.2)
        # once so its files have tables (a program that ran before), then measured
        subprocess.run(["/usr/bin/gzip", "-9", "-c", small], stdout=subprocess.DEVNULL, timeout=300, check=True)
        time.sleep(1.5)
        deadline = time.time() + 60
        while time.time() < deadline and self.edge_metrics(edge1).get("wt_edge_ebpf_unwind_pending_processes"):
            time.sleep(0.2)
        p = subprocess.Popen(["/usr/bin/gzip", "-9", "-c", big], stdout=subprocess.DEVNULL)
        self.assertEqual(p.wait(300), 0)
        p_end = time.time()
        roots = ("__libc_start_main", "_start")
        deadline, tot, ok, last = time.time() + 90, 0, 0, -1
        while time.time() < deadline:
            req = urllib.request.Request(
                env["WT_HUB_URL"] + "/v1/projects/%s/profiles/flamegraph?service=gzip&type=cpu&label.pid=%d"
                "&from=%d&until=%d" % (env["WT_PROJECT"], p.pid, time.time() - 900, time.time() + 60),
                headers={"Authorization": "Bearer " + env["WT_READ_TOKEN"]})
            with urllib.request.urlopen(req, timeout=30) as resp:
                fg = json.loads(resp.read())
            paths = []

            def walk(n, path):
                path = path + [n["name"]]
                if n.get("self"):
                    paths.append((n["self"], path))
                for c in n["children"]:
                    walk(c, path)
            walk(fg["root"], [])
            tot = sum(t for t, _ in paths)
            ok = sum(t for t, q in paths if any(r in q for r in roots))
            # the edge flushes every FLUSH_S, then replicates: done when the
            # total holds still after that
            if tot and tot == last and time.time() > p_end + 2 * FLUSH_S + 2:
                break
            last = tot
            time.sleep(2)
        print(f"\n  gzip -9 at the hub: {100 * ok / tot if tot else 0:.2f} % of {tot / 1e9:.2f} s reach "
              f"__libc_start_main", file=sys.stderr)
        self.assertGreater(tot, 0, "no samples of gzip at the hub")
        self.assertGreaterEqual(ok / tot, 0.95)

    def test_3c_python_names_in_browser(self):
        """A stock python3 program on the cluster's machine, no agent: the
        hub's explorer, in headless chromium, shows its Python functions
        (edge1's eBPF sampler walks CPython's frames, ebpf.python on in
        appliance/edge.cfg) in the flame graph of its service —
        tests/browser/names.spec.mjs, with tests/gen/python/pywork.py's
        hot functions and <module> expected and a function it never calls
        in this mode (sleep_in_python) absent."""
        env = read_env(self.dir)
        edge1 = env["WT_EDGE_URLS"].split()[0]
        with urllib.request.urlopen(edge1 + "/metrics", timeout=10) as resp:
            if "wt_edge_ebpf_enabled 1" not in resp.read().decode():
                self.fail("edge1's eBPF sampler is not running here (appliance/up enables it where the machine allows)")
        work = os.path.join(ROOT, "tests", "gen", "python", "pywork.py")
        out = subprocess.run(["/usr/bin/python3", work, "cpu", "6"], capture_output=True, text=True, timeout=300,
                             cwd=self.tmp)
        self.assertEqual(out.returncode, 0, out.stderr)
        pid, p_end = json.loads(out.stdout.strip().splitlines()[-1])["pid"], time.time()
        fn = lambda f: r"^pywork\.%s \(pywork\.py:\d+\)$" % re.escape(f)
        expect = [fn(f) for f in ("hot_alpha", "hot_beta", "hot_gamma", "<module>")]
        # the service is the executable's name (python3.11 for Debian's
        # python3); the edge flushes every FLUSH_S, then replicates: wait
        # until the hub has the process's samples with the names
        fr, until = int(time.time()) - 900, int(time.time()) + 600
        deadline, svc, names = time.time() + 120, None, set()
        while time.time() < deadline:
            best = (0, None, set())
            for s in ("python3.11", "python3.12", "python3.13", "python3"):
                req = urllib.request.Request(
                    env["WT_HUB_URL"] + "/v1/projects/%s/profiles/table?service=%s&type=cpu&label.pid=%d"
                    "&from=%d&until=%d" % (env["WT_PROJECT"], s, pid, fr, until),
                    headers={"Authorization": "Bearer " + env["WT_READ_TOKEN"]})
                with urllib.request.urlopen(req, timeout=30) as resp:
                    js = json.loads(resp.read())
                if js.get("total", 0) > best[0]:
                    best = (js["total"], s, {r["function"] for r in js["rows"]})
            _, svc, names = best
            if svc and time.time() > p_end + 2 * FLUSH_S + 2 and all(any(re.match(e, n) for n in names) for e in expect):
                break
            time.sleep(2)
        self.assertIsNotNone(svc, "no samples of python3 pid %d at the hub" % pid)
        self.names_in_browser(env, svc, "cpu", {"pid": str(pid)}, expect, [fn("sleep_in_python")],
                              "python3 pid %d" % pid)

    def names_in_browser(self, env, service, typ, labels, expect, absent, what):
        """tests/browser/names.spec.mjs against the cluster's hub: the
        explorer's flame graph of service (type typ) shows expect and not
        absent (lists of regular expressions)."""
        from test_browser import CHROMIUM, playwright_dir
        self.assertTrue(os.path.exists(CHROMIUM), "Debian chromium is missing (appliance/install-deps installs it)")
        mods, why = playwright_dir()
        if mods is None:
            self.fail("cannot install npm playwright-core: " + str(why))
        art = os.path.join(ROOT, BUILD, "test-artifacts")
        os.makedirs(art, exist_ok=True)
        fr, until = int(time.time()) - 900, int(time.time()) + 600
        benv = dict(os.environ, NODE_PATH=mods, WT_HUB_URL=env["WT_HUB_URL"], WT_READ_TOKEN=env["WT_READ_TOKEN"],
                    WT_PROJECT=env["WT_PROJECT"], WT_SERVICE=service, WT_TYPE=typ, WT_FROM=str(fr),
                    WT_UNTIL=str(until), WT_LABELS=json.dumps(labels), WT_EXPECT=json.dumps(expect),
                    WT_ABSENT=json.dumps(absent), WT_ARTIFACTS=art, WT_CHROMIUM=CHROMIUM,
                    WT_PLAYWRIGHT=os.path.join(mods, "playwright-core", "index.js"))
        r = subprocess.run(["node", os.path.join(ROOT, "tests", "browser", "names.spec.mjs")], env=benv,
                           capture_output=True, text=True, timeout=180)
        sys.stderr.write("\n  %s, service %s type %s at the hub:\n%s%s" % (what, service, typ, r.stdout, r.stderr))
        self.assertEqual(r.returncode, 0, "the explorer does not show %s's %s functions (see above)" % (service, typ))

    def hub_rows(self, env, service, typ, pid):
        req = urllib.request.Request(
            env["WT_HUB_URL"] + "/v1/projects/%s/profiles/table?service=%s&type=%s&label.pid=%d&from=%d&until=%d"
            % (env["WT_PROJECT"], service, typ, pid, time.time() - 900, time.time() + 600),
            headers={"Authorization": "Bearer " + env["WT_READ_TOKEN"]})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return {r["function"]: r["total"] for r in json.loads(resp.read()).get("rows", [])}
        except urllib.error.HTTPError:
            return {}

    def test_3d_c_service_lock_and_alloc_in_browser(self):
        """A C program's lock contention (edge1's lock probe, on by default)
        and its native allocations (turned on for its service alone by the
        project's policy, applied live by edge1) show in the hub's explorer
        as the types lock and native_alloc: tests/gen/lockwork's contending
        functions, not its uncontended one; tests/gen/allocwork's
        allocating functions."""
        env = read_env(self.dir)
        edge1 = env["WT_EDGE_URLS"].split()[0]

        def metric(name):
            with urllib.request.urlopen(edge1 + "/metrics", timeout=10) as resp:
                for ln in resp.read().decode().splitlines():
                    if ln.startswith(name + " "):
                        return float(ln.split()[1])
            return 0.0
        if metric("wt_edge_ebpf_enabled") != 1:
            self.fail("edge1's eBPF sampler is not running here (appliance/up enables it where the machine allows)")
        bins = {}
        for name, src in (("lockwork", "lockwork/lockwork.c"), ("allocwork", "allocwork/allocwork.c")):
            bins[name] = os.path.join(self.tmp, name)
            subprocess.run(["cc", "-O2", "-fomit-frame-pointer", "-pthread", "-o", bins[name],
                            os.path.join(ROOT, "tests", "gen", src)], check=True, timeout=60)
        hdr = {"Authorization": "Bearer " + env["WT_ADMIN_TOKEN"], "Content-Type": "application/json"}
        purl = env["WT_HUB_URL"] + "/v1/projects/%s/policy" % env["WT_PROJECT"]
        with urllib.request.urlopen(urllib.request.Request(purl, headers=hdr), timeout=30) as resp:
            old = json.loads(resp.read())["policy"]
        pol = {"version": 1, "rules": {"services": [{"match": {"service": "allocwork"}, "ebpf": {"alloc": True}}]}}
        urllib.request.urlopen(urllib.request.Request(purl, data=json.dumps(pol).encode(), headers=hdr,
                                                      method="PUT"), timeout=30).read()
        try:
            deadline = time.time() + 60
            while time.time() < deadline and metric("wt_edge_ebpf_alloc_enabled") != 1:
                time.sleep(0.5)
            self.assertEqual(metric("wt_edge_ebpf_alloc_enabled"), 1, "the policy did not turn allocations on at edge1")
            go = os.path.join(self.tmp, "alloc-go")
            ap = subprocess.Popen([bins["allocwork"], "run", "4", go], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
            try:
                deadline = time.time() + 30  # its libc probed once the sampler met it
                while time.time() < deadline and metric("wt_edge_ebpf_alloc_processes") < 1:
                    time.sleep(0.2)
                open(go, "w").close()
                lw = subprocess.run([bins["lockwork"], "contend", "3"], capture_output=True, text=True, timeout=120)
                aout, aerr = ap.communicate(timeout=120)
            finally:
                if ap.poll() is None:
                    ap.kill()
                    ap.wait()
            self.assertEqual(ap.returncode, 0, aerr)
            self.assertEqual(lw.returncode, 0, lw.stderr)
            apid = json.loads(aout.strip().splitlines()[-1])["pid"]
            lpid = json.loads(lw.stdout.strip().splitlines()[-1])["pid"]
            deadline = time.time() + 120  # flushed every FLUSH_S, then replicated
            while time.time() < deadline:
                locks = self.hub_rows(env, "lockwork", "lock", lpid)
                allocs = self.hub_rows(env, "allocwork", "native_alloc", apid)
                if "contend_mutex" in locks and "leak_allocs" in allocs and "small_allocs" in allocs:
                    break
                time.sleep(2)
        finally:
            urllib.request.urlopen(urllib.request.Request(purl, data=json.dumps(old).encode(), headers=hdr,
                                                          method="PUT"), timeout=30).read()
        self.names_in_browser(env, "lockwork", "lock", {"pid": str(lpid)}, ["^contend_mutex$", "^contend_rwlock$"],
                              ["^uncontended$"], "lockwork pid %d" % lpid)
        self.names_in_browser(env, "allocwork", "native_alloc", {"pid": str(apid)},
                              ["^leak_allocs$", "^small_allocs$", "^page_allocs$"], ["^contend_mutex$", "^now_s$"],
                              "allocwork pid %d" % apid)

    def test_4_up_again_is_noop(self):
        before = read_env(self.dir)
        r = self.run_script("up")
        self.assertEqual(r.returncode, 0, r.stderr)
        after = read_env(self.dir)
        for n in NAMES:
            self.assertEqual(before["WT_PID_" + n.upper()], after["WT_PID_" + n.upper()], n)
        self.assertEqual(before["WT_UPLOAD_TOKEN"], after["WT_UPLOAD_TOKEN"])

    def test_5_up_restarts_stale_binaries(self):
        before = read_env(self.dir)
        # "Rebuild" wt-edge the way a linker does: a new file renamed over the old.
        path = os.path.join(self.bin, "wt-edge")
        with open(path, "rb") as f:
            data = f.read()
        with open(path + ".new", "wb") as f:
            f.write(data + b"\n# rebuilt\n")  # ELF ignores trailing bytes
        os.chmod(path + ".new", 0o755)
        os.rename(path + ".new", path)
        r = self.run_script("up")
        self.remember()
        self.assertEqual(r.returncode, 0, r.stderr)
        after = read_env(self.dir)
        for n in ("edge1", "edge2"):
            self.assertNotEqual(before["WT_PID_" + n.upper()], after["WT_PID_" + n.upper()],
                                "%s was not restarted" % n)
            self.assertIsNone(exe_of(before["WT_PID_" + n.upper()]), "old %s still runs" % n)
            self.assertEqual(status_of(self.health_url(after, n)), 200)
        for n in ("clickhouse", "hub"):
            self.assertEqual(before["WT_PID_" + n.upper()], after["WT_PID_" + n.upper()], n)
        self.assertNotEqual(before["WT_BUILD_STAMP"], after["WT_BUILD_STAMP"])

    def test_6_ctl_stop_start_kill(self):
        env = read_env(self.dir)
        old = env["WT_PID_EDGE2"]
        env = self.ctl("stop", "edge2")
        self.assertEqual(env["WT_PID_EDGE2"], "")
        self.assertIsNone(exe_of(old))
        self.assertIsNone(status_of(self.health_url(env, "edge2")))
        self.assertEqual(status_of(self.health_url(env, "edge1")), 200)
        env = self.ctl("start", "edge2")
        self.assertTrue(env["WT_PID_EDGE2"] and env["WT_PID_EDGE2"] != old)
        self.assertTrue(running(env, "edge2"))
        self.assertEqual(status_of(self.health_url(env, "edge2")), 200)

        old = env["WT_PID_HUB"]
        t0 = time.time()
        env = self.ctl("kill", "hub")
        self.assertLess(time.time() - t0, 10)
        self.assertEqual(env["WT_PID_HUB"], "")
        self.assertIsNone(exe_of(old))
        self.assertIsNone(status_of(self.health_url(env, "hub")))
        for n in ("clickhouse", "edge1", "edge2"):
            self.assertTrue(running(env, n), "%s died with the hub" % n)
        env = self.ctl("start", "hub")
        self.assertTrue(running(env, "hub"))
        self.assertEqual(status_of(self.health_url(env, "hub")), 200)
        # an unknown name is refused
        r = self.run_script("ctl", "stop", "edge7")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("edge7", r.stderr)

    def test_7_down_stops_everything(self):
        self.remember()
        env = read_env(self.dir)
        r = self.run_script("down")
        self.assertEqual(r.returncode, 0, r.stderr)
        after = read_env(self.dir)
        for n in NAMES:
            self.assertEqual(after["WT_PID_" + n.upper()], "", n)
        for pid, exe in self.seen_pids.items():
            self.assertNotIn(exe_of(pid), (exe, exe + " (deleted)"), "pid %s (%s) survived down" % (pid, exe))
        for n in NAMES:
            self.assertIsNone(status_of(self.health_url(env, n), timeout=1), "%s still answers" % n)
        # down again is harmless
        r = self.run_script("down")
        self.assertEqual(r.returncode, 0, r.stderr)


class FailureTest(unittest.TestCase):
    """A daemon that does not come up makes `up` fail naming it and its log;
    `down` then stops what did start."""

    def test_hub_that_exits_is_named(self):
        wtctl = os.path.join(BIN, "wtctl")
        if not os.access(wtctl, os.X_OK):
            self.skipTest("wtctl not built")
        tmp = tempfile.mkdtemp(prefix="wt-appliance-fail-")
        d, b = os.path.join(tmp, "run"), os.path.join(tmp, "bin")
        os.makedirs(b)
        shutil.copy2(wtctl, os.path.join(b, "wtctl"))
        for name in ("wt-hub", "wt-edge"):
            with open(os.path.join(b, name), "w") as f:
                f.write("#!/bin/sh\necho \"%s: refusing to start\" >&2\nexit 1\n" % name)
            os.chmod(os.path.join(b, name), 0o755)
        env = dict(os.environ, WT_BIN=b, WT_NO_BUILD="1", WT_ROOT=ROOT, WT_START_TIMEOUT="10")
        script = lambda s, *a: subprocess.run([os.path.join(ROOT, "appliance", s), "--dir", d] + list(a),
                                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                              text=True, timeout=180)
        seen = {}

        def cleanup():
            try:
                script("down")
            finally:
                for pid, exe in seen.items():
                    if exe_of(pid) in (exe, exe + " (deleted)"):
                        os.kill(int(pid), 9)
                shutil.rmtree(tmp, ignore_errors=True)
        self.addCleanup(cleanup)
        r = script("up", "--port-base", str(free_port_base(10 * EDGES + 2)))
        e = read_env(d)
        if e.get("WT_PID_CLICKHOUSE"):
            seen[e["WT_PID_CLICKHOUSE"]] = e["WT_EXE_CLICKHOUSE"]
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("hub did not come up", r.stderr)
        self.assertIn(os.path.join(d, "hub", "log"), r.stderr)
        self.assertIn("wt-hub: refusing to start", r.stderr)  # the log's tail is shown
        self.assertTrue(running(e, "clickhouse"))
        r = script("down")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(running(e, "clickhouse"))


if __name__ == "__main__":
    unittest.main()
