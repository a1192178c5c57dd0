"""test_aggregates.py — the stack aggregates (hub/stackagg.h): every view
answered from them equals the raw path on the same data (a seeded property
test over random label filters, services, ranges and so resolutions);
audited deletion and retention remove rows from every resolution of
stack_agg_v1 and series_agg_v1; a hub upgraded from a schema without
aggregates, or with stack aggregates but no series_agg_v1, backfills them.

Each test starts its own ClickHouse and hub and stops them at the end.
"""
import json
import os
import random
import sys
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness.clickhouse import ClickHouse  # noqa: E402
from harness.hub import Hub  # noqa: E402

DAY = 86400
RES = (60, 3600, 86400)
LS = ("cityHash64(host, thread, container, arrayStringConcat(labels.key, '\\0'),"
      " arrayStringConcat(labels.value, '\\0'))")


def folded(rng, nstacks):
    lines = []
    for _ in range(nstacks):
        depth = rng.randint(1, 6)
        frames = [f"f{i}_{rng.randint(0, 3)}" for i in range(depth)]
        lines.append(";".join(frames) + f" {rng.randint(1, 50)}")
    return ("\n".join(lines) + "\n").encode()


def random_label_filters(rng, params, p):
    """Each of the loaded data's labels (host, thread, env) as a filter in
    params, with probability p each."""
    for k, vals in (("host", ["h1", "h2"]), ("thread", ["t1", "t2", "t3"]), ("env", ["prod", "dev", ""])):
        if rng.random() < p:
            params["label." + k] = rng.choice(vals)


def norm(x):
    """JSON with list order removed (ties may come out in any order)."""
    if isinstance(x, dict):
        return {k: norm(v) for k, v in x.items() if k not in ("path",)}
    if isinstance(x, list):
        return sorted((norm(v) for v in x), key=lambda v: json.dumps(v, sort_keys=True))
    return x


class AggregatesTest(unittest.TestCase):
    def setUp(self):
        self.ch = ClickHouse(self).start()
        self.db = "watchtower"

    def make_hub(self, extra="worker_interval_s = 0;"):
        hub = Hub(self, self.ch, database=self.db, hub_extra=extra)
        hub.start()
        return hub

    def q(self, sql):
        return self.ch.query(sql, database=self.db).strip()

    def wait_mutations(self, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.q("SELECT count() FROM system.mutations WHERE database = currentDatabase() AND is_done = 0") == "0":
                return
            time.sleep(0.2)
        self.fail("mutations did not finish")

    def load(self, hub, project, t0, n=40, seed=1):
        """n uploads over 3 days from t0, random labels, services, types."""
        rng = random.Random(seed)
        self.assertEqual(hub.create_project(project)[0], 201)
        up = hub.create_token(project, "upload")
        for i in range(n):
            t = t0 + rng.randint(0, 3 * DAY)
            params = {"format": "folded", "from": str(t), "type": rng.choice(["cpu", "cpu", "wall"]),
                      "label.host": rng.choice(["h1", "h2"]), "label.thread": rng.choice(["t1", "t2", "t3"])}
            if rng.random() < 0.6:
                params["label.env"] = rng.choice(["prod", "dev"])
            if rng.random() < 0.3:
                params["label.span_id"] = rng.choice(["s1", "s2"])
            st, js = hub.upload(folded(rng, rng.randint(5, 40)), up, rng.choice(["a", "b"]), **params)
            self.assertEqual(st, 200, js)
        return hub.create_token(project, "read")

    def check_invariant(self, where="1"):
        """Per resolution, the aggregates hold exactly the raw sums — over
        every label set (labelset 0) and per label set."""
        for r in RES:
            raw = self.q(f"SELECT project, service, sample_type, intDiv(intDiv(time_ns, 1000000000), {r}) * {r} AS b,"
                         f" sum(value) AS v FROM profile_samples_v1 WHERE {where} GROUP BY project, service,"
                         f" sample_type, b HAVING v != 0 ORDER BY project, service, sample_type, b FORMAT TabSeparated")
            agg = self.q(f"SELECT project, service, sample_type, bucket, sum(value) AS v FROM stack_agg_v1"
                         f" WHERE res = {r} AND labelset_id = 0 AND {where} GROUP BY project, service, sample_type,"
                         f" bucket HAVING v != 0 ORDER BY project, service, sample_type, bucket FORMAT TabSeparated")
            self.assertEqual(agg, raw, f"res {r}")
            raw = self.q(f"SELECT {LS} AS l, stack_id, sum(value) AS v FROM profile_samples_v1 WHERE {where}"
                         f" GROUP BY l, stack_id HAVING v != 0 ORDER BY l, stack_id FORMAT TabSeparated")
            agg = self.q(f"SELECT labelset_id AS l, stack_id, sum(value) AS v FROM stack_agg_v1 WHERE res = {r}"
                         f" AND labelset_id != 0 AND {where} GROUP BY l, stack_id HAVING v != 0 ORDER BY l, stack_id"
                         f" FORMAT TabSeparated")
            self.assertEqual(agg, raw, f"res {r} per label set")
            # series_agg_v1: per label set and bucket, no stack
            raw = self.q(f"SELECT project, service, sample_type, {LS} AS l,"
                         f" intDiv(intDiv(time_ns, 1000000000), {r}) * {r} AS b, sum(value) AS v FROM profile_samples_v1"
                         f" WHERE {where} GROUP BY project, service, sample_type, l, b HAVING v != 0"
                         f" ORDER BY project, service, sample_type, l, b FORMAT TabSeparated")
            agg = self.q(f"SELECT project, service, sample_type, labelset_id AS l, bucket, sum(value) AS v"
                         f" FROM series_agg_v1 WHERE res = {r} AND {where} GROUP BY project, service, sample_type,"
                         f" l, bucket HAVING v != 0 ORDER BY project, service, sample_type, l, bucket"
                         f" FORMAT TabSeparated")
            self.assertEqual(agg, raw, f"res {r} series")

    def compare(self, hub, project, rd, rng, t0, queries=40, expect_path="aggregates"):
        """Random selections: every view from the default path equals the raw path."""
        views = ("flamegraph", "table", "callgraph")
        for i in range(queries):
            a = t0 - 3600 + rng.randint(0, 3 * DAY + 7200)
            b = a + rng.choice([rng.randint(1, 7200), rng.randint(1, 3 * DAY), DAY, 3600])
            if rng.random() < 0.3:
                a -= a % rng.choice(RES)
            params = {"from": str(a), "until": str(b), "type": rng.choice(["cpu", "wall"])}
            if rng.random() < 0.5:
                params["service"] = rng.choice(["a", "b"])
            random_label_filters(rng, params, 0.3)
            span = rng.random() < 0.1
            if span:
                params["label.span_id"] = "s1"
            view = views[i % 3]
            st, got = hub.query(project, view, rd, **params)
            self.assertEqual(st, 200, got)
            st, raw = hub.query(project, view, rd, path="raw", **params)
            self.assertEqual(st, 200, raw)
            self.assertEqual(raw["path"], "raw")
            self.assertEqual(got["path"], "raw" if span else expect_path, params)
            self.assertEqual(norm(got), norm(raw), (view, params))
            if i % 5 == 0:
                dq = dict(params, base_from=str(a - 3600), base_until=str(a))
                st, dg = hub.request("GET", f"/v1/projects/{project}/profiles/diff?" + urllib.parse.urlencode(dq),
                                     token=rd)
                self.assertEqual(st, 200, dg)
                st, dr = hub.request("GET", f"/v1/projects/{project}/profiles/diff?"
                                     + urllib.parse.urlencode(dict(dq, path="raw")), token=rd)
                self.assertEqual(st, 200, dr)
                self.assertEqual(norm(dg), norm(dr), dq)
                if len(dg["rows"]) > 3:
                    # the first rows of a cut list are the full list's first
                    # (only the rows shown are sorted: hub/http_diff.c)
                    st, d3 = hub.request("GET", f"/v1/projects/{project}/profiles/diff?"
                                         + urllib.parse.urlencode(dict(dq, limit="3")), token=rd)
                    self.assertEqual(st, 200, d3)
                    self.assertEqual((d3["rows"], d3["truncated_rows"]), (dg["rows"][:3], True), dq)

    def timeline(self, hub, project, rd, params):
        st, js = hub.request("GET", f"/v1/projects/{project}/profiles/timeline?" + urllib.parse.urlencode(params),
                             token=rd)
        self.assertEqual(st, 200, js)
        return js

    def compare_timeline(self, hub, project, rd, rng, t0, queries=30, covered=True):
        """Random timelines: the default path (aggregates wherever the
        bucket width is whole minutes) equals the raw path. covered=False:
        no stored day is aggregated yet (only days after them are), so
        the answers must equal the raw path however they are read."""
        agg = nonempty = 0
        for i in range(queries):
            a = t0 - 3600 + rng.randint(0, 3 * DAY + 7200)
            b = a + rng.choice([rng.randint(600, 7200), rng.randint(3600, 3 * DAY), DAY, 3600])
            if rng.random() < 0.3:
                a -= a % rng.choice(RES)
            params = {"from": str(a), "until": str(b), "type": rng.choice(["cpu", "wall"]),
                      "by": rng.choice(["thread", "host", "service", "container", "span_id"])}
            if rng.random() < 0.5:
                params["buckets"] = str(rng.choice([1, 7, 48, 200, 2000]))
            if rng.random() < 0.4:
                params["service"] = rng.choice(["a", "b"])
            random_label_filters(rng, params, 0.3)
            if rng.random() < 0.2:
                params["limit"] = str(rng.choice([1, 2]))
            got = self.timeline(hub, project, rd, params)
            raw = self.timeline(hub, project, rd, dict(params, path="raw"))
            self.assertEqual(raw["path"], "raw")
            minutes = got["bucket_ns"] % (60 * 10**9) == 0
            if params["by"] == "span_id" or not minutes:
                self.assertEqual(got["path"], "raw", (params, got["bucket_ns"]))
            agg += got["path"] == "aggregates"
            # rows in order (total desc, value; "other" last), series exact
            self.assertEqual({k: v for k, v in got.items() if k != "path"},
                             {k: v for k, v in raw.items() if k != "path"}, params)
            nonempty += bool(raw["rows"])
        self.assertGreater(nonempty, queries // 4)
        if not covered:
            return
        self.assertGreater(agg, queries // 4)
        # automatic width: an hour in minutes from the aggregates, ten
        # minutes in 5 s buckets from the raw rows
        first = int(self.q(f"SELECT min(time_ns) FROM profile_samples_v1 WHERE project = '{project}'")) // 10**9
        h = first // 3600 * 3600
        js = self.timeline(hub, project, rd, {"from": str(h), "until": str(h + 3600), "by": "thread"})
        self.assertEqual((js["bucket_ns"], js["buckets"], js["path"]), (60 * 10**9, 60, "aggregates"), js)
        self.assertTrue(js["rows"] and all(r["total"] for r in js["rows"]), js)
        self.assertEqual(js, dict(self.timeline(hub, project, rd, {"from": str(h), "until": str(h + 3600),
                                                                  "by": "thread", "path": "raw"}), path="aggregates"))
        m = first // 60 * 60
        js = self.timeline(hub, project, rd, {"from": str(m), "until": str(m + 600), "by": "thread"})
        self.assertEqual((js["bucket_ns"], js["path"]), (5 * 10**9, "raw"), js)
        self.assertTrue(js["rows"], js)

    def compare_labels(self, hub, project, rd, rng, t0, queries=30):
        """Random /labels listings: the default path (label sets of the
        aggregate pieces from label_sets_v1, raw rows for the rest) lists
        the same keys and values as the raw path."""
        agg = nonempty = 0
        for i in range(queries):
            a = t0 - 3600 + rng.randint(0, 3 * DAY + 7200)
            b = a + rng.choice([rng.randint(1, 7200), rng.randint(3600, 3 * DAY), DAY, 3600, 59])
            if rng.random() < 0.3:
                a -= a % rng.choice(RES)
            params = {"from": str(a), "until": str(b)}
            if rng.random() < 0.6:
                params["type"] = rng.choice(["cpu", "wall"])
            if rng.random() < 0.5:
                params["service"] = rng.choice(["a", "b"])
            random_label_filters(rng, params, 0.2)
            if rng.random() < 0.1:
                params["label.span_id"] = "s1"
            got = self.labels(hub, project, rd, params)
            raw = self.labels(hub, project, rd, dict(params, path="raw"))
            self.assertEqual(raw["path"], "raw")
            if "label.span_id" in params:
                self.assertEqual(got["path"], "raw", params)
            agg += got["path"] == "aggregates"
            self.assertEqual(got["labels"], raw["labels"], params)
            nonempty += bool(raw["labels"])
        self.assertGreater(nonempty, queries // 4)
        self.assertGreater(agg, queries // 4)

    def labels(self, hub, project, rd, params):
        st, js = hub.request("GET", f"/v1/projects/{project}/labels?" + urllib.parse.urlencode(params), token=rd)
        self.assertEqual(st, 200, js)
        return js

    def test_views_equal_raw(self):
        hub = self.make_hub()
        t0 = (int(time.time()) // DAY - 5) * DAY + 1234
        rd = self.load(hub, "agg", t0)
        self.check_invariant()
        self.compare(hub, "agg", rd, random.Random(2), t0, queries=60)
        self.compare_timeline(hub, "agg", rd, random.Random(3), t0)
        self.compare_labels(hub, "agg", rd, random.Random(4), t0)
        # a second pass answers from the frames cache: still equal
        self.compare(hub, "agg", rd, random.Random(2), t0, queries=9)
        # many stacks and no frames cache: the misses are read by a subquery
        up = hub.create_token("agg", "upload")
        big = "".join(f"m{i % 7};n{i % 101};o{i} {1 + i % 5}\n" for i in range(6000)).encode()
        st, js = hub.upload(big, up, "a", format="folded", **{"from": str(t0 + 7200)})
        self.assertEqual(st, 200, js)
        hub.stop()
        hub2 = self.make_hub(extra="worker_interval_s = 0; stack_cache_bytes = 0;")
        for view in ("flamegraph", "table"):
            params = {"from": str(t0), "until": str(t0 + DAY + 17), "service": "a", "type": "cpu", "limit": "100000",
                      "max_nodes": "100000"}
            st, got = hub2.query("agg", view, rd, **params)
            self.assertEqual((st, got["path"]), (200, "aggregates"), got)
            st, raw = hub2.query("agg", view, rd, path="raw", **params)
            self.assertEqual(st, 200, raw)
            self.assertEqual(norm(got), norm(raw), view)
        hub2.stop()
        # aggregates off: every view from the raw rows
        hub3 = self.make_hub(extra="worker_interval_s = 0; query_aggregates = 0;")
        st, js = hub3.query("agg", "flamegraph", rd, **{"from": str(t0), "until": str(t0 + DAY)})
        self.assertEqual(st, 200, js)
        self.assertEqual(js["path"], "raw")

    def test_deletion_and_retention_every_resolution(self):
        hub = self.make_hub()
        now = int(time.time())
        t0 = (now // DAY - 5) * DAY + 1234
        rd = self.load(hub, "del", t0, n=30, seed=3)
        deleter = hub.create_token("del", "DeleteTelemetry")
        cut = t0 + DAY + 5437  # inside a minute, an hour and a day
        st, js = hub.request("DELETE", "/v1/projects/del/profiles?" + urllib.parse.urlencode(
            {"before": str(cut), "service": "a"}), token=deleter)
        self.assertEqual(st, 202, js)
        self.wait_mutations()
        self.assertEqual(self.q(f"SELECT count() FROM profile_samples_v1 WHERE service = 'a'"
                                f" AND time_ns < {cut * 10**9}"), "0")
        self.assertEqual(self.q(f"SELECT count() FROM stack_agg_v1 WHERE service = 'a' AND bucket + res <= {cut}"), "0")
        self.assertNotEqual(self.q(f"SELECT count() FROM stack_agg_v1 WHERE service = 'b' AND bucket < {cut}"), "0")
        self.assertEqual(self.q(f"SELECT count() FROM series_agg_v1 WHERE service = 'a' AND bucket + res <= {cut}"), "0")
        self.assertNotEqual(self.q(f"SELECT count() FROM series_agg_v1 WHERE service = 'b' AND bucket < {cut}"), "0")
        self.check_invariant()
        self.compare(hub, "del", rd, random.Random(4), t0, queries=15)
        # per-type retention (wall: 2 days) and project retention (30 days) on every resolution
        self.q("INSERT INTO profile_type_retention_v1 VALUES ('del', 'wall', 2, 1)")
        st, js = hub.request("POST", f"/v1/admin/worker/run?job=retention&now={now}", token=hub.admin_token)
        self.assertEqual(st, 200, js)
        self.wait_mutations()
        self.assertEqual(self.q(f"SELECT count() FROM stack_agg_v1 WHERE sample_type = 'wall'"
                                f" AND date <= toDate({now // DAY - 2})"), "0")
        self.assertNotEqual(self.q("SELECT count() FROM stack_agg_v1 WHERE sample_type = 'cpu'"
                                   f" AND date <= toDate({now // DAY - 2})"), "0")
        self.assertEqual(self.q(f"SELECT count() FROM series_agg_v1 WHERE sample_type = 'wall'"
                                f" AND date <= toDate({now // DAY - 2})"), "0")
        self.check_invariant()
        st, js = hub.request("POST", f"/v1/admin/worker/run?job=retention&now={now + 40 * DAY}",
                             token=hub.admin_token)
        self.assertEqual(st, 200, js)
        self.wait_mutations()
        self.assertEqual(self.q("SELECT count() FROM stack_agg_v1"), "0")
        self.assertEqual(self.q("SELECT count() FROM series_agg_v1"), "0")
        self.assertEqual(self.q("SELECT count() FROM profile_samples_v1"), "0")

    def test_far_future_until(self):
        """until past 2106-02-07 (4294967295 s, the end of 32-bit seconds):
        the raw path and the aggregates path both answer the whole total."""
        hub = self.make_hub()
        t0 = (int(time.time()) // DAY - 2) * DAY + 77
        rd = self.load(hub, "far", t0, n=6, seed=11)
        total = int(self.q("SELECT sum(value) FROM profile_samples_v1 WHERE project = 'far' AND service = 'a'"
                           " AND sample_type = 'cpu'"))
        self.assertGreater(total, 0)
        for until in ("5000000000", "7258118400", "9000000000"):
            for path in ("raw", "auto"):
                st, js = hub.query("far", "table", rd, path=path, service="a", type="cpu", until=until,
                                   **{"from": str(t0 - DAY)})
                self.assertEqual(st, 200, js)
                self.assertEqual(js["total"], total, (until, path))
        hub.stop()

    def test_view_cache(self):
        """A past range asked again comes from the view cache (viewcache.h)
        until the data it read changes: a late upload into the range, an
        audited deletion; cache=0 and the raw path answer the same."""
        hub = Hub(self, self.ch, database=self.db, hub_extra="worker_interval_s = 0;")
        hub.start(env={"WT_LOG_LEVEL": "debug"})
        # the range ends a day before today: only a range older than the
        # hub's settling lag is cached, whatever the time of day (from
        # three days back, it ended at 00:08:20 today and was not cacheable
        # in the first minutes after midnight UTC)
        t0 = (int(time.time()) // DAY - 4) * DAY + 500
        rd = self.load(hub, "vc", t0, n=12, seed=21)
        params = {"from": str(t0), "until": str(t0 + 3 * DAY), "service": "a", "type": "cpu"}

        def hits():
            return hub.read_log().count("view from the view cache")

        m0 = hub.metric("wt_hub_view_cache_hits_total")
        for view in ("flamegraph", "table", "callgraph"):
            st, first = hub.query("vc", view, rd, **params)
            self.assertEqual((st, first["path"]), (200, "aggregates"), first)
            n = hits()
            st, again = hub.query("vc", view, rd, **params)
            self.assertEqual(st, 200, again)
            self.assertEqual(hits(), n + 1, view)
            self.assertEqual(again, first, view)
            st, nocache = hub.query("vc", view, rd, cache="0", **params)
            self.assertEqual((st, hits()), (200, n + 1), view)
            self.assertEqual(nocache, first, view)
        # /metrics counts the three hits
        self.assertEqual(hub.metric("wt_hub_view_cache_hits_total") - m0, 3)
        self.assertGreater(hub.metric("wt_hub_view_cache_entries"), 0)
        st, before = hub.query("vc", "table", rd, **params)
        # a late upload into the range: the next answer has it
        up = hub.create_token("vc", "upload")
        st, js = hub.upload(b"late;frame 7\n", up, "a", format="folded", type="cpu",
                            **{"from": str(t0 + DAY)})
        self.assertEqual(st, 200, js)
        n = hits()
        st, after = hub.query("vc", "table", rd, **params)
        self.assertEqual(hits(), n)
        self.assertEqual(after["total"], before["total"] + 7)
        st, raw = hub.query("vc", "table", rd, path="raw", **params)
        self.assertEqual(norm(after), norm(raw))
        # an audited deletion: the next answer lacks the deleted samples
        deleter = hub.create_token("vc", "DeleteTelemetry")
        st, js = hub.request("DELETE", "/v1/projects/vc/profiles?" + urllib.parse.urlencode(
            {"before": str(t0 + DAY + 3600), "service": "a"}), token=deleter)
        self.assertEqual(st, 202, js)
        self.wait_mutations()
        st, deleted = hub.query("vc", "table", rd, **params)
        st, raw = hub.query("vc", "table", rd, path="raw", **params)
        self.assertEqual(norm(deleted), norm(raw))
        self.assertLess(deleted["total"], after["total"])
        # a range reaching into the last minutes is never cached
        n = hits()
        now = int(time.time())
        for _ in range(2):
            st, js = hub.query("vc", "flamegraph", rd, **{"from": str(now - 3600), "until": str(now)})
            self.assertEqual(st, 200, js)
        self.assertEqual(hits(), n)
        hub.stop()

    def test_migration_backfill(self):
        hub = self.make_hub()
        t0 = (int(time.time()) // DAY - 5) * DAY + 999
        rd = self.load(hub, "mig", t0, n=25, seed=5)
        hub.stop()
        # back to the schema before the aggregates: raw rows only
        for t in ("stack_agg_mv_v1", "label_sets_mv_v1", "series_agg_mv_v1", "stack_agg_v1", "label_sets_v1",
                  "series_agg_v1", "agg_state_v1"):
            self.q(f"DROP TABLE {t}")
        self.q("ALTER TABLE schema_migrations DELETE WHERE version >= 50")
        self.wait_mutations()
        hub = self.make_hub()
        self.assertNotEqual(self.q("SELECT value FROM agg_state_v1 FINAL WHERE key = 'agg_from_day'"), "0")
        # before the backfill: days not aggregated come from the raw rows
        self.compare(hub, "mig", rd, random.Random(6), t0, queries=12)
        # a late upload into an old day lands in the views' aggregates too
        up = hub.create_token("mig", "upload")
        st, js = hub.upload(folded(random.Random(9), 20), up, "a", format="folded", **{"from": str(t0 + 100)})
        self.assertEqual(st, 200, js)
        st, js = hub.request("POST", "/v1/admin/worker/run?job=aggregates", token=hub.admin_token)
        self.assertEqual(st, 200, js)
        self.assertEqual(js["agg_from_day"], 0, js)
        self.assertGreaterEqual(len(js["days_rebuilt"]), 3, js)
        self.wait_mutations()
        self.check_invariant()
        time.sleep(1.1)  # the hub caches the coverage for a second
        self.compare(hub, "mig", rd, random.Random(7), t0, queries=12)
        # nothing left: a second run is a no-op
        st, js = hub.request("POST", "/v1/admin/worker/run?job=aggregates", token=hub.admin_token)
        self.assertEqual(st, 200, js)
        self.assertEqual(js["days_rebuilt"], [])

    def test_migration_series(self):
        """A hub that had the stack aggregates but not series_agg_v1: the
        upgrade leaves every stored day to the backfill (timelines read
        them raw until then), which fills both tables."""
        hub = self.make_hub()
        t0 = (int(time.time()) // DAY - 5) * DAY + 777
        rd = self.load(hub, "ser", t0, n=25, seed=8)
        st, js = hub.request("POST", "/v1/admin/worker/run?job=aggregates", token=hub.admin_token)
        self.assertEqual((st, js["agg_from_day"]), (200, 0), js)
        hub.stop()
        for t in ("series_agg_mv_v1", "series_agg_v1"):
            self.q(f"DROP TABLE {t}")
        self.q("ALTER TABLE schema_migrations DELETE WHERE version >= 56 AND version < 60")
        self.wait_mutations()
        hub = self.make_hub()
        self.assertEqual(self.q("SELECT count() FROM series_agg_v1"), "0")
        day = int(self.q("SELECT value FROM agg_state_v1 FINAL WHERE key = 'agg_from_day'"
                         " ORDER BY updated_ns DESC LIMIT 1"))
        self.assertEqual(day, int(self.q("SELECT toUInt16(max(date)) + 1 FROM profile_samples_v1")))
        # before the backfill: the timelines of those days from the raw rows
        self.compare_timeline(hub, "ser", rd, random.Random(10), t0, queries=20, covered=False)
        st, js = hub.request("POST", "/v1/admin/worker/run?job=aggregates", token=hub.admin_token)
        self.assertEqual(st, 200, js)
        self.assertEqual(js["agg_from_day"], 0, js)
        self.wait_mutations()
        self.check_invariant()
        time.sleep(1.1)  # the hub caches the coverage for a second
        self.compare_timeline(hub, "ser", rd, random.Random(11), t0, queries=20)
        self.compare(hub, "ser", rd, random.Random(12), t0, queries=9)


if __name__ == "__main__":
    unittest.main()
