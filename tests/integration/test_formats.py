#!/usr/bin/env python3
"""test_formats.py — what `wtctl profile summary` reads out of real
recordings of the corpus, checked against each ecosystem's own reading:
`jfr print` for JFR (wall-clock mode, allocation estimates, default type),
python's json module for speedscope, a protobuf walk in python
(tests/tools/otlp_ref.py) for OTLP protojson, awk over perf script text;
precise errors for damaged inputs that auto-detection still recognises.
Offline only: no daemon is started.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness.edge import Edge  # noqa: E402

ROOT = os.environ.get("WT_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("BUILD", "build")
BIN = os.environ.get("WT_BIN") or os.path.join(ROOT, BUILD, "bin")
WTCTL = os.path.join(BIN, "wtctl")
CORPUS = os.path.join(ROOT, "tests", "corpus")
JFR_WALL = os.path.join(CORPUS, "jfr", "jfr-parser__dump2-wall.jfr")
JFR_AP_WALL4 = os.path.join(CORPUS, "jfr", "jfr-parser__wall.jfr")
JFR_EXAMPLE = os.path.join(CORPUS, "jfr", "jfr-parser__example.jfr")
JFR_BOTH_ALLOC = os.path.join(CORPUS, "jfr", "jfr-parser__cpool-uint64-constant-index.jfr")
JFR_JDK_PROFILE = os.path.join(CORPUS, "gen", "java", "java17-app-profile.jfr")
JFR_DATADOG = os.path.join(CORPUS, "jfr", "jfr-parser__event-with-type-zero-datadog.jfr.gz")
PYSPY = os.path.join(CORPUS, "speedscope", "py-spy-0.4.1__linux-jax.speedscope.json")
NODE_WALL = os.path.join(CORPUS, "gen", "node", "node20-datadog-pprof-wall.pb.gz")
AUSTIN3 = os.path.join(CORPUS, "folded", "austin-python__austin-3.0.0-wall.out")
PERF_FORKS = os.path.join(CORPUS, "perf-script", "speedscope__forks.perf.txt")
PERF_FP = os.path.join(CORPUS, "gen", "perf-gzip", "perf-script-fp.txt")
PERF_IPERF = os.path.join(CORPUS, "perf-script", "flamegraph__perf-iperf-pidtid-01.txt")
IPERF_COLLAPSED = os.path.join(CORPUS, "folded", "flamegraph__perf-iperf-collapsed-addrs.txt")


def run(*args, check=True, stdin=None):
    r = subprocess.run(list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300,
                       input=stdin)
    if check and r.returncode != 0:
        raise AssertionError("%s failed (%d): %s" % (args, r.returncode, r.stderr.decode(errors="replace")))
    return r


def summary(path, *extra):
    return json.loads(run(WTCTL, "--json", "profile", "summary", path, "--top", "3", *extra).stdout)


def types_of(s):
    return {t["type"]: t for t in s["types"]}


def jfr_events(path, event):
    """Every event of one type as `jfr print --json` gives it."""
    out = run("jfr", "print", "--json", "--events", event, path).stdout
    return json.loads(out)["recording"]["events"]


@unittest.skipUnless(os.access(WTCTL, os.X_OK), "wtctl not built")
@unittest.skipUnless(shutil.which("jfr"), "jfr (JDK) not installed")
class JfrTest(unittest.TestCase):
    def test_async_profiler_wall_mode(self):
        # async-profiler event=wall: every ExecutionSample is wall time; the
        # RUNNABLE ones are also CPU (as Pyroscope's jfr-parser reads it).
        settings = jfr_events(JFR_WALL, "jdk.ActiveSetting")
        self.assertIn(("event", "wall"), [(e["values"]["name"], e["values"]["value"]) for e in settings])
        ev = jfr_events(JFR_WALL, "jdk.ExecutionSample")
        runnable = sum(1 for e in ev if e["values"]["state"] == "STATE_RUNNABLE")
        self.assertEqual((len(ev), runnable), (14723, 3358))
        s = summary(JFR_WALL)
        t = types_of(s)
        self.assertEqual(t["wall"]["total"], len(ev))
        self.assertEqual(t["cpu"]["total"], runnable)
        self.assertEqual(s["type"], "cpu")
        # leaf functions of the RUNNABLE samples, as jfr print names them
        leaf = {}
        for e in ev:
            if e["values"]["state"] != "STATE_RUNNABLE":
                continue
            fr = e["values"]["stackTrace"]["frames"][0]["method"]
            name = fr["type"]["name"].replace("/", ".") + "." + fr["name"]
            leaf[name] = leaf.get(name, 0) + 1
        top = max(leaf.items(), key=lambda kv: kv[1])
        self.assertEqual((s["top"][0]["function"], s["top"][0]["self"]), top)

    def test_cpu_mode_unchanged(self):
        # event=cpu/itimer recordings: every ExecutionSample is cpu, no wall
        s = summary(JFR_EXAMPLE)
        t = types_of(s)
        self.assertNotIn("wall", t)
        self.assertEqual(t["cpu"]["total"], len(jfr_events(JFR_EXAMPLE, "jdk.ExecutionSample")))

    def test_async_profiler4_wall_clock_samples_runnable_are_cpu(self):
        ev = jfr_events(JFR_AP_WALL4, "profiler.WallClockSample")
        wall = sum(e["values"]["samples"] for e in ev)
        runnable = sum(e["values"]["samples"] for e in ev if e["values"]["state"] == "STATE_RUNNABLE")
        t = types_of(summary(JFR_AP_WALL4))
        self.assertEqual(t["wall"]["total"], wall)
        self.assertEqual(t.get("cpu", {}).get("total", 0), runnable)

    def test_allocation_estimates_not_summed(self):
        # The Datadog profiler records both jdk.ObjectAllocationSample and the
        # TLAB pair: two estimates of the same allocations. The TLAB pair is kept.
        tlab = jfr_events(JFR_BOTH_ALLOC, "jdk.ObjectAllocationInNewTLAB")
        out = jfr_events(JFR_BOTH_ALLOC, "jdk.ObjectAllocationOutsideTLAB")
        sampled = jfr_events(JFR_BOTH_ALLOC, "jdk.ObjectAllocationSample")
        self.assertTrue(tlab and sampled)
        t = types_of(summary(JFR_BOTH_ALLOC))
        self.assertEqual(t["alloc_objects"]["total"], len(tlab) + len(out))
        self.assertEqual(t["alloc_space"]["total"],
                         sum(e["values"]["tlabSize"] for e in tlab) +
                         sum(e["values"]["allocationSize"] for e in out))

    def test_allocation_sample_alone_still_counts(self):
        sampled = jfr_events(JFR_JDK_PROFILE, "jdk.ObjectAllocationSample")
        t = types_of(summary(JFR_JDK_PROFILE))
        self.assertEqual(t["alloc_space"]["total"], sum(e["values"]["weight"] for e in sampled))

    def test_default_type_is_cpu(self):
        for path in (JFR_JDK_PROFILE, JFR_EXAMPLE, JFR_BOTH_ALLOC):
            with self.subTest(file=os.path.basename(path)):
                s = summary(path)
                self.assertEqual(s["type"], "cpu")
                out = run(WTCTL, "profile", "summary", path, "--top", "1").stdout.decode()
                self.assertRegex(out, r"\* cpu ")


@unittest.skipUnless(os.access(WTCTL, os.X_OK), "wtctl not built")
@unittest.skipUnless(shutil.which("jfr"), "jfr (JDK) not installed")
class DatadogJfrTest(unittest.TestCase):
    """A dd-trace-java recording: two JDK chunks and one chunk of the Datadog
    profiler (datadog.ExecutionSample, datadog.ObjectSample) plus
    datadog.ExceptionSample events. JDK 17's `jfr print` cannot read the
    Datadog chunk (an empty String pool), so the figures come per chunk
    from `jfr summary` / `jfr print` on `jfr disassemble`'s pieces."""

    @classmethod
    def setUpClass(cls):
        import gzip
        cls.tmp = tempfile.TemporaryDirectory()
        cls.path = os.path.join(cls.tmp.name, "dd.jfr")
        with gzip.open(JFR_DATADOG) as f, open(cls.path, "wb") as o:
            o.write(f.read())
        run("jfr", "disassemble", "--output", cls.tmp.name, "--max-chunks", "1", cls.path)
        cls.chunks = sorted(os.path.join(cls.tmp.name, n) for n in os.listdir(cls.tmp.name)
                            if n.startswith("dd_") and n.endswith(".jfr"))
        cls.counts = []
        for c in cls.chunks:
            out = run("jfr", "summary", c).stdout.decode()
            cls.counts.append({m.group(1): int(m.group(2)) for m in
                               re.finditer(r"^\s*(\S+)\s+(\d+)\s+\d+\s*$", out, re.M)})
        cls.s = summary(JFR_DATADOG, "--type", "exceptions")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def total(self, event):
        return sum(c.get(event, 0) for c in self.counts)

    def test_execution_samples_are_cpu(self):
        self.assertEqual(len(self.chunks), 3)
        self.assertGreater(self.total("datadog.ExecutionSample"), 1000)
        self.assertEqual(types_of(self.s)["cpu"]["total"],
                         self.total("jdk.ExecutionSample") + self.total("datadog.ExecutionSample"))

    def test_exception_samples(self):
        ev = []
        for c in self.chunks:
            r = run("jfr", "print", "--json", "--events", "datadog.ExceptionSample", c, check=False)
            if r.returncode == 0:
                ev += json.loads(r.stdout)["recording"]["events"]
        self.assertEqual(len(ev), self.total("datadog.ExceptionSample"))
        self.assertEqual(len(ev), 2)
        t = types_of(self.s)
        self.assertEqual(t["exceptions"]["total"], len(ev))  # not jdk.ExceptionStatistics' deltas
        leaf = {}
        for e in ev:
            fr = e["values"]["stackTrace"]["frames"][0]["method"]
            name = fr["type"]["name"].replace("/", ".") + "." + fr["name"]
            leaf[name] = leaf.get(name, 0) + 1
        got = {r["function"]: r["self"] for r in self.s["top"] if r["self"]}
        self.assertEqual(got, leaf)

    def test_allocations_from_the_datadog_profiler_only(self):
        # datadog.ObjectSample (one sampled object standing for `weight`
        # objects) wins over the JDK's TLAB and ObjectAllocationSample events
        # of the same period: never a sum of estimates
        n = self.total("datadog.ObjectSample")
        self.assertGreater(n, 30000)
        self.assertGreater(self.total("jdk.ObjectAllocationInNewTLAB"), 0)
        t = types_of(self.s)
        jdk = self.total("jdk.ObjectAllocationInNewTLAB") + self.total("jdk.ObjectAllocationOutsideTLAB")
        self.assertGreaterEqual(t["alloc_objects"]["total"], n)  # every weight is >= 1
        self.assertNotIn(t["alloc_objects"]["total"], (jdk, jdk + n, n + jdk + self.total("jdk.ObjectAllocationSample")))


@unittest.skipUnless(os.access(WTCTL, os.X_OK), "wtctl not built")
class CountsTest(unittest.TestCase):
    def test_speedscope_samples_are_the_samples_entries(self):
        with open(PYSPY) as f:
            doc = json.load(f)
        n = sum(len(p["samples"]) for p in doc["profiles"])
        s = summary(PYSPY)
        self.assertEqual(s["samples"], n)
        self.assertLess(s["rows"], n)  # merged rows are reported apart
        out = run(WTCTL, "profile", "summary", PYSPY, "--top", "1").stdout.decode()
        self.assertIn("Samples: %d (%d rows," % (n, s["rows"]), out)

    def test_austin_samples_are_lines(self):
        with open(AUSTIN3) as f:
            n = sum(1 for ln in f if ln.strip() and not ln.startswith("#"))
        self.assertEqual(summary(AUSTIN3)["samples"], n)

    def test_pprof_sample_records_without_count_type(self):
        # a pprof with no count type: the number of Sample messages, counted
        # by a protobuf walk (field 2 of Profile)
        path = os.path.join(CORPUS, "pprof", "pyroscope__dotnet-labels.pb")
        with open(path, "rb") as f:
            data = f.read()
        n, off = 0, 0
        while off < len(data):
            tag, off = varint(data, off)
            wt = tag & 7
            if wt == 0:
                _, off = varint(data, off)
            elif wt == 2:
                ln, off = varint(data, off)
                off += ln
            else:
                self.fail("unexpected wire type %d" % wt)
            n += (tag >> 3) == 2
        self.assertEqual(summary(path)["samples"], n)

    def test_pprof_sample_count_type_is_samples(self):
        # @datadog/pprof (and Pyroscope's Node.js SDK) name the count "sample"
        s = summary(NODE_WALL)
        t = types_of(s)
        self.assertIn("samples", t)
        self.assertNotIn("sample", t)
        self.assertEqual(s["samples"], t["samples"]["total"])


@unittest.skipUnless(os.access(WTCTL, os.X_OK), "wtctl not built")
class PerfScriptTest(unittest.TestCase):
    def test_unknown_kernel_frames_named_like_stackcollapse_perf(self):
        # stackcollapse-perf.pl names an "[unknown]" frame "[" + basename(DSO)
        # + "]", brackets or not: "[unknown] ([kernel.kallsyms])" becomes
        # "[[kernel.kallsyms]]", "[unknown] ([unknown])" "[unknown]".
        with open(PERF_FORKS) as f:
            text = f.read()
        n_kernel = text.count("[unknown] ([kernel.kallsyms])")
        self.assertGreater(n_kernel, 1000)
        out = run(WTCTL, "profile", "convert", PERF_FORKS, "--to", "folded", "--type", "samples").stdout.decode()
        kernel = unknown = 0
        for line in out.splitlines():
            stack, count = line.rsplit(" ", 1)
            frames = stack.split(";")
            kernel += frames.count("[[kernel.kallsyms]]") * int(count)
            unknown += frames.count("[unknown]") * int(count)
            self.assertNotIn("[kernel.kallsyms]", frames)
        self.assertEqual(kernel, n_kernel)
        self.assertEqual(unknown, text.count("[unknown] ([unknown])"))

    def complete_records(self, text):
        """Records a blank line ends (how perf script ends each sample with a
        call graph, and what stackcollapse-perf.pl counts)."""
        n, open_ = 0, False
        for line in text.splitlines():
            if line.startswith("#"):
                continue
            if line == "":
                n += open_
                open_ = False
            elif not line[0].isspace():
                open_ = True
        return n

    def test_cut_in_a_record_drops_it_with_a_warning(self):
        with open(PERF_FP) as f:
            text = f.read()
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        path = os.path.join(tmp.name, "cut.txt")
        nl = text.index("\n", len(text) // 3) + 1  # at a line end inside a record
        for cut in (text[:len(text) // 2], text[:len(text) // 3], text[:nl], text[:len(text) // 2 + 7]):
            with self.subTest(cut=len(cut)):
                self.assertFalse(cut.endswith("\n\n"))
                with open(path, "w") as f:
                    f.write(cut)
                want = self.complete_records(cut)
                all_headers = sum(1 for ln in cut.split("\n") if ln and not ln[0].isspace())
                self.assertEqual(all_headers, want + 1)
                r = run(WTCTL, "--json", "profile", "summary", path)
                s = json.loads(r.stdout)
                self.assertEqual(s["samples"], want)
                self.assertEqual(types_of(s)["samples"]["total"], want)
                self.assertEqual(len(s["warnings"]), 1)
                self.assertRegex(s["warnings"][0], r"^perf: line \d+: the last sample is cut short")
                self.assertIn(b"warning: perf: line", r.stderr)
                out = run(WTCTL, "profile", "summary", path).stdout.decode()
                self.assertIn("Warning: perf: line", out)
        # the whole file: no warning
        s = summary(PERF_FP)
        self.assertEqual(s["warnings"], [])
        self.assertEqual(s["samples"], self.complete_records(text))

    def test_last_record_without_blank_line_as_stackcollapse_perf(self):
        # FlameGraph's test input ends without the blank line after its last
        # sample; its own expected output (collapsed with --addrs) counts the
        # records before it.
        with open(IPERF_COLLAPSED) as f:
            ref = sum(int(ln.rsplit(" ", 1)[1]) for ln in f if ln.strip())
        s = summary(PERF_IPERF)
        self.assertEqual(s["samples"], ref)
        self.assertEqual(len(s["warnings"]), 1)


@unittest.skipUnless(os.access(WTCTL, os.X_OK), "wtctl not built")
class DamagedInputTest(unittest.TestCase):
    """A recognisable format cut short gets that format's precise error from
    auto-detection, as with --format, not "could not recognise"."""

    CASES = (  # corpus file, pattern of the error
        ("pprof/pyroscope__dotnet-labels.pb", rb"pprof: sample \(field 2\) at byte \d+: length \d+ runs past"),
        ("pprof/pyroscope__go-heap.pb", rb"pprof: \w+ \(field \d\) at byte \d+: length \d+ runs past"),
        ("otlp/pyroscope__otel-ebpf-profiler_otlp-1.8.0.pb",
         rb"otlp: request cut short: resource_profiles \(field 1\) at byte \d+: length \d+ runs past"),
        ("otlp/pyroscope__otel-ebpf-profiler_otlp-1.7.0-unsymbolized.pb",
         rb"otlp: request cut short: dictionary \(field 2\) at byte 2497: length 23859 runs past"),
        ("otlp/pyroscope__otel-ebpf-profiler_otlp-1.5.0-symbolized.pb",
         rb"otlp: request cut short: resource_profiles \(field 1\) at byte 0: length 95522 runs past"),
        ("gen/node/node20-cpu.cpuprofile", rb"cpuprofile: JSON error at line 1, column \d+ \(byte \d+\)"),
    )

    def test_cut_inputs(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        for rel, pattern in self.CASES:
            with open(os.path.join(CORPUS, rel), "rb") as f:
                data = f.read()
            for k in (2, 3, 10):
                with self.subTest(file=rel, cut="1/%d" % k):
                    path = os.path.join(tmp.name, "cut")
                    with open(path, "wb") as f:
                        f.write(data[:len(data) // k])
                    r = run(WTCTL, "profile", "summary", path, check=False)
                    self.assertEqual(r.returncode, 1, r.stderr)
                    self.assertNotIn(b"could not recognise", r.stderr)
                    self.assertRegex(r.stderr, pattern)

    def test_garbage_still_unrecognised(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        path = os.path.join(tmp.name, "g")
        for data in (b"garbage\x00\x01", bytes(range(256)) * 4, b"\x0a\xff\xff\xff\x0f" + b"x" * 50):
            with open(path, "wb") as f:
                f.write(data)
            r = run(WTCTL, "profile", "summary", path, check=False)
            self.assertEqual(r.returncode, 1)
            self.assertIn(b"could not recognise", r.stderr)


@unittest.skipUnless(os.access(os.path.join(BIN, "wt-edge"), os.X_OK), "wt-edge not built")
class EdgeUploadTest(unittest.TestCase):
    """What the edge's upload answer says about the same inputs."""

    @classmethod
    def setUpClass(cls):
        cls.edge = Edge()
        cls.edge.start()

    @classmethod
    def tearDownClass(cls):
        cls.edge.cleanup()

    def test_perf_cut_short_answer_has_the_warning(self):
        with open(PERF_FP, "rb") as f:
            data = f.read()
        st, body = self.edge.upload(data[:len(data) // 2], format="perf", service="perfcut")
        self.assertEqual(st, 200, body)
        js = json.loads(body)
        self.assertEqual(len(js["warnings"]), 1, js)
        self.assertIn("the last sample is cut short", js["warnings"][0])
        st, body = self.edge.upload(data, format="perf", service="perfwhole")
        self.assertEqual(st, 200, body)
        self.assertNotIn("warnings", json.loads(body))


@unittest.skipUnless(os.access(WTCTL, os.X_OK), "wtctl not built")
class OtlpJsonTest(unittest.TestCase):
    J18 = os.path.join(CORPUS, "otlp", "pyroscope__otel-ebpf-profiler_otlp-1.8.0.json")
    P18 = os.path.join(CORPUS, "otlp", "pyroscope__otel-ebpf-profiler_otlp-1.8.0.pb")
    J110 = os.path.join(CORPUS, "otlp", "pyroscope__otel-ebpf-profiler_otlp-1.10.0.json")

    def folded(self, path, typ):
        out = run(WTCTL, "profile", "convert", path, "--to", "folded", "--type", typ).stdout.decode()
        return sorted(out.splitlines())

    def test_json_equals_protobuf_of_the_same_request(self):
        # the 1.8.0 capture exists in both encodings: every stack and value equal
        sj, sp = summary(self.J18), summary(self.P18)
        self.assertEqual(sj["format"], "otlp")
        self.assertEqual(sj["types"], sp["types"])
        for t in ("cpu", "offcpu"):
            with self.subTest(type=t):
                a, b = self.folded(self.J18, t), self.folded(self.P18, t)
                self.assertGreater(len(a), 10)
                self.assertEqual(a, b)

    def reference(self, path):
        """Totals computed from the JSON with python: cpu = samples x period
        for samples/count profiles with a cpu period, offcpu = the sum of the
        events/nanoseconds values (a sample without values counts one per
        timestamp)."""
        with open(path) as f:
            doc = json.load(f)
        strings = doc["dictionary"]["stringTable"]
        cpu = offcpu = nsamples = 0
        for rp in doc["resourceProfiles"]:
            for sp in rp["scopeProfiles"]:
                for p in sp["profiles"]:
                    st = strings[p["sampleType"].get("typeStrindex", 0)]
                    samples = p.get("samples", p.get("sample", []))
                    raw = sum(sum(int(v) for v in s["values"]) if s.get("values")
                              else len(s.get("timestampsUnixNano", [])) for s in samples)
                    nsamples += len(samples)
                    if st == "samples":
                        cpu += raw * int(p.get("period", 0))
                    elif st in ("events", "off_cpu"):
                        offcpu += raw
        return cpu, offcpu

    def test_json_1_10_totals_match_a_python_reading(self):
        for path in (self.J110, self.J18):
            with self.subTest(file=os.path.basename(path)):
                cpu, offcpu = self.reference(path)
                self.assertGreater(cpu, 0)
                self.assertGreater(offcpu, 0)
                t = types_of(summary(path))
                self.assertEqual((t["cpu"]["total"], t["offcpu"]["total"]), (cpu, offcpu))

    def test_json_errors_name_the_path(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        with open(self.J110) as f:
            doc = json.load(f)
        doc["resourceProfiles"][0]["scopeProfiles"][0]["profiles"][0]["period"] = "ten"
        path = os.path.join(tmp.name, "bad.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        r = run(WTCTL, "profile", "summary", path, check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"resourceProfiles[0].scopeProfiles[0].profiles[0].period", r.stderr)
        with open(self.J110, "rb") as f:
            data = f.read()
        with open(path, "wb") as f:
            f.write(data[:1000])
        r = run(WTCTL, "profile", "summary", path, check=False)
        self.assertEqual(r.returncode, 1)
        self.assertRegex(r.stderr, rb"otlp json: JSON error at line \d+, column \d+")


def varint(b, off):
    v, shift = 0, 0
    while True:
        c = b[off]
        off += 1
        v |= (c & 0x7f) << shift
        shift += 7
        if not c & 0x80:
            return v, off


if __name__ == "__main__":
    unittest.main()
