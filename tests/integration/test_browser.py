#!/usr/bin/env python3
"""test_browser.py — the explorer UI in a real headless browser.

Starts a private ClickHouse and wt-hub (harness), uploads real profiles
from the corpus (Go CPU pprof with pprof labels, a stackcollapse-perf
folded file, the same folded file tagged with a span id), then runs
tests/browser/ui.spec.mjs under node with Debian's chromium driven by npm
playwright-core (installed into $BUILD/npm on first use). The spec compares
what the page shows with the query API's own answers; its exit code
decides. Screenshots go to $BUILD/test-artifacts/.

Also: a synthetic folded profile of 100,000 unique
stacks (a ~112k-node call tree, depth 8-20, Go-looking names) for the
large-profile timings the spec prints; perf-script text with per-thread
records for the timeline; folded profiles whose function shares shift
between a baseline and a recent window, then `POST /v1/admin/analysis/run`
so that the issues view has a regression to show; the project admin token
for the policy editor and audit log.
"""
import gzip
import os
import random
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness.clickhouse import ClickHouse  # noqa: E402
from harness.hub import CORPUS, ROOT, Hub  # noqa: E402

GO_CPU = os.path.join(CORPUS, "gen/go/go-cpu.pb.gz")
FOLDED = os.path.join(CORPUS, "gen/c/folded-c-fp.stackcollapse-perf.txt")
CHROMIUM = "/usr/bin/chromium"
MIN = 60
# regression detector windows of the hub under test; the test runs the
# detector itself at a fixed, minute-aligned `at` (windows end on multiples
# of the interval, so it must stay 60 s)
ANALYSIS_CFG = """analysis = { regress_interval_s = 60; recent_window_s = 600; baseline_window_s = 3600;
  min_effect = 0.02; alpha = 0.001; };
"""
SPEC = os.path.join(ROOT, "tests", "browser", "ui.spec.mjs")


def big_folded(n_stacks=100_000, seed=7):
    """A folded profile of exactly n_stacks unique stacks forming a realistic
    call tree: goroutine entry points, fan-out 1-3 over the first levels,
    then mostly chains with occasional branching, leaves at depth 8-20, self
    time on leaves and on most deep inner frames (Pareto-distributed
    values), names drawn from 3000 Go-looking functions."""
    rnd = random.Random(seed)
    pkgs = ["net/http", "runtime", "encoding/json", "github.com/acme/shop/cart", "github.com/acme/shop/catalog",
            "github.com/acme/shop/checkout", "google.golang.org/grpc", "database/sql", "github.com/lib/pq",
            "compress/flate", "crypto/tls", "bufio", "sync", "github.com/acme/platform/cache", "sort",
            "github.com/acme/platform/auth", "io", "strings", "reflect", "github.com/acme/platform/metrics"]
    types = ["", "(*Server)", "(*Conn)", "(*Client)", "(*Decoder)", "(*Encoder)", "(*Cache)", "(*Tx)", "(*Pool)",
             "(*Handler)", "(*Reader)", "(*Writer)", "(*Store)"]
    verbs = ["serve", "handle", "read", "write", "decode", "encode", "lookup", "fetch", "parse", "render",
             "compute", "apply", "flush", "scan", "sort", "hash", "load", "store", "validate", "merge"]
    nouns = ["Request", "Response", "Header", "Body", "Item", "Cart", "Order", "Row", "Block", "Token", "Entry",
             "Batch", "Frame", "Value", "Index", "Page", "Session", "Record", "Chunk", "Query"]
    names = []
    for _ in range(3000):
        t = rnd.choice(types)
        fn = rnd.choice(verbs) + rnd.choice(nouns)
        if t:
            fn = t + "." + fn[0].upper() + fn[1:]
        names.append(f"{rnd.choice(pkgs)}.{fn}" + (f".func{rnd.randint(1, 4)}" if rnd.random() < 0.1 else ""))
    cand, stack, entry = [], [], 0
    while len(cand) < n_stacks:
        if not stack:  # another goroutine entry point until there are enough stacks
            stack.append(("runtime.goexit", f"github.com/acme/shop/worker{entry}.run"))
            entry += 1
            continue
        path = stack.pop()
        d = len(path)
        if d >= 20 or (d >= 8 and rnd.random() < 0.12):
            nk = 0
        elif d < 7:
            nk = rnd.choice((1, 2, 2, 3))
        else:
            nk = rnd.choice((1, 1, 1, 1, 2, 2, 3))
        used = set()
        for _ in range(nk):
            nm = rnd.choice(names)
            if nm not in used:
                used.add(nm)
                stack.append(path + (nm,))
        if d >= 8 and (nk == 0 or rnd.random() < 0.85):
            cand.append(path)
    cand = cand[:n_stacks]
    rnd.shuffle(cand)
    return "".join(f"{';'.join(p)} {max(1, int(rnd.paretovariate(1.2) * 3))}\n" for p in cand)


def perf_threads(threads=6, seconds=20):
    """`perf script` text (-F comm,pid,tid,time,period,event,ip,sym,dso):
    thread i runs in the seconds s with (s + i) % 3 != 0, i+1 samples each."""
    out = []
    for s in range(seconds):
        for i in range(threads):
            if (s + i) % 3 == 0:
                continue
            for k in range(i + 1):
                t = 1000 + s + k * 0.01 + i * 0.001
                frames = ["work", "loop", "main"]
                lines = [f"w{i:02d} {100 + i}/{100 + i}  {t:.6f}:   10000000 cpu-clock:ppp: "]
                lines += [f"\t    {0x401000 + 0x40 * j:x} {fn}+0x{4 * j + 8:x} (/usr/bin/w{i:02d})" for j, fn in enumerate(frames)]
                out.append((t, "\n".join(lines) + "\n\n"))
    out.sort()
    return "".join(x for _, x in out).encode()


def playwright_dir():
    """node_modules with playwright-core, installed with npm under the build dir."""
    build = os.path.join(ROOT, os.environ.get("BUILD", "build"))
    d = os.path.join(build, "npm")
    pkg = os.path.join(d, "node_modules", "playwright-core", "package.json")
    if not os.path.exists(pkg):
        os.makedirs(d, exist_ok=True)
        r = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", d, "playwright-core@1"],
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0 or not os.path.exists(pkg):
            return None, r.stderr[-2000:]
    return os.path.join(d, "node_modules"), None


class BrowserUI(unittest.TestCase):
    def test_explorer_in_chromium(self):
        self.assertTrue(os.path.exists(CHROMIUM), "Debian chromium is missing (appliance/install-deps installs it)")
        mods, why = playwright_dir()
        if mods is None:
            self.fail("cannot install npm playwright-core: " + why)
        ch = ClickHouse(self).start()
        hub = Hub(self, ch)
        with open(hub.cfg, "a") as f:
            f.write(ANALYSIS_CFG)
        hub.start()
        st, js = hub.create_project("uitest")
        self.assertEqual(st, 201, js)
        up = hub.create_token("uitest", "upload")
        rd = hub.create_token("uitest", "read")
        adm = hub.create_token("uitest", "admin")
        now = int(time.time())
        t0 = now - 1800
        with open(GO_CPU, "rb") as f:
            cpu = f.read()
        with open(FOLDED, "rb") as f:
            folded = f.read()
        for data, svc, fmt, extra in ((cpu, "gowork", "pprof", {"from": str(t0)}),
                                      (cpu, "gowork", "pprof", {"from": str(t0 + 600)}),
                                      (folded, "cwork", "folded", {"from": str(t0 + 300)}),
                                      (folded, "cwork", "folded", {"from": str(t0 + 900), "label.span_id": "ui-span-1"})):
            st, js = hub.upload(data, up, svc, format=fmt, **extra)
            self.assertEqual(st, 200, js)
        # timeline: threads of a perf capture
        st, js = hub.upload(perf_threads(), up, "threads", format="perf", **{"from": str(t0 + 200)})
        self.assertEqual(st, 200, js)
        # large profile: 100k unique stacks (gzip: the hub inflates it)
        t = time.time()
        big = big_folded().encode()
        gen_s = time.time() - t
        t = time.time()
        st, js = hub.upload(gzip.compress(big, 3), up, "bigsvc", format="folded", **{"from": str(t0 + 1200)})
        self.assertEqual(st, 200, js)
        self.assertEqual(js.get("stacks"), 100000, js)
        sys.stderr.write(f"large profile: {len(big)} bytes folded, 100000 stacks, generated in {gen_s:.1f}s, "
                         f"uploaded in {time.time() - t:.1f}s\n")
        # regression: regsvc's main.funcB grows from 10% (baseline) to 50% (recent);
        # detector run at T (a minute boundary two hours ago, outside the page's range)
        T = (now // MIN) * MIN - 2 * 3600
        for at, a, b in ((-40, 900, 100), (-30, 900, 100), (-20, 900, 100), (-5, 500, 500), (-3, 500, 500)):
            data = f"main;main.handle;main.funcA {a}\nmain;main.handle;main.funcB {b}\nmain;main.idle 50\n".encode()
            st, js = hub.upload(data, up, "regsvc", format="folded", **{"from": str(T + at * MIN)})
            self.assertEqual(st, 200, js)
        st, js = hub.request("POST", f"/v1/admin/analysis/run?project=uitest&at={T}", token=hub.admin_token)
        self.assertEqual(st, 200, js)
        sys.stderr.write(f"analysis run: {js}\n")
        art = os.path.join(ROOT, os.environ.get("BUILD", "build"), "test-artifacts")
        os.makedirs(art, exist_ok=True)
        env = dict(os.environ, NODE_PATH=mods, WT_HUB_URL=hub.url, WT_READ_TOKEN=rd, WT_PROJECT="uitest",
                   WT_ADMIN_TOKEN=adm, WT_REG_FROM=str(T - 2 * 3600), WT_REG_UNTIL=str(T + 60),
                   WT_FROM=str(t0 - 60), WT_UNTIL=str(now + 60), WT_ARTIFACTS=art, WT_CHROMIUM=CHROMIUM,
                   WT_PLAYWRIGHT=os.path.join(mods, "playwright-core", "index.js"))
        t = time.time()
        r = subprocess.run(["node", SPEC], env=env, capture_output=True, text=True, timeout=300)
        sys.stderr.write(r.stdout + r.stderr)
        sys.stderr.write(f"browser spec took {time.time() - t:.1f}s\n")
        self.assertEqual(r.returncode, 0, "browser spec failed (see output above)")


if __name__ == "__main__":
    unittest.main()
