"""test_generated.py — profiles recorded on this machine by perf and node,
decoded offline by `wtctl profile summary` and checked against the tools'
own figures. These were unit tests (tests/unit/common/test_perf_script.c,
test_folded.c, test_cpuprofile.c) until they moved here: unit tests do not
start external profilers.

perf and node are installed by appliance/install-deps, so a generator that
fails here is a test failure, never a skip. No daemons are started.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_runtimes import cpuprofile_reference, perf_report  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("BUILD", "build")
WTCTL = os.path.join(os.environ.get("WT_BIN", os.path.join(ROOT, BUILD, "bin")), "wtctl")
GEN_PERF = os.path.join(ROOT, "tests", "gen", "gen-perf-folded")
WORK_JS = os.path.join(ROOT, "tests", "gen", "node", "work.js")


def run(*args, **kw):
    r = subprocess.run(list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300, **kw)
    if r.returncode != 0:
        raise AssertionError("%s exited %d: %s" % (" ".join(args), r.returncode,
                                                   r.stderr.decode(errors="replace")[-2000:]))
    return r.stdout.decode(errors="surrogateescape")


def summary(path, *extra):
    return json.loads(run(WTCTL, "--json", "profile", "summary", path, "--top", "0", *extra))


def selfs(s):
    """{function: self} of a summary (a function listed twice is summed)."""
    out = {}
    for r in s["top"]:
        out[r["function"]] = out.get(r["function"], 0) + r["self"]
    return out


class PerfRecordingTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = cls.tmp.name
        r = subprocess.run([GEN_PERF, cls.dir, "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=300)
        if r.returncode != 0:  # 77 too: perf comes with appliance/install-deps
            cls.tmp.cleanup()
            raise AssertionError("tests/gen/gen-perf-folded failed (exit %d): %s"
                                 % (r.returncode, r.stderr.decode(errors="replace")[-2000:]))
        cls.script = os.path.join(cls.dir, "perf-script.txt")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_perf_script_matches_perf_report(self):
        records = int(run("awk", "/^[^#[:space:]]/ { n++ } END { print n + 0 }", self.script))
        self.assertGreater(records, 50)
        samples, events, rows = perf_report(os.path.join(self.dir, "perf.data"))
        self.assertEqual(samples, records)
        s = summary(self.script, "--type", "samples")
        self.assertEqual(s["format"], "perf")
        self.assertEqual(s["samples"], records)
        self.assertEqual(s["total"], records)
        types = {t["type"]: t for t in s["types"]}
        self.assertEqual(types["cpu"]["unit"], "nanoseconds")  # cwork is recorded with cpu-clock
        self.assertEqual(types["cpu"]["total"], events)
        got = selfs(s)
        checked = 0
        for sym, n in sorted(rows.items(), key=lambda kv: -kv[1]):
            if sym.startswith("0x"):  # unresolved: perf says 0x…, we say [dso]
                continue
            self.assertEqual(got.get(sym), n, "perf report samples of %r" % sym)
            checked += 1
            if checked == 10:
                break
        self.assertGreaterEqual(checked, 3)
        # the recording's span: first to last record time (microseconds in the text)
        span_us = int(run("awk", r"""/^[^#[:space:]]/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) {
                          t = substr($i, 1, length($i) - 1) * 1e6; if (!n++ || t < lo) lo = t; if (t > hi) hi = t } }
                          END { printf "%.0f\n", hi - lo }""", self.script))
        self.assertGreater(span_us, 0)
        self.assertEqual(s["duration_ns"] // 1000, span_us)

    def test_folded_given_perf_text_is_parsed_as_perf(self):
        s = summary(self.script, "--format", "folded", "--type", "samples")
        self.assertEqual(s["format"], "perf")
        self.assertEqual(s["total"], int(run("awk", "/^[^#[:space:]]/ { n++ } END { print n + 0 }",
                                             self.script)))

    def test_collapsed_matches_independent_leaf_count(self):
        # cwork.folded: tests/gen/stackcollapse.awk; reference.tsv: an
        # independent count over the perf script text (gen-perf-folded)
        folded = os.path.join(self.dir, "cwork.folded")
        total, leaves = None, {}
        with open(os.path.join(self.dir, "reference.tsv")) as f:
            for line in f:
                c = line.rstrip("\n").split("\t")
                if c[0] == "total":
                    total = int(c[1])
                elif c[0] == "leaf":
                    leaves[c[1]] = int(c[2])
        self.assertGreater(total, 50)  # ~1 s at 999 Hz; fewer when the machine is busy
        self.assertGreaterEqual(len(leaves), 3)
        s = summary(folded, "--format", "folded")
        self.assertEqual(s["format"], "folded")
        self.assertEqual(s["total"], total)
        got = selfs(s)
        for fn, n in leaves.items():
            self.assertEqual(got.get(fn, 0), n, "self of %r" % fn)
        self.assertEqual(sum(got.values()), total)


class NodeCpuprofileTest(unittest.TestCase):
    def test_generated_cpuprofile_matches_reference(self):
        with tempfile.TemporaryDirectory() as d:
            r = subprocess.run(["node", "--cpu-prof", "--cpu-prof-dir=" + d, "--cpu-prof-name=work.cpuprofile",
                                WORK_JS, "500"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=300)
            # node comes with appliance/install-deps: failing to run it is a failure
            self.assertEqual(r.returncode, 0, r.stderr.decode(errors="replace")[-2000:])
            prof = os.path.join(d, "work.cpuprofile")
            ref_n, ref_cpu, ref_cnt, ref_ns = cpuprofile_reference(prof)  # ref_cpuprofile.py
            self.assertGreater(ref_n, 50)
            cpu = summary(prof, "--type", "cpu")
            smp = summary(prof, "--type", "samples")
            self.assertEqual(cpu["format"], "cpuprofile")
            self.assertEqual(cpu["unit"], "nanoseconds")
            self.assertEqual((smp["total"], cpu["total"]), (ref_n, ref_cpu))
            got_n, got_ns = selfs(smp), selfs(cpu)
            self.assertEqual(set(ref_cnt), set(ref_ns))
            for name in ref_cnt:
                self.assertEqual((got_n.get(name, 0), got_ns.get(name, 0)), (ref_cnt[name], ref_ns[name]), name)
            # work.js's own functions are among them
            self.assertGreater(sum(got_n.get(f, 0) for f in ("sortNumbers", "hashStrings", "fib")), 0)
            # wtctl profile convert-cpuprofile: folded counts sum to the samples
            folded = run(WTCTL, "profile", "convert-cpuprofile", prof)
            self.assertEqual(sum(int(l.rsplit(" ", 1)[1]) for l in folded.splitlines() if l.strip()), ref_n)


if __name__ == "__main__":
    unittest.main()
