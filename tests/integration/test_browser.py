#!/usr/bin/env python3
"""test_browser.py — the explorer UI in a real headless browser.

Starts a private ClickHouse and wt-hub (harness), uploads real profiles
from the corpus (Go CPU pprof with pprof labels, a stackcollapse-perf
folded file, the same folded file tagged with a span id), then runs
tests/browser/ui.spec.mjs under node with Debian's chromium driven by npm
playwright-core (installed into $BUILD/npm on first use). The spec compares
what the page shows with the query API's own answers; its exit code
decides. Screenshots go to $BUILD/test-artifacts/.
"""
import os
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
SPEC = os.path.join(ROOT, "tests", "browser", "ui.spec.mjs")


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
        hub = Hub(self, ch).start()
        st, js = hub.create_project("uitest")
        self.assertEqual(st, 201, js)
        up = hub.create_token("uitest", "upload")
        rd = hub.create_token("uitest", "read")
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
        art = os.path.join(ROOT, os.environ.get("BUILD", "build"), "test-artifacts")
        os.makedirs(art, exist_ok=True)
        env = dict(os.environ, NODE_PATH=mods, WT_HUB_URL=hub.url, WT_READ_TOKEN=rd, WT_PROJECT="uitest",
                   WT_FROM=str(t0 - 60), WT_UNTIL=str(now + 60), WT_ARTIFACTS=art, WT_CHROMIUM=CHROMIUM,
                   WT_PLAYWRIGHT=os.path.join(mods, "playwright-core", "index.js"))
        t = time.time()
        r = subprocess.run(["node", SPEC], env=env, capture_output=True, text=True, timeout=240)
        sys.stderr.write(r.stdout + r.stderr)
        sys.stderr.write(f"browser spec took {time.time() - t:.1f}s\n")
        self.assertEqual(r.returncode, 0, "browser spec failed (see output above)")


if __name__ == "__main__":
    unittest.main()
