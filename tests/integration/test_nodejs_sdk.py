#!/usr/bin/env python3
"""test_nodejs_sdk.py — the real @pyroscope/nodejs SDK (npm, pinned
version, installed under $BUILD/npm on first use; `--prefer-offline`, so
the npm cache serves later installs without a network) runs a Node
program with its default settings (wall + heap profilers, pushed to
POST /ingest) against a real wt-edge.

Every request the SDK makes is captured by the program itself
(tests/integration/nodejs/pyroscope_app.js wraps fetch) and answered by
the edge with 200. What the edge stores is compared with those exported
pprof bodies, read by an independent wire-format walker
(tests/tools/pbwire.py): per sample type the totals, per leaf function the
self values, the service name (the SDK's appName) and the labels the SDK
put into `name=app{k=v,…}`.
"""
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness.edge import ROOT, UPLOAD_TOKEN, Edge  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
from pbwire import fields, varint  # noqa: E402

SDK = "@pyroscope/nodejs@0.6.4"
APP = os.path.join(ROOT, "tests", "integration", "nodejs", "pyroscope_app.js")
# the SDK's pprof sample types → our canonical types (docs/formats.md)
TYPES = {"samples": "samples", "wall": "wall", "objects": "inuse_objects", "space": "inuse_space",
         "inuse_objects": "inuse_objects", "inuse_space": "inuse_space"}


def sdk_dir():
    """node_modules with the SDK, installed with npm under the build dir."""
    build = os.path.join(ROOT, os.environ.get("BUILD", "build"))
    d = os.path.join(build, "npm")
    pkg = os.path.join(d, "node_modules", "@pyroscope", "nodejs", "package.json")
    if not os.path.exists(pkg):
        os.makedirs(d, exist_ok=True)
        r = subprocess.run(["npm", "install", "--prefer-offline", "--no-audit", "--no-fund", "--prefix", d, SDK],
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0 or not os.path.exists(pkg):
            return None, r.stderr[-2000:]
    return os.path.join(d, "node_modules"), None


def _varints(wt, v):
    if wt == 0:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = varint(v, i)
        out.append(x)
    return out


def pprof_read(b):
    """({type: total}, {type: {leaf function: self}}) of one pprof body."""
    if b[:2] == b"\x1f\x8b":
        b = gzip.decompress(b)
    strings, stypes, samples, locs, funcs = [], [], [], {}, {}
    for f, wt, v in fields(b):
        if f == 6:
            strings.append(v.decode("utf-8", "replace"))
        elif f == 1:
            stypes.append(dict((ff, vv) for ff, _, vv in fields(v)).get(1, 0))
        elif f == 2:
            ids, vals = [], []
            for ff, w2, vv in fields(v):
                if ff == 1:
                    ids += _varints(w2, vv)
                elif ff == 2:
                    vals += [x - (1 << 64) if x >= 1 << 63 else x for x in _varints(w2, vv)]
            samples.append((ids, vals))
        elif f == 4:
            lid, fn = 0, None
            for ff, _, vv in fields(v):
                if ff == 1:
                    lid = vv
                elif ff == 4 and fn is None:
                    fn = dict((f3, v3) for f3, _, v3 in fields(vv)).get(1, 0)
            locs[lid] = fn
        elif f == 5:
            d = dict((ff, vv) for ff, _, vv in fields(v))
            funcs[d.get(1, 0)] = d.get(2, 0)
    names = [strings[t] for t in stypes]
    totals, leaf = {n: 0 for n in names}, {n: {} for n in names}
    for ids, vals in samples:
        fn = locs.get(ids[0]) if ids else None
        name = strings[funcs[fn]] if fn in funcs else None
        for n, v in zip(names, vals):
            totals[n] += v
            if name is not None and v:
                leaf[n][name] = leaf[n].get(name, 0) + v
    return totals, leaf


class NodeSdk(unittest.TestCase):
    def test_pyroscope_nodejs_pushes_to_edge(self):
        mods, why = sdk_dir()
        if mods is None:
            self.fail("cannot install npm " + SDK + ": " + why)
        edge = Edge(self, retention={"rollup_days": 3650}).start()
        out = tempfile.mkdtemp(prefix="wt-node-sdk-")
        self.addCleanup(shutil.rmtree, out, True)
        r = subprocess.run(["node", APP, f"http://127.0.0.1:{edge.port}", UPLOAD_TOKEN, out, "3"],
                           capture_output=True, text=True, timeout=120, env=dict(os.environ, NODE_PATH=mods))
        self.assertEqual(r.returncode, 0, r.stderr)
        reqs = sorted(f[:-4] for f in os.listdir(out) if f.endswith(".url"))
        self.assertGreaterEqual(len(reqs), 2)  # wall and heap, exported by stop()
        expected, leaf, names = {}, {}, set()
        for q in reqs:
            with open(os.path.join(out, q + ".status")) as f:
                self.assertEqual(f.read(), "200", q)
            with open(os.path.join(out, q + ".url")) as f:
                url = urllib.parse.urlparse(f.read())
            self.assertEqual(url.path, "/ingest")
            qs = urllib.parse.parse_qs(url.query)
            names.add(qs["name"][0])
            with open(os.path.join(out, q + ".body"), "rb") as f:
                totals, lf = pprof_read(f.read())
            for t, v in totals.items():
                ours = TYPES[t]
                expected[ours] = expected.get(ours, 0) + v
                for fn, sv in lf[t].items():
                    leaf.setdefault(ours, {})[fn] = leaf.setdefault(ours, {}).get(fn, 0) + sv
        self.assertEqual(set(expected), {"samples", "wall", "inuse_objects", "inuse_space"})
        self.assertGreater(expected["wall"], 0)
        # name=node-app{otel.scope.name=…,…,env=it,region=eu-1}
        self.assertEqual(len(names), 1)
        name = names.pop()
        self.assertTrue(name.startswith("node-app{") and "env=it" in name and "region=eu-1" in name, name)
        span = {"from": "0", "until": "4102444800"}
        st, svc = edge.query("services")
        self.assertEqual(st, 200, svc)
        self.assertEqual([s["name"] for s in svc["services"]], ["node-app"])
        self.assertEqual({t["type"] for t in svc["services"][0]["types"]}, set(expected))
        for t, total in expected.items():
            st, js = edge.query("table", service="node-app", type=t, limit="100000", **span)
            self.assertEqual(st, 200, js)
            self.assertEqual(js["total"], total, t)
            self.assertEqual({row["function"]: row["self"] for row in js["rows"] if row["self"]},
                             {fn: v for fn, v in leaf[t].items() if v}, t)
            # the SDK's tags are labels of every sample
            st, js2 = edge.query("table", service="node-app", type=t, **span,
                                 **{"label.env": "it", "label.region": "eu-1",
                                    "label.process.runtime.name": "nodejs"})
            self.assertEqual((st, js2["total"]), (200, total), t)
        # the program's own functions are there (the SDK names them file:function:line)
        self.assertTrue(any(":burnCpu:" in fn for fn in leaf["wall"]), leaf["wall"])
        self.assertTrue(any(":allocateObjects:" in fn for fn in leaf["inuse_space"]), leaf["inuse_space"])


if __name__ == "__main__":
    unittest.main()
