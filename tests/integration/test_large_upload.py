"""test_large_upload.py — memory of one large folded upload is bounded and
given back, at the edge and at the hub (docs/operations.md "Memory of large
uploads").

The input is a deterministic folded profile of N distinct stacks: six
frames each, the first five shared in a 7 x 11 x 13 x 17 tree under
"main", the leaf unique per line ("leaf<i>"), counts 1..5. Every line is a
new stack, a new leaf function and string, and a new rollup row: the
interning tables, the rollup and the stacks column family grow with N, as
with a long-running service's collapsed output. At N = 3 200 000 it is
~12 MB gzip, ~216 MB of text.

One edge replicating to one hub (real daemons, real ClickHouse): the file is
uploaded to the edge, which stores it and replicates it (the hub decodes the
original again to apply it), then uploaded directly to the hub. Each
daemon's RSS is read from /proc every 50 ms: the peak while it works must
stay under PEAK_MB and the RSS must fall under BACK_MB within 30 s after.

`make test` runs N = 320 000 (peaks under 340 MB at the edge, 200 MB at
the hub applying it, 220 MB at the hub taking it directly; back under 200
MB: before this, the edge peaked at 383 MB, the hub applying it at 302 MB
and held 254 MB; before the hub inserted rows as their blocks filled, it
peaked at 215 MB applying and 271-332 MB direct);
Throughout, the hub's regression worker runs every 5 s, and at the end
one run over both services (one function made hot in each) and two worker
passes must keep the hub under 100 MB (before ClickHouse chose the
candidates: 300 MB peak, 131 MB held, the run 12.1 s; now 29 MB, 1.8 s).
tests/soak/test_large_upload.py runs the full 3 200 000 with the goal's
1 GB peak (docs/operations.md). Totals are read from ClickHouse.
WT_LARGE_SAMPLES overrides N.
"""
import zlib
import os
import shutil
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness.clickhouse import ClickHouse  # noqa: E402
from harness.edge import UPLOAD_TOKEN, Edge  # noqa: E402
from harness.hub import Hub  # noqa: E402
from test_bounds import SANITIZED, Sampler, rss_mb  # noqa: E402
from test_replication import pki_edge, pki_init  # noqa: E402


def large_folded_gz(n):
    """The folded profile described above, gzip level 6 (deterministic)."""
    lines = (f"main;svc.handler{i % 7};lib.process{(i // 7) % 11};core.step{(i // 77) % 13};"
             f"util.work{(i // 1001) % 17};leaf{i} {1 + i % 5}\n" for i in range(n))
    c = zlib.compressobj(6, zlib.DEFLATED, 31)
    out, chunk = [], []
    for i, line in enumerate(lines):
        chunk.append(line)
        if len(chunk) == 65536:
            out.append(c.compress("".join(chunk).encode()))
            chunk = []
    out.append(c.compress("".join(chunk).encode()))
    out.append(c.flush())
    return b"".join(out)


BASE = 1000  # the baseline profile's value in each service


def expected_total(n):
    return sum(1 + i % 5 for i in range(n))


class LargeUpload(unittest.TestCase):
    N = int(os.environ.get("WT_LARGE_SAMPLES", "320000"))
    # peak bounds per phase at N = 320 000 (measured now: edge 143-278,
    # hub applying 121, hub direct 127; before the hub inserted rows as
    # they were made: hub applying 215, direct 271-332; before that: edge
    # 383, hub applying 302 and 254 MB held afterwards); one bound for
    # all at full size
    PEAK_MB = {"edge": 340, "apply": 200, "direct": 220, "regress": 100}
    REGRESS_S = 5  # the regression worker's interval
    BACK_MB = 200
    SETTLE_S = 30

    @classmethod
    def setUpClass(cls):
        cls.data = large_folded_gz(cls.N)

    def settle(self, pid):
        """RSS once it is under BACK_MB, or the last reading after SETTLE_S."""
        deadline = time.time() + self.SETTLE_S
        rss = rss_mb(pid)
        while time.time() < deadline and rss >= self.BACK_MB:
            time.sleep(0.5)
            rss = rss_mb(pid)
        return rss

    def wait(self, cond, what, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if cond():
                return
            time.sleep(0.5)
        self.fail(what)

    def check(self, phase, who, peak, back):
        print(f"\n{who}: N={self.N} peak {peak:.0f} MB, {back:.0f} MB after", file=sys.stderr)
        if SANITIZED:
            return
        limit = self.PEAK_MB[phase] if isinstance(self.PEAK_MB, dict) else self.PEAK_MB
        with self.subTest(phase):  # the later phases are still measured
            self.assertLess(peak, limit, f"{who}: peak RSS {peak:.0f} MB (N={self.N})")
            self.assertLess(back, self.BACK_MB, f"{who}: RSS {back:.0f} MB {self.SETTLE_S} s after (peak {peak:.0f})")

    def test_edge_and_hub(self):
        pki = tempfile.mkdtemp(prefix="wt-pki-")
        self.addCleanup(shutil.rmtree, pki, True)
        pki_init(pki)
        ch = ClickHouse(self).start()
        # the query side's frames cache (hub.stack_cache_bytes, 256 MiB by
        # default) fills from this test's own queries: kept small so that
        # what is measured is the uploads' memory. The regression worker
        # runs every REGRESS_S throughout (its candidates are chosen by
        # ClickHouse, docs/operations.md "Regression detection")
        hub = Hub(self, ch, pki=pki, hub_extra="stack_cache_bytes = 16777216;", ch_timeout_ms=300000,
                  extra_cfg=f"analysis = {{ regress_interval_s = {self.REGRESS_S}; }};").start()
        self.assertIn(hub.create_project("demo")[0], (200, 201))
        hub.allow_edge("edge1")
        up = hub.create_token("demo", "upload")
        # a baseline an hour ago for both services, so that the detector
        # has both windows for them and evaluates their functions
        for svc in ("big", "direct"):
            st, js = hub.request("POST", f"/v1/profiles?service={svc}&format=folded&from={int(time.time()) - 3600}",
                                 f"main;svc.handler0;base {BASE}\n".encode(), token=up)
            self.assertEqual(st, 200, js)
        c = pki_edge(pki, "edge1")
        edge = Edge(self, edge_id="edge1",
                    hub={"url": hub.repl_url, "ca": os.path.join(pki, "ca.crt"), "cert": c["crt"], "key": c["key"]},
                    replication="backoff_initial_ms = 50; backoff_max_ms = 500; interval_ms = 100;").start()
        total = expected_total(self.N) + BASE

        def hub_total(svc):
            # from ClickHouse: the hub's table view of millions of distinct
            # functions takes minutes on a busy machine, and its memory is
            # the query path's, not the upload's (checked once at the end)
            out = ch.query("SELECT sum(value) FROM watchtower.profile_samples_v1 WHERE project = 'demo'"
                           f" AND service = '{svc}' AND sample_type = 'cpu'", timeout=300).strip()
            return int(out) if out else None

        # 1. upload to the edge; the hub applies it through replication
        se, sh = Sampler(edge.proc.pid), Sampler(hub.proc.pid)
        st, body = edge.request("POST", "/v1/profiles?format=folded&service=big", body=self.data,
                                headers={"Authorization": f"Bearer {UPLOAD_TOKEN}"}, timeout=900)
        self.assertEqual(st, 200, body)
        print(f"\nedge: upload answered, peak so far {se.peak:.0f} MB", file=sys.stderr)
        budget = max(600, self.N // 1000)  # a shared 2-core machine: seconds of replication allowed
        self.wait(lambda: edge.metrics()["wt_edge_unreplicated_uploads"] == 0,
                  f"replicated; edge log: {edge.read_log()[-1500:]}; hub log: {hub.read_log()[-1500:]}", budget)
        self.wait(lambda: hub_total("big") == total, "stored at the hub", budget)
        hub_peak = sh.done()
        edge_peak = se.done()
        self.check("edge", "edge (upload + replication)", edge_peak, self.settle(edge.proc.pid))
        self.check("apply", "hub (replication apply)", hub_peak, self.settle(hub.proc.pid))

        # 2. the same file directly to the hub
        sh = Sampler(hub.proc.pid)
        st, js = hub.request("POST", "/v1/profiles?service=direct&format=folded", self.data, token=up,
                             timeout=1800)
        self.assertEqual(st, 200, js)
        self.assertEqual(hub_total("direct"), total)
        self.check("direct", "hub (direct upload)", sh.done(), self.settle(hub.proc.pid))

        # 3. regression runs over both services' N functions each: one
        # function made hot now in each (share 0 -> ~30 %) is its only
        # issue; the hub's RSS during a run and two worker passes
        for svc in ("big", "direct"):
            st, js = hub.request("POST", f"/v1/profiles?service={svc}&format=folded",
                                 f"main;hot {total // 2}\n".encode(), token=up)
            self.assertEqual(st, 200, js)
        sh = Sampler(hub.proc.pid)
        t0 = time.time()
        st, res = hub.request("POST", f"/v1/admin/analysis/run?project=demo&at={int(time.time()) + 2 * self.REGRESS_S}",
                              token=hub.admin_token, timeout=600)
        self.assertEqual(st, 200, res)
        print(f"\nregression run: {time.time() - t0:.1f} s, {res}", file=sys.stderr)
        time.sleep(2.5 * self.REGRESS_S)
        self.check("regress", "hub (regression runs)", sh.done(), self.settle(hub.proc.pid))
        self.assertGreaterEqual(res["groups"], 2, res)
        self.assertEqual(res["opened"] + res["updated"], 2, res)
        st, js = hub.request("GET", "/v1/projects/demo/issues", token=hub.admin_token)
        self.assertEqual(st, 200, js)
        self.assertEqual(sorted((i["service"], i["function"]) for i in js["issues"] if i["state"] == "open"),
                         [("big", "hot"), ("direct", "hot")], js)
        self.assertNotIn("regression run failed", hub.read_log())  # the worker's runs (all projects)


if __name__ == "__main__":
    unittest.main()
