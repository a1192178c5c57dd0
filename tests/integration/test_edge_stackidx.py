"""test_edge_stackidx.py — the edge's local flame graph and table answered
from its stack index (stackidx + stackdict, edge/query.c) equal the same
queries answered row by row from the stacks rows (edge.query_aggregates =
false) on the same data dir: folded uploads over several minutes and hosts,
pprof uploads with per-sample labels and several sample types, two
services; queries over the whole buffer, minute-aligned and unaligned
ranges, a single minute, label filters that match some, all or none of the
samples, each type. Totals are also checked against what was uploaded.
Retention removes expired minutes from the index path too.
"""
import gzip
import os
import random
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness.edge import CORPUS, Edge  # noqa: E402

PPROF_LABELS = os.path.join(CORPUS, "pprof/pyroscope__go-cpu-labels.pb.gz")
GO_HEAP = os.path.join(CORPUS, "gen/go/go-heap.pb.gz")


def canon_tree(node):
    """A flame node with its children sorted by name (order is not part of
    the answer), recursively."""
    kids = sorted((canon_tree(k) for k in node.get("children", [])), key=lambda k: k["name"])
    return {"name": node["name"], "self": node["self"], "total": node["total"], "children": kids}


def canon(view, doc):
    if view == "flamegraph":
        return {"total": doc["total"], "truncated": doc.get("truncated"), "root": canon_tree(doc["root"])}
    rows = doc["rows"]
    return {"total": doc["total"], "rows": sorted(rows, key=lambda r: (r["function"], r["self"], r["total"]))}


class EdgeStackIndexTest(unittest.TestCase):
    def restart_on_rows(self, e):
        """Stop e and start it again on the same data with
        edge.query_aggregates = false (queries read the per-minute rows)."""
        self.assertEqual(e.stop(), 0)
        with open(e.cfg) as f:
            cfg = f.read()
        with open(e.cfg, "w") as f:
            f.write(cfg.replace('rollup_mode = "merge";', 'rollup_mode = "merge"; query_aggregates = false;'))
        e.start()

    def test_index_matches_rows(self):
        rng = random.Random(5)
        e = Edge(self, project="p", sync=False)
        e.start()
        t0 = int(time.time()) // 60 * 60 - 20 * 60
        names = [f"fn_{i}" for i in range(60)]
        pool = [";".join(["main"] + [rng.choice(names) for _ in range(rng.randint(1, 12))]) for _ in range(150)]
        uploaded = {"api": 0, "db": 0}
        # folded: 12 minutes x 3 hosts x 2 services, repeated stacks
        for m in range(12):
            for h in range(3):
                for svc in ("api", "db"):
                    counts = {}
                    for s in rng.choices(pool, k=300):
                        counts[s] = counts.get(s, 0) + 1
                    body = "".join(f"{s} {c}\n" for s, c in counts.items()).encode()
                    frm = t0 + m * 60 + rng.randint(0, 30)
                    st, out = e.upload(body, format="folded", service=svc, **{"from": frm, "until": frm + 20,
                                                                               "label.host": f"h{h}"})
                    self.assertEqual(st, 200, out)
                    uploaded[svc] += 300
        # pprof with per-sample labels (cpu) and a heap profile (four types)
        with open(PPROF_LABELS, "rb") as f:
            lab = f.read()
        with open(GO_HEAP, "rb") as f:
            heap = f.read()
        for m in (3, 7):
            st, out = e.upload(lab, format="pprof", service="api", **{"from": t0 + m * 60 + 5, "label.host": "h9"})
            self.assertEqual(st, 200, out)
            st, out = e.upload(heap, format="pprof", service="api", **{"from": t0 + m * 60 + 5})
            self.assertEqual(st, 200, out)

        queries = [("flamegraph", {}), ("table", {}),
                   ("flamegraph", {"service": "db"}), ("table", {"service": "db"})]
        for _ in range(14):
            a = t0 + rng.randint(-60, 11 * 60)
            b = a + rng.choice([0, 59, 60, 61, 300, 777, 3600])
            q = {"service": rng.choice(["api", "db"]), "from": a, "until": b}
            if rng.random() < 0.5:
                q["label.host"] = rng.choice(["h0", "h1", "h2", "h9", "nope"])
            queries.append((rng.choice(["flamegraph", "table"]), q))
        queries += [("flamegraph", {"service": "api", "from": t0 + 3 * 60, "until": t0 + 3 * 60 + 59}),
                    ("flamegraph", {"service": "api", "type": "alloc_space"}),
                    ("table", {"service": "api", "type": "inuse_objects", "from": t0 + 7 * 60}),
                    ("flamegraph", {"service": "api", "label.host": "h9"})]
        # pprof's own sample labels, whatever keys the file uses
        st, doc = e.query("flamegraph", service="api")
        self.assertEqual(st, 200, doc)

        def run_all():
            out = []
            for view, q in queries:
                st, doc = e.query(view, **q)
                self.assertEqual(st, 200, (view, q, doc))
                out.append(canon(view, doc))
            return out

        idx = run_all()
        # exact totals against what was uploaded (folded only: db)
        self.assertEqual(idx[2]["total"], uploaded["db"])
        nonzero = sum(1 for r in idx if r["total"])
        self.assertGreater(nonzero, len(queries) // 2)
        self.assertTrue(any(r["total"] == 0 for r in idx), "a filter that matches nothing")
        self.assertTrue(any(len(r.get("rows", [])) > 10 for r in idx), "tables with rows")
        self.restart_on_rows(e)
        rows = run_all()
        for (view, q), a, b in zip(queries, idx, rows):
            self.assertEqual(a, b, f"{view} {q}: the stack index and the rows differ")

    def test_retention_removes_index(self):
        """Samples older than rollup_days leave the local views on both paths
        (the retention job range-deletes stacks, stackidx and stackdict)."""
        e = Edge(self, project="p", sync=False, retention={"rollup_days": 1, "interval_s": 1})
        e.start()
        now = int(time.time())
        body = b"main;a;b 5\nmain;a;c 7\n"
        for frm in (now - 3 * 86400, now - 120):
            st, out = e.upload(body, format="folded", service="s", **{"from": frm})
            self.assertEqual(st, 200, out)
        old = {"service": "s", "from": now - 3 * 86400 - 60, "until": now - 3 * 86400 + 60}
        deadline = time.time() + 20
        while time.time() < deadline:
            st, doc = e.query("flamegraph", **old)
            self.assertEqual(st, 200, doc)
            if doc["total"] == 0:
                break
            time.sleep(0.2)
        self.assertEqual(doc["total"], 0, "the expired minute is still answered")
        # its index entries went with its rows (else the query finds entries
        # whose stacks are gone, skips them and says so)
        self.assertNotIn("without its stacks row", e.read_log())
        st, doc = e.query("flamegraph", service="s")
        self.assertEqual(doc["total"], 12)
        self.restart_on_rows(e)
        st, doc = e.query("flamegraph", service="s")
        self.assertEqual(doc["total"], 12)
        st, doc = e.query("flamegraph", **old)
        self.assertEqual(doc["total"], 0)


if __name__ == "__main__":
    unittest.main()
