#!/usr/bin/env python3
"""test_pyroscope_api.py — Pyroscope's query API (Connect protocol) on a
real wt-hub with a real ClickHouse, queried by a client generated from the
.proto files with Debian's protoc and python3-protobuf
(tests/tools/pyroscope_client.py, run by /usr/bin/python3), in both
encodings (application/proto and application/json).

Every answer is compared with the hub's own query API on the same data:
flame graph levels decoded back into stacks equal the stacks of
/profiles/flamegraph, totals and per-function self/total equal
/profiles/table, SelectMergeProfile's pprof re-aggregated equals the
table, SelectSeries points equal /profiles/series, Diff's two sides equal
two flame graphs; label names/values and series come from what was
uploaded; auth (Bearer, basic, X-Scope-OrgID) and errors follow Connect.
"""
import base64
import json
import os
import re
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness.clickhouse import ClickHouse  # noqa: E402
from harness.hub import CORPUS, ROOT, Hub  # noqa: E402

SYSPY = "/usr/bin/python3"  # Debian's python, where python3-protobuf lives
CLIENT = os.path.join(ROOT, "tests", "tools", "pyroscope_client.py")
GO_CPU = os.path.join(CORPUS, "pprof", "pyroscope__go-cpu-labels.pb.gz")
GO_HEAP = os.path.join(CORPUS, "pprof", "pyroscope__go-heap.pb.gz")
SPAN = "abcdef0123456789"
CPU_SAMPLES = "process_cpu:cpu:samples:cpu:nanoseconds"
CPU_NS = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
BIG = 1000000


class _ClassCleanup:
    def __init__(self, cls):
        self.cls = cls

    def addCleanup(self, fn, *a):
        self.cls.addClassCleanup(fn, *a)


def decode_flamegraph(fg, width=4, side=0):
    """{(frame, …) root first: self} from Pyroscope's levels (x offsets
    delta-encoded; a node's parent is the last node of the level above
    that starts at or before it on both sides)."""
    names = fg.get("names", [])
    levels = [[int(v) for v in lv.get("values", [])] for lv in fg.get("levels", [])]
    nodes = []  # per level: [(xl, xr, total, self, name, path)]
    for li, vals in enumerate(levels):
        row, prev = [], [0, 0]
        for i in range(0, len(vals), width):
            xs = []
            for s, at in enumerate((0, 3) if width == 7 else (0,)):
                x = prev[s] + vals[i + at]
                prev[s] = x + vals[i + at + 1]
                xs.append(x)
            if width == 4:
                xs.append(0)
            total, self_ = vals[i + 1 + 3 * side], vals[i + 2 + 3 * side]
            name = names[vals[i + width - 1]]
            if li == 0:
                path = ()
            else:
                parent = [p for p in nodes[li - 1] if p[0] <= xs[0] and p[1] <= xs[1]][-1]
                path = parent[5] + (name,)
            row.append((xs[0], xs[1], total, self_, name, path))
        nodes.append(row)
    stacks = {}
    for row in nodes[1:]:
        for n in row:
            if n[3]:
                stacks[n[5]] = stacks.get(n[5], 0) + n[3]
    root_total = nodes[0][0][2] if nodes else 0
    return stacks, root_total


def tree_stacks(node, path=(), out=None):
    """{(frame, …): self} of our flamegraph JSON tree."""
    out = {} if out is None else out
    for ch in node.get("children", []):
        p = path + (ch["name"],)
        if ch["self"]:
            out[p] = out.get(p, 0) + ch["self"]
        tree_stacks(ch, p, out)
    return out


def function_figures(stacks):
    """{function: (self, total)} from {stack: self}; total once per stack."""
    out = {}
    for st, v in stacks.items():
        s, t = out.get(st[-1], (0, 0))
        out[st[-1]] = (s + v, t)
        for fn in set(st):
            s, t = out.get(fn, (0, 0))
            out[fn] = (s, t + v)
    return out


class PyroscopeApi(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cc = _ClassCleanup(cls)
        cls.ch = ClickHouse(cc).start()
        cls.hub = Hub(cc, cls.ch).start()
        h = cls.hub
        for p in ("demo", "other"):
            st, js = h.create_project(p)
            assert st == 201, (st, js)
        cls.up = h.create_token("demo", "upload")
        cls.rd = h.create_token("demo", "read")
        cls.rd_other = h.create_token("other", "read")
        cls.t0 = (int(time.time()) - 3600) // 600 * 600
        t0 = cls.t0
        ups = [
            (b"main;parse;lex 30\nmain;parse 10\nmain;render 20\n", "checkout", "folded", 10,
             {"label.env": "prod", "label.host": "h1"}),
            (b"main;render 5\nmain;parse;lex 7\nmain;lex 1\n", "checkout", "folded", 130, {"label.env": "staging"}),
            (b"main;handler;db 40\nmain;handler 2\n", "checkout", "folded", 370, {"label.span_id": SPAN}),
            (open(GO_CPU, "rb").read(), "api", "pprof", 250, {}),
            (open(GO_HEAP, "rb").read(), "api", "pprof", 400, {}),
        ]
        for data, svc, fmt, at, labels in ups:
            st, js = h.upload(data, cls.up, svc, format=fmt, **{"from": str(t0 + at), "until": str(t0 + at + 10)},
                              **labels)
            assert st == 200, (st, js)
        cls.ms = {"start": str(t0 * 1000), "end": str((t0 + 600) * 1000)}
        cls.ours_range = {"from": str(t0), "until": str(t0 + 600)}

    # ---- helpers ---------------------------------------------------------------

    def call(self, calls, token=None, org=None):
        for c in calls:
            hd = c.setdefault("headers", {})
            if "Authorization" not in hd and token is not False:
                hd["Authorization"] = "Bearer " + (token or self.rd)
            if org:
                hd["X-Scope-OrgID"] = org
            c["headers"] = {k: v for k, v in hd.items() if v is not None}
        r = subprocess.run([SYSPY, CLIENT, self.hub.url], input=json.dumps(calls), capture_output=True,
                           text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def both(self, method, request):
        """Call in both encodings; the answers must agree; returns the body."""
        a, b = self.call([{"method": method, "request": request, "enc": "proto"},
                          {"method": method, "request": request, "enc": "json"}])
        self.assertEqual(a["status"], 200, a)
        self.assertEqual(b["status"], 200, b)
        self.assertEqual(a["content_type"], "application/proto")
        self.assertEqual(b["content_type"], "application/json")
        self.assertEqual(a["body"], b["body"])
        return a["body"]

    def ours(self, view, **params):
        st, js = self.hub.query("demo", view, self.rd, **dict(self.ours_range, **params))
        self.assertEqual(st, 200, js)
        return js

    def check_flame(self, fg, **ours):
        """fg (a FlameGraph) against our flamegraph and table."""
        stacks, total = decode_flamegraph(fg)
        tree = self.ours("flamegraph", max_nodes=str(BIG), **ours)
        table = self.ours("table", **ours)
        self.assertGreater(table["total"], 0)
        self.assertEqual(int(fg.get("total", 0)), table["total"])
        self.assertEqual(total, table["total"])
        self.assertEqual(stacks, tree_stacks(tree["root"]))
        figs = function_figures(stacks)
        self.assertEqual(figs, {r["function"]: (r["self"], r["total"]) for r in table["rows"]})
        self.assertEqual(int(fg.get("max_self", 0)), max(stacks.values()))
        return stacks

    # ---- the methods ----------------------------------------------------------------

    def test_merge_stacktraces_folded(self):
        body = self.both("SelectMergeStacktraces", dict(
            self.ms, profile_typeID=CPU_SAMPLES, label_selector='{service_name="checkout"}', max_nodes=str(BIG)))
        stacks = self.check_flame(body["flamegraph"], service="checkout", type="cpu")
        # hand count of the three uploads
        self.assertEqual(stacks, {("main", "parse", "lex"): 37, ("main", "parse"): 10, ("main", "render"): 25,
                                  ("main", "lex"): 1, ("main", "handler", "db"): 40, ("main", "handler"): 2})

    def test_merge_stacktraces_real_pprof(self):
        body = self.both("SelectMergeStacktraces", dict(
            self.ms, profile_typeID=CPU_NS, label_selector='{service_name="api"}', max_nodes=str(BIG)))
        self.check_flame(body["flamegraph"], service="api", type="cpu")

    def test_end_beyond_int64_nanoseconds(self):
        """an `end` in ms beyond what int64 nanoseconds hold saturates
        instead of overflowing (the UBSan build aborted on the multiply);
        the call is answered in both encodings"""
        for end in ("9300000000000", "9223372036854775807"):
            self.both("SelectMergeStacktraces", dict(
                start=self.ms["start"], end=end, profile_typeID=CPU_SAMPLES,
                label_selector='{service_name="checkout"}', max_nodes=str(BIG)))

    def test_end_in_year_2200(self):
        """an `end` past 2106-02-07 (beyond 32-bit seconds) answers the
        same flame graph, on the aggregates and on the raw path (a regex
        matcher); a ClickHouse date literal past 2105 selected nothing"""
        want = {("main", "parse", "lex"): 37, ("main", "parse"): 10, ("main", "render"): 25,
                ("main", "lex"): 1, ("main", "handler", "db"): 40, ("main", "handler"): 2}
        for sel in ('{service_name="checkout"}', '{service_name=~"checkout"}'):
            body = self.both("SelectMergeStacktraces", dict(
                start=self.ms["start"], end="7258118400000", profile_typeID=CPU_SAMPLES,
                label_selector=sel, max_nodes=str(BIG)))
            self.assertEqual(decode_flamegraph(body["flamegraph"])[0], want, sel)

    def test_max_nodes(self):
        body = self.both("SelectMergeStacktraces", dict(
            self.ms, profile_typeID=CPU_NS, label_selector='{service_name="api"}', max_nodes="20"))
        fg = body["flamegraph"]
        nodes = sum(len(lv.get("values", [])) // 4 for lv in fg["levels"])
        self.assertLessEqual(nodes, 20)
        tree = self.ours("flamegraph", service="api", type="cpu", max_nodes="20")
        stacks, total = decode_flamegraph(fg)
        self.assertEqual(stacks, tree_stacks(tree["root"]))
        self.assertEqual(total, tree["total"])

    def test_regex_and_negative_matchers(self):
        body = self.both("SelectMergeStacktraces", dict(
            self.ms, profile_typeID=CPU_SAMPLES, label_selector='{service_name=~"check.*", env=~"prod|nope"}'))
        self.check_flame(body["flamegraph"], service="checkout", type="cpu", **{"label.env": "prod"})
        body = self.both("SelectMergeStacktraces", dict(
            self.ms, profile_typeID=CPU_SAMPLES, label_selector='{service_name="checkout", env!~"prod|",'
                                                                ' host!="h9"}'))
        self.check_flame(body["flamegraph"], service="checkout", type="cpu", **{"label.env": "staging"})

    def test_profile_types_round_trip(self):
        body = self.both("ProfileTypes", self.ms)
        ids = {p["ID"]: p for p in body["profile_types"]}
        for want in ("memory:inuse_space:bytes:space:bytes", "memory:alloc_objects:count:space:bytes", CPU_NS):
            self.assertIn(want, ids)
        self.assertEqual(ids["memory:inuse_space:bytes:space:bytes"]["sample_type"], "inuse_space")
        st, svc = self.hub.request("GET", "/v1/projects/demo/services", token=self.rd)
        ours = {t["type"] for s in svc["services"] for t in s["types"]}
        self.assertEqual(len(ids), len(ours))
        # every id selects exactly our type
        for pid in ids:
            fg = self.both("SelectMergeStacktraces", dict(self.ms, profile_typeID=pid, label_selector="{}"))
            typ = pid.split(":")[1]
            typ = {"contentions": None, "delay": None}.get(typ, typ)
            if typ:
                self.assertEqual(int(fg["flamegraph"].get("total", 0)), self.ours("table", type=typ)["total"], pid)

    def test_label_names_and_values(self):
        names = self.both("LabelNames", dict(self.ms, matchers=['{service_name="checkout"}']))["names"]
        for n in ("service_name", "env", "host", "span_id", "__profile_type__"):
            self.assertIn(n, names)
        vals = self.both("LabelValues", dict(self.ms, name="service_name"))["names"]
        self.assertEqual(vals, ["api", "checkout"])
        vals = self.both("LabelValues", dict(self.ms, name="env", matchers=['{service_name="checkout"}']))["names"]
        self.assertEqual(vals, ["prod", "staging"])
        vals = self.both("LabelValues", dict(self.ms, name="env", matchers=['{service_name="api"}']))
        self.assertEqual(vals.get("names", []), [])
        # OR of two selectors
        vals = self.both("LabelValues", dict(self.ms, name="host", matchers=['{env="prod"}', '{env="nope"}']))
        self.assertEqual(vals["names"], ["h1"])
        pts = self.both("LabelValues", dict(self.ms, name="__profile_type__"))["names"]
        self.assertIn("memory:inuse_space:bytes:space:bytes", pts)

    def test_series(self):
        body = self.both("Series", dict(self.ms, matchers=['{service_name="checkout"}'],
                                        label_names=["service_name", "env"]))
        sets = sorted(tuple(sorted((lp["name"], lp["value"]) for lp in ls.get("labels", [])))
                      for ls in body["labels_set"])
        self.assertEqual(sets, [(("env", "prod"), ("service_name", "checkout")),
                                (("env", "staging"), ("service_name", "checkout")),
                                (("service_name", "checkout"),)])
        body = self.both("Series", dict(self.ms, matchers=['{service_name="api"}']))
        pts = {dict((lp["name"], lp["value"]) for lp in ls["labels"])["__profile_type__"]
               for ls in body["labels_set"]}
        self.assertIn("memory:inuse_space:bytes:space:bytes", pts)

    def test_select_series(self):
        body = self.both("SelectSeries", dict(self.ms, profile_typeID=CPU_SAMPLES, label_selector="{}",
                                              group_by=["service_name"], step=60))
        got = {s["labels"][0]["value"]: [(int(p["timestamp"]), p["value"]) for p in s["points"]]
               for s in body["series"]}
        self.assertEqual(set(got), {"api", "checkout"})
        for svc, pts in got.items():
            ours = self.ours("series", service=svc, type="cpu", points="10")
            self.assertEqual(ours["step"], 60 * 10**9)
            self.assertEqual(pts, [(t // 10**6, float(v)) for t, v in ours["points"] if v])
        self.assertEqual(sum(v for _, v in got["checkout"]), 115)
        # average per upload: the two prod/staging buckets hold one upload each
        body = self.both("SelectSeries", dict(self.ms, profile_typeID=CPU_SAMPLES,
                                              label_selector='{service_name="checkout"}', step=600,
                                              aggregation="TIME_SERIES_AGGREGATION_TYPE_AVERAGE"))
        self.assertEqual([p["value"] for p in body["series"][0]["points"]], [115 / 3])
        body = self.both("SelectSeries", dict(self.ms, profile_typeID=CPU_SAMPLES, label_selector="{}",
                                              group_by=["service_name"], step=60, limit=1))
        self.assertEqual(len(body["series"]), 1)

    def test_span_profile(self):
        body = self.both("SelectMergeSpanProfile", dict(
            self.ms, profile_typeID=CPU_SAMPLES, label_selector='{service_name="checkout"}',
            span_selector=[SPAN, "0000000000000001"]))
        stacks = self.check_flame(body["flamegraph"], service="checkout", type="cpu", span_id=SPAN)
        self.assertEqual(stacks, {("main", "handler", "db"): 40, ("main", "handler"): 2})

    def test_merge_profile_pprof(self):
        body = self.both("SelectMergeProfile", dict(self.ms, profile_typeID=CPU_NS,
                                                    label_selector='{service_name="api"}'))
        st = body["string_table"]
        fn_name = {int(f["id"]): st[int(f.get("name", 0))] for f in body["function"]}
        loc_fn = {int(lc["id"]): fn_name[int(lc["line"][0]["function_id"])] for lc in body["location"]}
        stacks = {}
        for s in body["sample"]:
            path = tuple(reversed([loc_fn[int(i)] for i in s["location_id"]]))
            stacks[path] = stacks.get(path, 0) + int(s["value"][0])
        table = self.ours("table", service="api", type="cpu")
        self.assertEqual(sum(stacks.values()), table["total"])
        self.assertEqual(function_figures(stacks), {r["function"]: (r["self"], r["total"]) for r in table["rows"]})
        self.assertEqual(st[int(body["sample_type"][0]["type"])], "cpu")
        self.assertEqual(st[int(body["sample_type"][0]["unit"])], "nanoseconds")

    def test_diff(self):
        side = lambda env: dict(self.ms, profile_typeID=CPU_SAMPLES,  # noqa: E731
                                label_selector='{service_name="checkout", env="%s"}' % env)
        body = self.both("Diff", {"left": side("prod"), "right": side("staging")})
        fd = body["flamegraph"]
        prod = self.ours("flamegraph", service="checkout", type="cpu", **{"label.env": "prod"})
        stag = self.ours("flamegraph", service="checkout", type="cpu", **{"label.env": "staging"})
        self.assertEqual(int(fd["leftTicks"]), prod["total"])
        self.assertEqual(int(fd["rightTicks"]), stag["total"])
        self.assertEqual(int(fd["total"]), prod["total"] + stag["total"])
        self.assertEqual(decode_flamegraph(fd, 7, 0)[0], tree_stacks(prod["root"]))
        self.assertEqual(decode_flamegraph(fd, 7, 1)[0], tree_stacks(stag["root"]))

    # ---- auth and errors ---------------------------------------------------------------

    def test_auth(self):
        req = dict(self.ms, profile_typeID=CPU_SAMPLES, label_selector='{service_name="checkout"}')
        m = "SelectMergeStacktraces"
        basic = "Basic " + base64.b64encode(("pyroscope:" + self.rd).encode()).decode()
        ans = self.call([
            {"method": m, "request": req, "headers": {"Authorization": basic}},
            {"method": m, "request": req, "headers": {"Authorization": "Bearer " + self.hub.admin_token,
                                                      "X-Scope-OrgID": "demo"}},
            {"method": m, "request": req, "headers": {"X-Scope-OrgID": "demo", "Authorization": None}},
            {"method": m, "request": req, "headers": {"Authorization": "Bearer " + self.rd_other,
                                                      "X-Scope-OrgID": "demo"}},
            {"method": m, "request": req, "headers": {"Authorization": "Bearer " + "0" * 64}},
            {"method": m, "request": req, "headers": {"Authorization": "Bearer " + self.hub.admin_token}},
            {"method": m, "request": req, "headers": {"Authorization": "Bearer " + self.rd_other}},
        ])
        self.assertEqual(ans[0]["status"], 200, ans[0])
        self.assertEqual(int(ans[0]["body"]["flamegraph"]["total"]), 115)
        self.assertEqual(ans[1]["status"], 200, ans[1])
        self.assertEqual(ans[1]["body"], ans[0]["body"])
        self.assertEqual(ans[2]["status"], 401)
        self.assertEqual(ans[2]["error"]["code"], "unauthenticated")
        self.assertEqual(ans[3]["status"], 403)
        self.assertEqual(ans[3]["error"]["code"], "permission_denied")
        self.assertEqual(ans[4]["status"], 401)
        self.assertEqual(ans[5]["status"], 400)
        self.assertIn("X-Scope-OrgID", ans[5]["error"]["message"])
        # another project's token sees its own (empty) project
        self.assertEqual(ans[6]["status"], 200, ans[6])
        self.assertEqual(int(ans[6]["body"]["flamegraph"].get("total", 0)), 0)

    def test_errors(self):
        m = "SelectMergeStacktraces"
        ans = self.call([
            {"method": m, "request": dict(self.ms, profile_typeID=CPU_SAMPLES,
                                          label_selector='{service_name="a" env="b"}')},
            {"method": m, "request": dict(self.ms, profile_typeID=CPU_SAMPLES,
                                          label_selector='{service_name="a}'), "enc": "json"},
            {"method": m, "request": dict(self.ms, profile_typeID="cpu", label_selector="{}")},
            {"method": m, "request": {}, "enc": "json", "raw": '{"start": "x"}'},
            {"method": m, "request": {}, "path": "/querier.v1.QuerierService/SelectHeatmap"},
            {"method": "LabelValues", "request": {"name": "bad name"}},
        ])
        self.assertEqual(ans[0]["status"], 400)
        self.assertEqual(ans[0]["error"]["code"], "invalid_argument")
        self.assertIn("label_selector: position 19: expected ',' or '}'", ans[0]["error"]["message"])
        self.assertIn("label_selector: position 15: value opened here is not closed", ans[1]["error"]["message"])
        self.assertEqual(ans[2]["status"], 400)
        self.assertIn("profile_typeID", ans[2]["error"]["message"])
        self.assertEqual(ans[3]["status"], 400)
        self.assertIn("start", ans[3]["error"]["message"])
        self.assertEqual(ans[4]["status"], 404)
        self.assertEqual(ans[4]["error"]["code"], "unimplemented")
        self.assertEqual(ans[5]["status"], 400)
        # wrong content type and method
        st, js = self.hub.request("POST", "/querier.v1.QuerierService/ProfileTypes", body=b"{}", token=self.rd,
                                  headers={"Content-Type": "text/plain"})
        self.assertEqual(st, 415, js)
        st, js = self.hub.request("GET", "/querier.v1.QuerierService/ProfileTypes", token=self.rd)
        self.assertEqual(st, 405, js)


class PyroscopePrefix(unittest.TestCase):
    def test_prefix(self):
        ch = ClickHouse(self).start()
        hub = Hub(self, ch, hub_extra='pyroscope_prefix = "/pyroscope";').start()
        st, js = hub.create_project("demo")
        self.assertEqual(st, 201, js)
        rd = hub.create_token("demo", "read")
        calls = [{"method": "LabelNames", "request": {}, "path": p, "headers": {"Authorization": "Bearer " + rd}}
                 for p in ("/pyroscope/querier.v1.QuerierService/LabelNames", "/querier.v1.QuerierService/LabelNames")]
        r = subprocess.run([SYSPY, CLIENT, hub.url], input=json.dumps(calls), capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        a, b = json.loads(r.stdout)
        self.assertEqual(a["status"], 200, a)
        self.assertEqual(a["body"]["names"], ["__profile_type__"])  # empty project
        self.assertEqual(b["status"], 404)
        # the service is a row of the hub's route table: the route wrapper
        # counts its replies (the 200 above, a 401 without a token; the bare
        # path's 404 belongs to no route)
        st, js = hub.request("POST", "/pyroscope/querier.v1.QuerierService/LabelNames", body=b"{}",
                             headers={"Content-Type": "application/json"})
        self.assertEqual(st, 401, js)
        self.assertEqual(js["code"], "unauthenticated")
        st, text = hub.request("GET", "/metrics")
        self.assertEqual(st, 200)
        counts = dict(re.findall(r'^wt_hub_route_responses_total\{method="POST",'
                                 r'route="/querier.v1.QuerierService/\{method\}",class="(\dxx)"\} (\d+)$',
                                 text.decode(), re.M))
        self.assertEqual(counts, {"2xx": "1", "4xx": "1"}, text.decode()[-3000:])
        self.assertRegex(text.decode(), r'wt_hub_route_seconds_total\{method="POST",'
                         r'route="/querier.v1.QuerierService/\{method\}"\} [0-9.]+')


if __name__ == "__main__":
    unittest.main()
