#!/usr/bin/env python3
"""test_analysis.py — the hub's analysis endpoints (docs/api.md "### Analysis") against a real
private ClickHouse and a real wt-hub, with real profiles:

- Go CPU profiles from tests/gen/regress (v1 hot in funcA, v2 hot in funcB,
  funcB under span_id/trace_id pprof labels) → diff, trace-to-profile
  filters and regression issues; expected figures from `go tool pprof -top`
  (with -tagfocus for the span);
- Go heap profiles of a program leaking in main.leakyCache → leaks; the
  evidence series must equal `go tool pprof -top -sample_index=inuse_space`
  of each snapshot;
- `perf script` text with exact per-record times (the format perf prints,
  written by this test so the workload is known to the sample) → timeline
  by thread (expected values counted here from the records) and insights
  (one 12 s burst at 90%, one 2 s saturation, two short gaps).
One ClickHouse for the class; each hub gets its own database.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness.clickhouse import ClickHouse  # noqa: E402
from harness.hub import ROOT, Hub  # noqa: E402

BUILD = os.environ.get("BUILD", "build")
DATA = os.path.join(ROOT, BUILD, "testdata", "analysis") if not os.path.isabs(BUILD) else \
    os.path.join(BUILD, "testdata", "analysis")
V1 = os.path.join(DATA, "v1.pb.gz")
V2 = os.path.join(DATA, "v2.pb.gz")
LEAK = [os.path.join(DATA, "leak", f"heap-{k}.pb.gz") for k in range(6)]
SPAN = "b7ad6b7169203331"
TRACE = "0af7651916cd43dd8448eb211c80319c"
GOENV = dict(os.environ, HOME=os.path.join(ROOT, BUILD, "testdata", "gohome"),
             PPROF_TMPDIR=tempfile.gettempdir())
MIN = 60
NS = 10**9

# window config of the hubs under test: recent 10 min, baseline 1 h, the
# worker thread every second (its windows end "now", far from the `at` runs)
ANALYSIS_CFG = """analysis = { regress_interval_s = 1; recent_window_s = 600; baseline_window_s = 3600;
  min_effect = 0.02; alpha = 0.001; };
"""


def pprof_top(path, index="cpu", extra=()):
    """{function: (flat, cum)} and total from `go tool pprof -top`."""
    unit = ["-unit=ns"] if index == "cpu" else ["-unit=byte"] if index.endswith("_space") else []
    out = subprocess.run(["go", "tool", "pprof", "-top", "-nodecount=100000", "-nodefraction=0",
                          "-edgefraction=0", f"-sample_index={index}", *unit, *extra, path],
                         capture_output=True, text=True, timeout=120, env=GOENV)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    total, rows, in_rows = 0, {}, False
    for line in out.stdout.splitlines():
        m = re.search(r"of (-?\d+)\S* total", line)
        if m:
            total = int(m.group(1))
        if line.strip().startswith("flat"):
            in_rows = True
            continue
        if in_rows and line.strip():
            parts = line.split(None, 5)
            num = lambda s: int(re.match(r"-?\d+", s).group(0))  # noqa: E731
            name = parts[5].removesuffix(" (inline)")
            f0, c0 = rows.get(name, (0, 0))
            rows[name] = (f0 + num(parts[0]), c0 + num(parts[3]))
    return total, rows


def perf_record(comm, tid, t, period, frames):
    """One `perf script` record (header + frames leaf first), as perf prints it
    with -F comm,pid,tid,time,period,event,ip,sym,dso."""
    lines = [f"{comm} {tid}/{tid}  {t:.6f}:   {period} cpu-clock:ppp: "]
    for i, fn in enumerate(frames):
        lines.append(f"\t    {0x401000 + 0x40 * i:x} {fn}+0x{4 * i + 8:x} (/usr/bin/{comm})")
    return "\n".join(lines) + "\n\n"


class _ClassCleanup:
    def __init__(self, cls):
        self.cls = cls

    def addCleanup(self, fn, *a):
        self.cls.addClassCleanup(fn, *a)


class Analysis(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        subprocess.run([os.path.join(ROOT, "tests", "gen", "gen-analysis")], check=True,
                       env=dict(os.environ, BUILD=BUILD), timeout=300)
        cc = _ClassCleanup(cls)
        cls.ch = ClickHouse(cc).start()
        cls.hub = cls.new_hub(cc, "analysis")
        h = cls.hub
        st, js = h.create_project("an")
        assert st == 201, (st, js)
        cls.up = h.create_token("an", "upload")
        cls.rd = h.create_token("an", "read")
        cls.adm = h.create_token("an", "admin")
        # T0: a minute boundary two hours ago, far from the worker thread's
        # windows (which end now)
        cls.T0 = (int(time.time()) // MIN) * MIN - 2 * 3600
        with open(V1, "rb") as f:
            cls.v1 = f.read()
        with open(V2, "rb") as f:
            cls.v2 = f.read()
        # baseline: v1 three times, recent: v2 twice (service "shop"); one
        # v1 for the cross-service diff (service "shop-old")
        for svc, data, at in (("shop", cls.v1, -40 * MIN), ("shop", cls.v1, -30 * MIN), ("shop", cls.v1, -20 * MIN),
                              ("shop", cls.v2, -5 * MIN), ("shop", cls.v2, -3 * MIN),
                              ("shop-old", cls.v1, -5 * MIN)):
            st, js = h.upload(data, cls.up, svc, format="pprof", **{"from": str(cls.T0 + at)})
            assert st == 200, (st, js)

    @classmethod
    def new_hub(cls, cc, db):
        hub = Hub(cc, cls.ch, database=db)
        with open(hub.cfg, "a") as f:
            f.write(ANALYSIS_CFG)
        return hub.start()

    def get(self, url, token=None, **params):
        import urllib.parse
        st, js = self.hub.request("GET", url + "?" + urllib.parse.urlencode(params), token=token or self.rd)
        return st, js

    def view(self, view, **params):
        st, js = self.get(f"/v1/projects/an/profiles/{view}", **params)
        self.assertEqual(st, 200, js)
        return js

    # ---- diff ---------------------------------------------------------------
    def test_diff_v1_v2(self):
        T0 = self.T0
        t1, r1 = pprof_top(V1)
        t2, r2 = pprof_top(V2)
        js = self.view("diff", service="shop", type="cpu", base_from=T0 - 50 * MIN, base_until=T0 - 10 * MIN,
                       **{"from": T0 - 10 * MIN, "until": T0})
        self.assertEqual(js["unit"], "nanoseconds")
        self.assertEqual(js["base_total"], 3 * t1)
        self.assertEqual(js["target_total"], 2 * t2)
        rows = {r["function"]: r for r in js["rows"]}
        for fn in ("main.funcA", "main.funcB"):
            self.assertEqual(rows[fn]["base_self"], 3 * r1[fn][0], fn)
            self.assertEqual(rows[fn]["target_self"], 2 * r2[fn][0], fn)
            self.assertEqual(rows[fn]["base_total"], 3 * r1[fn][1], fn)
            self.assertEqual(rows[fn]["target_total"], 2 * r2[fn][1], fn)
            want = (2 * r2[fn][0]) / (2 * t2) - (3 * r1[fn][0]) / (3 * t1)
            self.assertAlmostEqual(rows[fn]["change"], want, places=9)
        self.assertGreater(rows["main.funcB"]["change"], 0.3)
        self.assertLess(rows["main.funcA"]["change"], -0.3)
        # z on sample counts (cpu ÷ samples of the same selection): strong
        self.assertGreater(rows["main.funcB"]["significance"], 5)
        self.assertLess(rows["main.funcA"]["significance"], -5)
        self.assertLess(rows["main.funcB"]["p_value"], 1e-6)
        self.assertEqual(js["base"]["significance_basis"], "paired_count_type")
        # sorted by |change|; the two hot functions lead
        ch = [abs(r["change"]) for r in js["rows"]]
        self.assertEqual(ch, sorted(ch, reverse=True))
        self.assertEqual({js["rows"][0]["function"], js["rows"][1]["function"]}, {"main.funcA", "main.funcB"})
        # the diff flame tree: root totals, and per-function self sums over nodes
        fl = js["flamegraph"]
        self.assertEqual(fl["root"]["base_total"], 3 * t1)
        self.assertEqual(fl["root"]["target_total"], 2 * t2)

        def node_sums(n, acc):
            a = acc.setdefault(n["name"], [0, 0])
            a[0] += n["base_self"]
            a[1] += n["target_self"]
            for c in n["children"]:
                node_sums(c, acc)
            return acc
        sums = node_sums(fl["root"], {})
        self.assertEqual(sums["main.funcB"], [3 * r1["main.funcB"][0], 2 * r2["main.funcB"][0]])
        # absolute comparison
        js = self.view("diff", service="shop", type="cpu", base_from=T0 - 50 * MIN, base_until=T0 - 10 * MIN,
                       normalize="false", **{"from": T0 - 10 * MIN, "until": T0})
        rows = {r["function"]: r for r in js["rows"]}
        self.assertEqual(rows["main.funcB"]["change"], 2 * r2["main.funcB"][0] - 3 * r1["main.funcB"][0])

    def test_diff_across_services_and_defaults(self):
        # base_service only: base time range defaults to the target's
        T0 = self.T0
        t1, r1 = pprof_top(V1)
        t2, r2 = pprof_top(V2)
        js = self.view("diff", service="shop", base_service="shop-old", type="cpu",
                       **{"from": T0 - 4 * MIN, "until": T0})
        self.assertEqual(js["base"]["service"], "shop-old")
        self.assertEqual((js["base"]["from"], js["base"]["until"]), ((T0 - 4 * MIN) * NS, T0 * NS))
        self.assertEqual(js["base_total"], 0)  # shop-old's upload is at T0-5min
        js = self.view("diff", service="shop", base_service="shop-old", type="cpu",
                       **{"from": T0 - 6 * MIN, "until": T0})
        self.assertEqual(js["base_total"], t1)
        self.assertEqual(js["target_total"], 2 * t2)
        # base type defaults to the target's resolved type (cpu here)
        js = self.view("diff", service="shop", base_service="shop-old", **{"from": T0 - 6 * MIN, "until": T0})
        self.assertEqual((js["type"], js["base"]["type"]), ("cpu", "cpu"))
        # errors name the parameter
        for params, name in (({"base_from": "yesterday"}, "base_from"), ({"normalize": "maybe"}, "normalize"),
                             ({"base_label.9x": "x"}, "base_label.9x")):
            st, js = self.get("/v1/projects/an/profiles/diff", service="shop", **params)
            self.assertEqual(st, 400, js)
            self.assertTrue(js["detail"].startswith(name + ":"), js)

    def test_names_not_utf8(self):
        """A frame name that is not UTF-8 (an upload's bytes) is shown with
        U+FFFD by every view, the diff's rows included, never dropped."""
        T0 = self.T0
        for at, n in ((-50 * MIN, 3), (-45 * MIN, 5)):
            data = b"main;ok \xff name;leaf %d\nmain;fine %d\n" % (n, n)
            st, js = self.hub.upload(data, self.up, "badutf", format="folded", **{"from": str(T0 + at)})
            self.assertEqual(st, 200, js)
        bad = "ok \ufffd name"
        rng = {"from": T0 - 51 * MIN, "until": T0 - 40 * MIN}
        for path in ("raw", "auto"):  # auto: the aggregates here
            js = self.view("table", service="badutf", path=path, **rng)
            rows = {r["function"]: r for r in js["rows"]}
            self.assertEqual(rows[bad]["total"], 8, (path, js))
            js = self.view("callgraph", service="badutf", path=path, **rng)
            self.assertIn(bad, {n["function"] for n in js["nodes"]}, (path, js))
            js = self.view("flamegraph", service="badutf", path=path, **rng)
            self.assertEqual([c["name"] for c in js["root"]["children"][0]["children"]], ["fine", bad], (path, js))
        js = self.view("diff", service="badutf", base_from=T0 - 51 * MIN, base_until=T0 - 46 * MIN,
                       **{"from": T0 - 46 * MIN, "until": T0 - 40 * MIN})
        rows = {r["function"]: r for r in js["rows"]}
        self.assertEqual((rows[bad]["base_total"], rows[bad]["target_total"]), (3, 5), js)
        self.assertEqual(len(rows), 4, js)  # main, fine, leaf and the bad name

    # ---- trace-to-profile -------------------------------------------------------
    def test_span_and_trace_filters(self):
        T0 = self.T0
        for key, val in (("span_id", SPAN), ("trace_id", TRACE)):
            _, ref = pprof_top(V2, extra=[f"-tagfocus={key}={val}"])
            want = {fn: flat for fn, (flat, _) in ref.items() if flat}
            js = self.view("table", service="shop", type="cpu", limit=100000,
                           **{key: val, "from": T0 - 4 * MIN, "until": T0 - 2 * MIN})
            self.assertEqual({r["function"]: r["self"] for r in js["rows"] if r["self"]}, want, key)
            self.assertEqual(js["total"], sum(want.values()))
            self.assertGreater(js["total"], 0)
            fl = self.view("flamegraph", service="shop", type="cpu",
                           **{key: val, "from": T0 - 4 * MIN, "until": T0 - 2 * MIN})
            self.assertEqual(fl["total"], js["total"])
        # an unknown span selects nothing (200, zero)
        js = self.view("table", service="shop", type="cpu", span_id="0000000000000000",
                       **{"from": T0 - 4 * MIN, "until": T0})
        self.assertEqual(js["total"], 0)

    # ---- regression issues --------------------------------------------------------
    def run_at(self, hub, at, token=None, project="an"):
        st, js = hub.request("POST", f"/v1/admin/analysis/run?project={project}&at={at}",
                             token=token or hub.admin_token)
        self.assertEqual(st, 200, js)
        return js

    def issues(self, **params):
        st, js = self.get("/v1/projects/an/issues", **params)
        self.assertEqual(st, 200, js)
        # Go runtime frames that sit on top of a hot loop (runtime.asyncPreempt
        # under load) rise with it and may get issues of their own: real, but
        # not what these checks are about.
        return [i for i in js["issues"] if i["service"] == "shop" and not i["function"].startswith("runtime.")]

    def test_regression_issue_lifecycle(self):
        T0 = self.T0
        res = self.run_at(self.hub, T0)
        self.assertEqual(res["window_end"], T0 * NS)
        self.assertGreaterEqual(res["opened"], 1, res)
        iss = self.issues()
        self.assertEqual([(i["function"], i["type"], i["state"]) for i in iss], [("main.funcB", "cpu", "open")])
        issue = iss[0]
        t1, r1 = pprof_top(V1)
        t2, r2 = pprof_top(V2)
        self.assertAlmostEqual(issue["baseline"]["share"], r1["main.funcB"][0] / t1, places=9)
        self.assertAlmostEqual(issue["recent"]["share"], r2["main.funcB"][0] / t2, places=9)
        self.assertGreater(issue["z"], 3.09)
        self.assertEqual(issue["opened"], T0 * NS)
        # idempotent: the same window again, and from a second hub process
        res = self.run_at(self.hub, T0)
        self.assertEqual(res["opened"], 0, res)
        self.assertGreaterEqual(res["updated"], 1, res)
        other = self.new_hub(self, "analysis")
        self.run_at(other, T0)
        self.run_at(other, T0 + 30)  # a later window (1 s steps here) updates the same issue
        iss = self.issues(state="all")
        self.assertEqual([i["id"] for i in iss], [issue["id"]])
        # acknowledge (project admin token); read tokens may not
        st, js = self.hub.request("PATCH", f"/v1/projects/an/issues/{issue['id']}",
                                  json.dumps({"state": "acknowledged"}), token=self.rd)
        self.assertEqual(st, 403, js)
        st, js = self.hub.request("PATCH", f"/v1/projects/an/issues/{issue['id']}",
                                  json.dumps({"state": "sleeping"}), token=self.adm)
        self.assertEqual(st, 400, js)
        self.assertTrue(js["detail"].startswith("state:"), js)
        st, js = self.hub.request("PATCH", "/v1/projects/an/issues/" + "0" * 32,
                                  json.dumps({"state": "muted"}), token=self.adm)
        self.assertEqual(st, 404, js)
        st, js = self.hub.request("PATCH", f"/v1/projects/an/issues/{issue['id']}",
                                  json.dumps({"state": "acknowledged"}), token=self.adm)
        self.assertEqual(st, 200, js)
        self.assertEqual(js["state"], "acknowledged")
        # a detector run keeps the user's state
        self.run_at(self.hub, T0 + 60)
        iss = self.issues(state="acknowledged")
        self.assertEqual([i["id"] for i in iss], [issue["id"]])
        self.assertEqual(self.issues(state="open"), [])
        # the audit log names the change
        audit = self.ch.query("SELECT action, detail FROM analysis.audit_events_v1 WHERE project = 'an'"
                              " AND action LIKE 'issue.%' FORMAT TabSeparated")
        self.assertIn(f"issue.acknowledged\t{issue['id']}", audit)
        # v1 again in a later recent window: funcB's share falls → resolved
        for at in (T0 + 11 * MIN, T0 + 13 * MIN):
            st, js = self.hub.upload(self.v1, self.up, "shop", format="pprof", **{"from": str(at)})
            self.assertEqual(st, 200, js)
        res = self.run_at(self.hub, T0 + 15 * MIN)
        self.assertEqual(res["resolved"], 1, res)
        # funcA's share now rises against a baseline that mixes v1 and v2; how
        # much depends on the generated profiles, so an issue for funcA may
        # legitimately open here. funcB's must not.
        b = lambda st: [i for i in self.issues(state=st) if i["function"] == "main.funcB"]
        self.assertEqual([(i["id"], i["resolved"]) for i in b("resolved")], [(issue["id"], (T0 + 15 * MIN) * NS)])
        self.assertEqual(b("open"), [])  # funcB not active
        # a stale run (older window) does not reopen it
        self.run_at(self.hub, T0)
        self.assertEqual([i["state"] for i in b("all")], ["resolved"])

    def test_worker_thread_opens_issue(self):
        now = int(time.time())
        for data, at in ((self.v1, now - 40 * MIN), (self.v1, now - 30 * MIN), (self.v2, now - 3 * MIN)):
            st, js = self.hub.upload(data, self.up, "live", format="pprof", **{"from": str(at)})
            self.assertEqual(st, 200, js)
        deadline = time.time() + 20
        got = []
        while time.time() < deadline:
            st, js = self.get("/v1/projects/an/issues", service="live")
            self.assertEqual(st, 200, js)
            got = [(i["function"], i["state"]) for i in js["issues"] if not i["function"].startswith("runtime.")]
            if got:
                break
            time.sleep(0.3)
        self.assertEqual(got, [("main.funcB", "open")])

    def test_issue_and_run_errors(self):
        st, js = self.get("/v1/projects/an/issues", state="sleeping")
        self.assertEqual(st, 400, js)
        self.assertTrue(js["detail"].startswith("state:"))
        st, js = self.hub.request("POST", "/v1/admin/analysis/run?project=an", token=self.rd)
        self.assertEqual(st, 403, js)
        st, js = self.hub.request("POST", "/v1/admin/analysis/run", token=self.adm)
        self.assertEqual(st, 403, js)
        st, js = self.hub.request("POST", "/v1/admin/analysis/run?at=soon", token=self.hub.admin_token)
        self.assertEqual(st, 400, js)
        self.assertTrue(js["detail"].startswith("at:"))
        st, js = self.hub.request("GET", "/v1/admin/analysis/run", token=self.hub.admin_token)
        self.assertEqual(st, 405, js)

    # ---- timeline -----------------------------------------------------------------
    def test_timeline_by_thread(self):
        T = self.T0 - 3600  # an empty stretch of this service
        recs, want = [], {}
        # 55 threads: w00..w54; thread i runs in seconds s where (s + i) % 3 != 0,
        # i+1 samples in each of those seconds (10 ms each)
        for i in range(55):
            comm = f"w{i:02d}"
            for s in range(10):
                if (s + i) % 3 == 0:
                    continue
                for k in range(i + 1):
                    t = 1000 + s + k * 0.005
                    recs.append((t, perf_record(comm, 100 + i, t, 10000000, ["work", "main"])))
                want.setdefault(comm, [0] * 10)[s] += (i + 1) * 10000000
        recs.sort()
        text = "".join(r for _, r in recs)
        first = recs[0][0]  # perf times are placed relative to the first record
        st, js = self.hub.upload(text.encode(), self.up, "threads", format="perf", **{"from": str(T + first - 1000)})
        self.assertEqual(st, 200, js)
        js = self.view("timeline", service="threads", by="thread", buckets=10, **{"from": T, "until": T + 10})
        self.assertEqual((js["bucket_ns"], js["buckets"], js["start_ns"]), (NS, 10, T * NS))
        self.assertEqual(js["unit"], "nanoseconds")
        rows = js["rows"]
        self.assertEqual(len(rows), 50)
        totals = sorted(((sum(v), c) for c, v in want.items()), key=lambda x: (-x[0], x[1]))
        top = [c for _, c in totals[:49]]
        self.assertEqual([r["value"] for r in rows[:49]], top)
        for r in rows[:49]:
            self.assertEqual(r["series"], want[r["value"]], r["value"])
            self.assertFalse(r["other"])
        rest = [c for _, c in totals[49:]]
        self.assertEqual((rows[49]["value"], rows[49]["other"]), ("other", True))
        self.assertEqual(rows[49]["series"], [sum(want[c][s] for c in rest) for s in range(10)])
        # limit 60: every thread its own row; a finer bucket width
        js = self.view("timeline", service="threads", by="thread", limit=50, buckets=100,
                       **{"from": T, "until": T + 10})
        self.assertEqual((js["bucket_ns"], js["buckets"]), (NS // 10, 100))
        st, js = self.get("/v1/projects/an/profiles/timeline", by="color")
        self.assertEqual(st, 400)
        self.assertTrue(js["detail"].startswith("by:"))
        st, js = self.get("/v1/projects/an/profiles/timeline", buckets="5000")
        self.assertEqual(st, 400)
        self.assertTrue(js["detail"].startswith("buckets:"))

    # ---- insights ------------------------------------------------------------------
    def test_insights_cards(self):
        T = self.T0 - 2 * 3600
        P = 10000000  # 10 ms per sample (100 Hz)
        recs = []

        def busy(host, t0, t1, per_100ms, gaps=()):
            # per_100ms samples in each 100 ms bucket of [t0, t1), none in the gaps
            b = 0
            while t0 + b * 0.1 < t1 - 1e-9:
                bt = t0 + b * 0.1
                if not any(g0 - 1e-9 <= bt < g1 - 1e-9 for g0, g1 in gaps):
                    for k in range(per_100ms):
                        recs.append((host, 1000 + bt + k * 0.01))
                b += 1
        busy("h1", 0, 12, 9)                                   # 12 s at 90%: burst
        busy("h1", 15, 17, 10)                                 # 2 s at 100%: saturation
        busy("h1", 20, 23, 8, gaps=((21.0, 21.3), (22.0, 22.5)))  # 80% with two gaps: starvation x2
        busy("h2", 0, 23, 3)                                   # 30% all along: nothing
        for host in ("h1", "h2"):
            rs = sorted(t for h, t in recs if h == host)
            text = "".join(perf_record("burn", 4242, t, P, ["spin", "main"]) for t in rs)
            st, js = self.hub.upload(text.encode(), self.up, "burst", format="perf",
                                     **{"from": str(T + rs[0] - 1000), "label.host": host})
            self.assertEqual(st, 200, js)
        js = self.view("insights", service="burst", **{"from": T - 60, "until": T + 60})
        self.assertEqual(js["series"], 2)
        cards = [(c["kind"], c["host"], c["from"], c["until"]) for c in js["cards"]]
        ms = NS // 1000
        self.assertEqual(cards, [
            ("cpu_burst", "h1", T * NS, (T + 12) * NS),
            ("cpu_saturation", "h1", (T + 15) * NS, (T + 17) * NS),
            ("starvation", "h1", (T + 21) * NS, (T + 21) * NS + 300 * ms),
            ("starvation", "h1", (T + 22) * NS, (T + 22) * NS + 500 * ms),
        ])
        self.assertAlmostEqual(js["cards"][0]["value"], 0.9, places=9)
        self.assertAlmostEqual(js["cards"][1]["value"], 1.0, places=9)
        self.assertAlmostEqual(js["cards"][3]["value"], 0.5, places=9)
        self.assertTrue(all(c["service"] == "burst" for c in js["cards"]))
        # host filter
        js = self.view("insights", service="burst", host="h2", **{"from": T - 60, "until": T + 60})
        self.assertEqual((js["series"], js["cards"]), (1, []))
        st, js = self.get("/v1/projects/an/profiles/insights", service="burst", type="inuse_space")
        self.assertEqual(st, 400)
        self.assertTrue(js["detail"].startswith("type:"))

    # ---- leaks ---------------------------------------------------------------------
    def test_leak_candidates(self):
        T = self.T0 - 5 * 3600
        for k, path in enumerate(LEAK):
            with open(path, "rb") as f:
                st, js = self.hub.upload(f.read(), self.up, "leaky", format="pprof",
                                         **{"from": str(T + 60 * k)})
            self.assertEqual(st, 200, js)
        js = self.view("leaks", service="leaky", **{"from": T - 30, "until": T + 6 * 60})
        self.assertEqual((js["type"], js["snapshots"], js["points"]), ("inuse_space", 6, 6))
        cands = js["candidates"]
        self.assertTrue(cands, js)
        top = cands[0]
        self.assertEqual(top["function"], "main.leakyCache")
        ref = [pprof_top(p, "inuse_space")[1].get("main.leakyCache", (0, 0))[0] for p in LEAK]
        self.assertEqual([pt["v"] for pt in top["series"]], ref)
        self.assertEqual([pt["t"] for pt in top["series"]], [(T + 60 * k) // 5 * 5 * NS for k in range(6)])
        self.assertGreater(top["slope_lower95_per_s"], 0)
        # ~256 KiB per minute
        self.assertAlmostEqual(top["slope_per_s"], 262144 / 60, delta=262144 / 60 * 0.05)
        # the constant-size buffer is not a candidate
        self.assertNotIn("main.steadyBuffer", [c["function"] for c in cands])
        js = self.view("leaks", service="leaky", type="inuse_objects", **{"from": T - 30, "until": T + 6 * 60})
        self.assertEqual(js["candidates"][0]["function"], "main.leakyCache")

    def test_leak_relative_floor(self):
        # What the Go runtime does now and then under load: a constant 512 KiB
        # buffer is charged 96 bytes of runtime bookkeeping from one snapshot
        # on. Steady, significant, and not a leak: below min_rel_growth (1 %
        # of its peak). A function growing from 0 to 96 bytes stays reported.
        T = self.T0 - 6 * 3600
        for k in range(6):
            steady = 524288 + (96 if k >= 4 else 0)
            text = (f"main;leakMode;leakyCache {262144 * (k + 1)}\n"
                    f"main;leakMode;steadyBuffer {steady}\n"
                    f"main;leakMode;tinyLeak {16 * k}\n"
                    f"main;leakMode;flat 4096\n")
            st, js = self.hub.upload(text.encode(), self.up, "leaky-floor", format="folded",
                                     type="inuse_space", **{"from": str(T + 60 * k)})
            self.assertEqual(st, 200, js)
        rng = {"from": T - 30, "until": T + 6 * 60}
        js = self.view("leaks", service="leaky-floor", **rng)
        self.assertEqual(js["snapshots"], 6)
        self.assertEqual([c["function"] for c in js["candidates"]], ["leakyCache", "tinyLeak"])
        js = self.view("leaks", service="leaky-floor", min_rel_growth="0", **rng)
        self.assertEqual([c["function"] for c in js["candidates"]], ["leakyCache", "steadyBuffer", "tinyLeak"])  # by slope
        steady = [c for c in js["candidates"] if c["function"] == "steadyBuffer"][0]
        self.assertEqual([p["v"] for p in steady["series"]], [524288] * 4 + [524384] * 2)
        st, js = self.get("/v1/projects/an/profiles/leaks", service="leaky-floor", min_rel_growth="-1")
        self.assertEqual(st, 400)
        self.assertTrue(js["detail"].startswith("min_rel_growth"), js)


if __name__ == "__main__":
    unittest.main()
