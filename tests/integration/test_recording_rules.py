#!/usr/bin/env python3
"""test_recording_rules.py — recording rules on a real wt-hub with a real
ClickHouse: PUT/GET /v1/projects/{p}/recording-rules (admin token,
audited, errors naming the field), values computed at ingest from every
sample of the uploads made after the rule exists, read back from the hub's
/metrics (the Prometheus text format parsed here by hand) and as a series
through …/recording-rules/{name}/series. The uploads are folded stacks
whose function totals are counted by hand below; the cardinality cap
drops new series and counts them. Uploads that reach the hub through an
edge (mutual-TLS replication) are evaluated the same way, once.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness.clickhouse import ClickHouse  # noqa: E402
from harness.edge import Edge  # noqa: E402
from harness.hub import BIN, Hub  # noqa: E402

U1 = b"main;parse;lex 30\nmain;parse 10\nmain;render 20\n"
U2 = b"main;render 5\nmain;parse;lex 7\nmain;lex 1\nmain;parse;parse 4\n"
U3 = b"main;parse 3\nmain;parse_json 2\n"
RULES = {"rules": [
    {"name": "checkout_parse", "service": "checkout", "type": "cpu", "function": "^parse$", "value": "self",
     "labels": ["host"]},
    {"name": "checkout_parse_total", "service": "checkout", "type": "cpu", "function": "parse", "value": "total"},
    {"name": "lex_by_env", "service": "checkout", "type": "cpu", "function": "^lex$", "value": "total",
     "labels": ["env"]},
]}

LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)$')
LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|$)')


def parse_prometheus(text):
    """{(name, frozenset(labels)): value} and {name: type} from the text
    exposition format (written from its specification, no library)."""
    samples, types = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, typ = line.split(None, 3)
            types[name] = typ
            continue
        if not line or line.startswith("#"):
            continue
        m = LINE.match(line)
        assert m, "unparsable metrics line: " + line
        labels, rest = {}, m.group(3) or ""
        while rest:
            lm = LABEL.match(rest)
            assert lm, "unparsable labels: " + rest
            labels[lm.group(1)] = re.sub(r'\\(.)', lambda e: "\n" if e.group(1) == "n" else e.group(1),
                                         lm.group(2))
            rest = rest[lm.end():]
        samples[(m.group(1), frozenset(labels.items()))] = float(m.group(4))
    return samples, types


class RecordingRules(unittest.TestCase):
    def setUp(self):
        self.ch = ClickHouse(self).start()
        self.hub = Hub(self, self.ch, hub_extra="", clickhouse_extra="")
        with open(self.hub.cfg, "a") as f:
            f.write("recording_rules = { max_series = 6; };\n")
        self.hub.start()
        st, js = self.hub.create_project("demo")
        self.assertEqual(st, 201, js)
        self.up = self.hub.create_token("demo", "upload")
        self.rd = self.hub.create_token("demo", "read")
        self.adm = self.hub.create_token("demo", "admin")
        self.t0 = (int(time.time()) - 3600) // 600 * 600

    def upload(self, data, at, service="checkout", **labels):
        st, js = self.hub.upload(data, self.up, service, format="folded",
                                 **{"from": str(self.t0 + at), "until": str(self.t0 + at + 10)},
                                 **{"label." + k: v for k, v in labels.items()})
        self.assertEqual(st, 200, js)

    def metrics(self):
        st, body = self.hub.request("GET", "/metrics")
        self.assertEqual(st, 200)
        return parse_prometheus(body.decode() if isinstance(body, bytes) else json.dumps(body))

    def rule_values(self):
        samples, types = self.metrics()
        self.assertEqual(types["wt_profile_rule_value"], "counter")
        out = {}
        for (name, labels), v in samples.items():
            if name == "wt_profile_rule_value":
                d = dict(labels)
                self.assertEqual((d.pop("project"), d.pop("service"), d.pop("type"), d.pop("unit")),
                                 ("demo", "checkout", "cpu", "samples"))
                out[(d.pop("rule"), frozenset(d.items()))] = v
        return out, samples

    def test_rules_exact_values(self):
        # before any rule: not counted later
        self.upload(U1, 10, host="h0", env="prod")
        st, js = self.hub.request("PUT", "/v1/projects/demo/recording-rules", json.dumps(RULES), token=self.rd)
        self.assertEqual(st, 403, js)
        st, js = self.hub.request("PUT", "/v1/projects/demo/recording-rules", json.dumps(RULES), token=self.adm)
        self.assertEqual(st, 200, js)
        self.assertEqual(js["revision"], 1)
        self.assertEqual([r["name"] for r in js["rules"]], [r["name"] for r in RULES["rules"]])
        st, got = self.hub.request("GET", "/v1/projects/demo/recording-rules", token=self.rd)
        self.assertEqual(st, 200, got)
        self.assertEqual(got["rules"], js["rules"])
        st, audit = self.hub.request("GET", "/v1/projects/demo/audit", token=self.adm)
        self.assertEqual(st, 200, audit)
        ev = [e for e in audit["events"] if e["action"] == "recording_rules.update"]
        self.assertEqual(len(ev), 1, audit)
        self.assertIn("checkout_parse_total", ev[0]["detail"])

        self.upload(U1, 70, host="h1", env="prod")
        self.upload(U2, 130, host="h2", env="staging")
        self.upload(U1, 190, service="api", host="h1", env="prod")  # other service: no rule
        vals, _ = self.rule_values()
        # hand count: self of parse (leaf "parse") per host; total of stacks
        # holding a function matching /parse/; total of stacks holding lex
        self.assertEqual(vals, {
            ("checkout_parse", frozenset({("host", "h1")})): 10,
            ("checkout_parse", frozenset({("host", "h2")})): 4,
            ("checkout_parse_total", frozenset()): 30 + 10 + 7 + 4,
            ("lex_by_env", frozenset({("env", "prod")})): 30,
            ("lex_by_env", frozenset({("env", "staging")})): 7 + 1,
        })
        # series through the query API, one point per upload minute
        st, js = self.hub.request("GET", f"/v1/projects/demo/recording-rules/checkout_parse/series?from={self.t0}"
                                         f"&until={self.t0 + 600}&points=10", token=self.rd)
        self.assertEqual(st, 200, js)
        self.assertEqual(js["unit"], "samples")
        self.assertEqual(js["step"], 60 * 10**9)
        series = {s["labels"]["host"]: s["points"] for s in js["series"]}
        self.assertEqual(series, {"h1": [[(self.t0 + 60) * 10**9, 10]], "h2": [[(self.t0 + 120) * 10**9, 4]]})
        st, js = self.hub.request("GET", f"/v1/projects/demo/recording-rules/lex_by_env/series?from={self.t0}"
                                         f"&until={self.t0 + 600}&points=1&label.env=staging", token=self.rd)
        self.assertEqual(st, 200, js)
        self.assertEqual([s["points"] for s in js["series"]], [[[self.t0 * 10**9, 8]]])

        # cap 6: a 6th series fits, the 7th is dropped and counted
        self.upload(U3, 250, host="h3", env="prod")
        self.upload(U3, 310, host="h4", env="prod")
        vals, samples = self.rule_values()
        self.assertEqual(vals[("checkout_parse", frozenset({("host", "h3")}))], 3)
        self.assertNotIn(("checkout_parse", frozenset({("host", "h4")})), vals)
        self.assertEqual(vals[("checkout_parse_total", frozenset())], 51 + 5 + 5)
        self.assertEqual(samples[("wt_profile_rule_series_dropped_total", frozenset())], 1)
        self.assertEqual(samples[("wt_profile_rule_series", frozenset())], 6)
        # the stored series keeps what the cap dropped from /metrics
        st, js = self.hub.request("GET", f"/v1/projects/demo/recording-rules/checkout_parse/series?from={self.t0}"
                                         f"&until={self.t0 + 600}&points=1&label.host=h4", token=self.rd)
        self.assertEqual([s["points"] for s in js["series"]], [[[self.t0 * 10**9, 3]]])

        # audited deletion removes the stored values with the samples
        st, js = self.hub.request("DELETE", f"/v1/projects/demo/profiles?before={self.t0 + 600}",
                                  token=self.hub.admin_token)
        self.assertEqual(st, 202, js)
        deadline, left = time.time() + 60, None
        while time.time() < deadline:
            st, js = self.hub.request("GET", f"/v1/projects/demo/recording-rules/checkout_parse/series?"
                                             f"from={self.t0}&until={self.t0 + 600}&points=1", token=self.rd)
            left = js["series"]
            if not left:
                break
            time.sleep(0.3)
        self.assertEqual(left, [])

        # replacing the rules keeps an unchanged rule's creation time
        created = {r["name"]: r["created"] for r in got["rules"]}
        new = {"rules": [RULES["rules"][0], dict(RULES["rules"][1], function="^parse")]}
        st, js = self.hub.request("PUT", "/v1/projects/demo/recording-rules", json.dumps(new), token=self.adm)
        self.assertEqual(st, 200, js)
        self.assertEqual(js["revision"], 2)
        self.assertEqual(js["rules"][0]["created"], created["checkout_parse"])
        self.assertGreater(js["rules"][1]["created"], created["checkout_parse_total"])

    def test_label_names_follow_the_upload_rule(self):
        # label keys are what an upload accepts (k8s/pod, app.kubernetes.io/name,
        # team-name); /metrics writes them as Prometheus label names (every
        # character outside [A-Za-z0-9_] as '_'), the stored series keep them
        rules = {"rules": [{"name": "pod_parse", "service": "checkout", "type": "cpu", "function": "^parse$",
                            "value": "self", "labels": ["k8s/pod", "app.kubernetes.io/name", "team-name"]}]}
        st, js = self.hub.request("PUT", "/v1/projects/demo/recording-rules", json.dumps(rules), token=self.adm)
        self.assertEqual(st, 200, js)
        self.assertEqual(js["rules"][0]["labels"], ["k8s/pod", "app.kubernetes.io/name", "team-name"])
        self.upload(U1, 70, **{"k8s/pod": "web-1", "app.kubernetes.io/name": "shop", "team-name": "t1"})
        vals, _ = self.rule_values()
        self.assertEqual(vals, {("pod_parse", frozenset({("k8s_pod", "web-1"), ("app_kubernetes_io_name", "shop"),
                                                         ("team_name", "t1")})): 10})
        st, js = self.hub.request("GET", f"/v1/projects/demo/recording-rules/pod_parse/series?from={self.t0}"
                                         f"&until={self.t0 + 600}&points=10&label.k8s/pod=web-1", token=self.rd)
        self.assertEqual(st, 200, js)
        self.assertEqual([(s["labels"], s["points"]) for s in js["series"]],
                         [({"k8s/pod": "web-1", "app.kubernetes.io/name": "shop", "team-name": "t1"},
                           [[(self.t0 + 60) * 10**9, 10]])])
        # two names that would be one Prometheus label name, and a key the
        # upload rule refuses, name the field
        for labels, k in ((["k8s/pod", "k8s_pod"], 1), (["ok", "1bad"], 1), (["a b"], 0)):
            st, js = self.hub.request("PUT", "/v1/projects/demo/recording-rules", json.dumps(
                {"rules": [dict(rules["rules"][0], labels=labels)]}), token=self.adm)
            self.assertEqual(st, 400, js)
            self.assertTrue(js["detail"].startswith(f"rules[0].labels[{k}]:"), js)

    def test_bad_rules_name_the_field(self):
        cases = [
            ({"rules": [dict(RULES["rules"][0], function="(")]}, "rules[0].function"),
            ({"rules": [RULES["rules"][0], dict(RULES["rules"][1], value="avg")]}, "rules[1].value"),
            ({"rules": [dict(RULES["rules"][0], labels=["project"])]}, "rules[0].labels[0]"),
            ({"rules": [RULES["rules"][0], RULES["rules"][0]]}, "rules[1].name"),
            ({"rule": []}, "rules"),
        ]
        for body, field in cases:
            st, js = self.hub.request("PUT", "/v1/projects/demo/recording-rules", json.dumps(body),
                                      token=self.hub.admin_token)
            self.assertEqual(st, 400, js)
            self.assertTrue(js["detail"].startswith(field + ":"), js)
        st, js = self.hub.request("GET", "/v1/projects/demo/recording-rules", token=self.rd)
        self.assertEqual((st, js["rules"], js["revision"]), (200, [], 0))


class ReplicatedRules(unittest.TestCase):
    """An edge's uploads, replicated to the hub, are evaluated once."""

    def test_replicated_uploads(self):
        wtctl = os.path.join(BIN, "wtctl")
        pki = tempfile.mkdtemp(prefix="wt-pki-")
        self.addCleanup(shutil.rmtree, pki, True)
        subprocess.run([wtctl, "pki", "init", "--dir", pki, "--hub-host", "127.0.0.1"], check=True,
                       capture_output=True)
        subprocess.run([wtctl, "pki", "issue-edge", "--ca", pki, "--edge-id", "edge1"], check=True,
                       capture_output=True)
        ch = ClickHouse(self).start()
        hub = Hub(self, ch, pki=pki).start()
        st, js = hub.create_project("demo")
        self.assertEqual(st, 201, js)
        hub.allow_edge("edge1")  # edges write only into projects they are registered to
        rd = hub.create_token("demo", "read")
        st, js = hub.request("PUT", "/v1/projects/demo/recording-rules", json.dumps(RULES), token=hub.admin_token)
        self.assertEqual(st, 200, js)
        edge = Edge(self, edge_id="edge1",
                    hub={"url": hub.repl_url, "ca": os.path.join(pki, "ca.crt"),
                         "cert": os.path.join(pki, "edge1.crt"), "key": os.path.join(pki, "edge1.key")},
                    replication="backoff_initial_ms = 50; backoff_max_ms = 500; interval_ms = 100;").start()
        t0 = (int(time.time()) - 3600) // 600 * 600
        for data, at, labels in ((U1, 70, {"label.host": "h1", "label.env": "prod"}),
                                 (U2, 130, {"label.host": "h2", "label.env": "staging"})):
            st, body = edge.upload(data, service="checkout", format="folded",
                                   **{"from": str(t0 + at), "until": str(t0 + at + 10)}, **labels)
            self.assertEqual(st, 200, body)
        deadline, got = time.time() + 60, None
        while time.time() < deadline:
            st, js = hub.query("demo", "table", rd, service="checkout", **{"from": str(t0), "until": str(t0 + 600)})
            got = js.get("total") if st == 200 else None
            if got == 60 + 17:
                break
            time.sleep(0.2)
        self.assertEqual(got, 77)
        time.sleep(1)  # a duplicate apply would show here
        st, body = hub.request("GET", "/metrics")
        samples, _ = parse_prometheus(body.decode())
        vals = {(dict(k)["rule"], dict(k).get("host"), dict(k).get("env")): v
                for (n, k), v in samples.items() if n == "wt_profile_rule_value"}
        self.assertEqual(vals, {("checkout_parse", "h1", None): 10, ("checkout_parse", "h2", None): 4,
                                ("checkout_parse_total", None, None): 51,
                                ("lex_by_env", None, "prod"): 30, ("lex_by_env", None, "staging"): 8})
        st, js = hub.request("GET", f"/v1/projects/demo/recording-rules/checkout_parse_total/series?from={t0}"
                                    f"&until={t0 + 600}&points=1", token=rd)
        self.assertEqual([s["points"] for s in js["series"]], [[[t0 * 10**9, 51]]])


if __name__ == "__main__":
    unittest.main()
