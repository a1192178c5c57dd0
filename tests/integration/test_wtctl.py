#!/usr/bin/env python3
"""test_wtctl.py — `wtctl profile summary` and `wtctl profile convert`
against independent references: `go tool pprof -top` / `-raw` (parsed,
exact units) for pprof inputs, `jfr summary` for JFR, awk over the text for
perf script and folded inputs, python's json module for cpuprofile and
speedscope; round trips (convert to pprof, read it back with `go tool pprof
-raw`; convert to folded and compare with `perf script report
stackcollapse` on a fresh recording, or the awk collapse; convert to
speedscope, check the file format schema and read it back). Malformed
inputs, the progress line (on a pty) and stdin input. Offline only: no
daemon is started.
"""
import collections
import json
import os
import pty
import re
import shutil
import subprocess
import tempfile
import unittest

ROOT = os.environ.get("WT_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("BUILD", "build")
BIN = os.environ.get("WT_BIN") or os.path.join(ROOT, BUILD, "bin")
WTCTL = os.path.join(BIN, "wtctl")
CORPUS = os.path.join(ROOT, "tests", "corpus")
GO_CPU = os.path.join(CORPUS, "gen", "go", "go-cpu.pb.gz")
GO_HEAP = os.path.join(CORPUS, "gen", "go", "go-heap.pb.gz")
FOLDED = os.path.join(CORPUS, "gen", "c", "folded-c-fp.stackcollapse-perf.txt")
GO_GEN = os.path.join(CORPUS, "gen", "go")
JFR = os.path.join(CORPUS, "jfr", "jfr-parser__example.jfr")
PERF = os.path.join(CORPUS, "gen", "c", "perf-script-c-fp-header.txt")
PERF_FORKS = os.path.join(CORPUS, "perf-script", "speedscope__forks.perf.txt")
CPUPROFILE = os.path.join(CORPUS, "gen", "node", "node20-cpu.cpuprofile")
PYSPY = os.path.join(CORPUS, "speedscope", "py-spy-0.4.2__macos-bpe-tokenizer.speedscope.json")
STACKCOLLAPSE_AWK = os.path.join(ROOT, "tests", "gen", "stackcollapse.awk")
GEN_PERF = os.path.join(ROOT, "tests", "gen", "gen-perf-folded")
SPEEDSCOPE_UNITS = {"none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"}

UNIT_FLAG = {"nanoseconds": "ns", "bytes": "B", "count": ""}


def run(*args, check=True):
    r = subprocess.run(list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    if check and r.returncode != 0:
        raise AssertionError("%s failed (%d): %s" % (args, r.returncode, r.stderr.decode(errors="replace")))
    return r


def pprof_top(path, sample_index, unit):
    """go tool pprof -top with exact units: (total, {function: (flat, cum)})."""
    args = ["go", "tool", "pprof", "-top", "-nodefraction=0", "-edgefraction=0", "-nodecount=1000000",
            "-sample_index=" + sample_index]
    if UNIT_FLAG.get(unit):
        args.append("-unit=" + UNIT_FLAG[unit])
    env = dict(os.environ, PPROF_BINARY_PATH="/nonexistent", HOME=tempfile.gettempdir())
    r = subprocess.run(args + [path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120, env=env)
    if r.returncode != 0:
        raise AssertionError("go tool pprof failed: %s" % r.stderr.decode(errors="replace"))
    total, rows, in_rows = None, {}, False
    num = r"(-?\d+)[A-Za-z]*"
    for line in r.stdout.decode().splitlines():
        m = re.search(r"of " + num + r" total", line)
        if m:
            total = int(m.group(1))
        if line.strip().startswith("flat"):
            in_rows = True
            continue
        if in_rows:
            m = re.match(r"\s*" + num + r"\s+[\d.]+%\s+[\d.]+%\s+" + num + r"\s+[\d.]+%\s+(.*)$", line)
            if m:
                name = re.sub(r" \(inline\)$", "", m.group(3))
                flat, cum = int(m.group(1)), int(m.group(2))
                f0, c0 = rows.get(name, (0, 0))
                rows[name] = (f0 + flat, max(c0, cum))
    if total is None:  # empty selection: pprof prints no "of X total"
        total = 0
    return total, rows


def awk_folded(path):
    """awk reference over folded text: total, self per leaf, sum per stack."""
    prog = r'''
    { n = $NF; $NF = ""; sub(/ +$/, ""); stack = $0; total += n; by_stack[stack] += n
      k = split(stack, fr, ";"); self[fr[k]] += n }
    END { print "TOTAL\t" total
          for (f in self) print "SELF\t" f "\t" self[f]
          for (s in by_stack) print "STACK\t" s "\t" by_stack[s] }'''
    out = run("awk", prog, path).stdout.decode()
    total, selfs, stacks = 0, {}, {}
    for line in out.splitlines():
        parts = line.split("\t")
        if parts[0] == "TOTAL":
            total = int(parts[1] or 0)
        elif parts[0] == "SELF":
            selfs[parts[1]] = int(parts[2])
        elif parts[0] == "STACK":
            stacks[parts[1]] = int(parts[2])
    return total, selfs, stacks


def pprof_raw(path):
    """`go tool pprof -raw`: (["type/unit", ...], [sum per type], record count)."""
    env = dict(os.environ, PPROF_BINARY_PATH="/nonexistent", HOME=tempfile.gettempdir())
    r = subprocess.run(["go", "tool", "pprof", "-raw", path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120, env=env)
    if r.returncode != 0:
        raise AssertionError("go tool pprof -raw failed: %s" % r.stderr.decode(errors="replace"))
    lines = r.stdout.decode(errors="replace").splitlines()
    i = lines.index("Samples:")
    types = [t.replace("[dflt]", "") for t in lines[i + 1].split()]
    sums, n = [0] * len(types), 0
    for line in lines[i + 2:]:
        if not line.startswith(" "):  # "Locations", "Mappings": end of the samples
            break
        m = re.match(r"\s*((?:-?\d+\s+)*-?\d+):", line)
        if not m:  # a label line under a sample
            continue
        vals = [int(v) for v in m.group(1).split()]
        if len(vals) != len(types):
            continue
        sums = [a + b for a, b in zip(sums, vals)]
        n += 1
    return types, sums, n


def parse_folded_lines(text, strip_root=False):
    """folded text → {stack: count}, frames that are only a [bracketed] name
    (perf's `[unknown]`, our `[dso]` and `[[kernel.kallsyms]]`) and unsymbolized `file+0xADDR` frames
    (see docs/formats.md) normalised."""
    out = collections.Counter()
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        stack, n = line.rsplit(" ", 1)
        frames = stack.split(";")
        if strip_root:
            frames = frames[1:]
        frames = ["[unknown]" if re.fullmatch(r"\[\[?[^\]]*\]\]?|[^;]+\+0x[0-9a-f]+", f) else f
                  for f in frames]
        out[";".join(frames)] += int(n)
    return out


def check_speedscope_schema(test, doc):
    """Required fields and types of https://www.speedscope.app/file-format-schema.json
    (FileFormat.File, Frame, SampledProfile) — checked with plain python."""
    test.assertEqual(doc["$schema"], "https://www.speedscope.app/file-format-schema.json")
    frames = doc["shared"]["frames"]
    test.assertIsInstance(frames, list)
    for f in frames:
        test.assertIsInstance(f["name"], str)
        test.assertTrue(set(f) <= {"name", "file", "line", "col"}, f)
        if "file" in f:
            test.assertIsInstance(f["file"], str)
        if "line" in f:
            test.assertIsInstance(f["line"], int)
    test.assertIsInstance(doc["profiles"], list)
    test.assertGreater(len(doc["profiles"]), 0)
    if "activeProfileIndex" in doc:
        test.assertLess(doc["activeProfileIndex"], len(doc["profiles"]))
    for p in doc["profiles"]:
        for k in ("type", "name", "unit", "startValue", "endValue", "samples", "weights"):
            test.assertIn(k, p)
        test.assertEqual(p["type"], "sampled")
        test.assertIsInstance(p["name"], str)
        test.assertIn(p["unit"], SPEEDSCOPE_UNITS)
        test.assertEqual(len(p["samples"]), len(p["weights"]))
        test.assertLessEqual(p["startValue"], p["endValue"])
        test.assertEqual(p["endValue"] - p["startValue"], sum(p["weights"]))
        for st in p["samples"]:
            test.assertTrue(all(isinstance(i, int) and 0 <= i < len(frames) for i in st), st)
        test.assertTrue(all(isinstance(w, (int, float)) and w >= 0 for w in p["weights"]))


def summary(path, *extra):
    r = run(WTCTL, "--json", "profile", "summary", path, "--top", "0", *extra)
    return json.loads(r.stdout)


@unittest.skipUnless(os.access(WTCTL, os.X_OK), "wtctl not built")
class SummaryTest(unittest.TestCase):
    def check_against_pprof(self, path, type_name, sample_index):
        s = summary(path, "--type", type_name)
        total, rows = pprof_top(path, sample_index, s["unit"])
        self.assertEqual(s["total"], total)
        got = {r["function"]: (r["self"], r["total"]) for r in s["top"] if r["self"] or r["total"]}
        self.assertEqual(set(got), set(rows), "function sets differ")
        for name, (flat, cum) in rows.items():
            self.assertEqual(got[name], (flat, cum), name)
        # rows sorted by self, descending
        selfs = [r["self"] for r in s["top"]]
        self.assertEqual(selfs, sorted(selfs, reverse=True))
        return s

    def test_go_cpu_matches_pprof_top(self):
        s = self.check_against_pprof(GO_CPU, "cpu", "cpu")
        self.assertEqual(s["format"], "pprof")
        self.assertEqual(s["unit"], "nanoseconds")
        types = {t["type"]: t for t in s["types"]}
        self.assertEqual(types["cpu"]["total"], 1490000000)  # "Total samples = 1490ms"
        self.assertEqual(types["samples"]["total"], pprof_top(GO_CPU, "samples", "count")[0])
        self.assertGreater(s["duration_ns"], 3 * 10**9)

    def test_go_cpu_default_type_is_pprofs(self):
        s = summary(GO_CPU)  # no --type: the last sample type, as go tool pprof picks
        self.assertEqual(s["type"], "cpu")

    def test_go_heap_types_match_pprof_top(self):
        for t in ("alloc_space", "alloc_objects", "inuse_space", "inuse_objects"):
            with self.subTest(type=t):
                self.check_against_pprof(GO_HEAP, t, t)

    def test_folded_matches_awk(self):
        total, selfs, _ = awk_folded(FOLDED)
        s = summary(FOLDED)
        self.assertEqual(s["format"], "folded")
        self.assertEqual(s["total"], total)
        got = {r["function"]: r["self"] for r in s["top"] if r["self"]}
        self.assertEqual(got, {k: v for k, v in selfs.items() if v})

    def test_text_output_and_top(self):
        r = run(WTCTL, "profile", "summary", GO_CPU, "--top", "3")
        out = r.stdout.decode()
        self.assertIn("Format: pprof", out)
        self.assertIn("crypto/sha256.block", out)
        self.assertIn("57.72%", out)  # 860ms of 1490ms, as pprof -top shows it
        self.assertRegex(out, r"Showing top 3 of \d+ functions")

    def test_errors(self):
        r = run(WTCTL, "profile", "summary", "/nonexistent/file.pb.gz", check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"/nonexistent/file.pb.gz", r.stderr)
        with tempfile.NamedTemporaryFile(suffix=".pb") as f:
            raw = run("gzip", "-dc", GO_CPU).stdout
            f.write(raw[:len(raw) // 2])  # truncated protobuf
            f.flush()
            r = run(WTCTL, "profile", "summary", f.name, "--format", "pprof", check=False)
            self.assertEqual(r.returncode, 1)
            self.assertIn(b"pprof", r.stderr)
        r = run(WTCTL, "profile", "summary", GO_CPU, "--type", "nosuchtype", check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"nosuchtype", r.stderr)
        r = run(WTCTL, "profile", "summary", check=False)
        self.assertEqual(r.returncode, 2)


@unittest.skipUnless(os.access(WTCTL, os.X_OK), "wtctl not built")
class ConvertTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def out(self, name):
        return os.path.join(self.tmp.name, name)

    def test_pprof_to_pprof_roundtrip(self):
        out = self.out("cpu.pb.gz")
        run(WTCTL, "profile", "convert", GO_CPU, "--to", "pprof", "-o", out)
        env = dict(os.environ, PPROF_BINARY_PATH="/nonexistent", HOME=self.tmp.name)
        r = subprocess.run(["go", "tool", "pprof", "-raw", out], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, env=env, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(b"cpu/nanoseconds", r.stdout)
        for idx in ("cpu", "samples"):
            unit = "nanoseconds" if idx == "cpu" else "count"
            self.assertEqual(pprof_top(out, idx, unit), pprof_top(GO_CPU, idx, unit), idx)

    def test_pprof_to_folded_sums(self):
        out = self.out("cpu.folded")
        run(WTCTL, "profile", "convert", GO_CPU, "--to", "folded", "-o", out)
        total, selfs, _ = awk_folded(out)
        ptotal, rows = pprof_top(GO_CPU, "cpu", "nanoseconds")
        self.assertEqual(total, ptotal)
        self.assertEqual({k: v for k, v in selfs.items() if v},
                         {k: f for k, (f, _) in rows.items() if f})
        # --type picks another sample type
        run(WTCTL, "profile", "convert", GO_CPU, "--to", "folded", "--type", "samples", "-o", out)
        self.assertEqual(awk_folded(out)[0], pprof_top(GO_CPU, "samples", "count")[0])

    def test_folded_to_pprof_and_back(self):
        total, selfs, stacks = awk_folded(FOLDED)
        pb = self.out("f.pb.gz")
        run(WTCTL, "profile", "convert", FOLDED, "--to", "pprof", "-o", pb)
        s = summary(pb)
        self.assertEqual(s["total"], total)
        ptotal, rows = pprof_top(pb, s["type"], s["unit"])
        self.assertEqual(ptotal, total)
        self.assertEqual({k: f for k, (f, _) in rows.items() if f}, {k: v for k, v in selfs.items() if v})
        back = self.out("back.folded")
        run(WTCTL, "profile", "convert", pb, "--to", "folded", "-o", back)
        self.assertEqual(awk_folded(back)[2], stacks)

    def test_folded_to_folded_stdout(self):
        r = run(WTCTL, "profile", "convert", FOLDED, "--to", "folded")
        path = self.out("stdout.folded")
        with open(path, "wb") as f:
            f.write(r.stdout)
        self.assertEqual(awk_folded(path)[2], awk_folded(FOLDED)[2])

@unittest.skipUnless(os.access(WTCTL, os.X_OK), "wtctl not built")
class SummaryReferenceTest(unittest.TestCase):
    """summary figures against each producing tool's own count."""

    def test_json_shape(self):
        s = summary(GO_CPU, "--top", "5")
        for k, t in (("format", str), ("samples", int), ("types", list), ("top", list)):
            self.assertIsInstance(s[k], t, k)
        self.assertEqual(list(s)[:4], ["format", "samples", "types", "top"])
        for t in s["types"]:
            self.assertEqual(set(t), {"type", "unit", "total"})
        self.assertEqual(len(s["top"]), 5)
        for r in s["top"]:
            self.assertEqual(set(r), {"function", "self", "total"})
        self.assertGreater(s["stacks"], 0)
        self.assertLess(s["time_start_ns"], s["time_end_ns"])

    def test_pprof_matches_go_tool_pprof_raw(self):
        for name in sorted(os.listdir(GO_GEN)):
            if not name.endswith(".pb.gz"):
                continue
            path = os.path.join(GO_GEN, name)
            with self.subTest(file=name):
                types, sums, records = pprof_raw(path)
                s = summary(path)
                self.assertEqual(len(s["types"]), len(types))
                # -top's "of X total", type by type (it counts samples without
                # locations, which -raw does not print: go-threadcreate)
                for t, raw_type in zip(s["types"], types):
                    name, unit = raw_type.split("/")
                    self.assertEqual(t["total"], pprof_top(path, name, unit)[0], raw_type)
                if records:
                    self.assertEqual([t["total"] for t in s["types"]], sums)
                if "samples/count" in types:
                    self.assertEqual(s["samples"], sums[types.index("samples/count")])

    def test_large_cpu_samples(self):
        large = os.path.join(CORPUS, "pprof", "google-pprof__large.cpu.pb.gz")
        types, sums, records = pprof_raw(large)
        s = summary(large, "--top", "3")
        self.assertEqual(s["samples"], sums[types.index("samples/count")])
        self.assertGreaterEqual(s["samples"], 20000)
        self.assertEqual(s["rows"], records)

    def test_jfr_matches_jfr_summary(self):
        # the JDK comes with appliance/install-deps: missing is a failure
        self.assertTrue(shutil.which("jfr"), "jfr (openjdk-17-jdk-headless) is not installed")
        out = run("jfr", "summary", JFR).stdout.decode()
        counts = {m.group(1): int(m.group(2))
                  for m in re.finditer(r"^\s*(\S+)\s+(\d+)\s+\d+\s*$", out, re.M)}
        s = summary(JFR)
        self.assertEqual(s["format"], "jfr")
        types = {t["type"]: t for t in s["types"]}
        self.assertEqual(s["samples"], counts["jdk.ExecutionSample"])
        self.assertEqual(types["cpu"]["total"], counts["jdk.ExecutionSample"])
        allocs = sum(counts.get(e, 0) for e in ("jdk.ObjectAllocationInNewTLAB",
                                                 "jdk.ObjectAllocationOutsideTLAB",
                                                 "jdk.ObjectAllocationSample"))
        self.assertEqual(types["alloc_objects"]["total"], allocs)
        self.assertIn("2022-05-21T17:51:08", s["time_start"])

    def test_perf_script_matches_awk(self):
        prog = r"""/^#/ { next }
                   /^[^ \t]/ { n++; if (match($0, /[0-9]+ +[a-z-]+(:[a-z]*)*: *$/) ||
                                        match($0, /[0-9]+ +cpu-clock[^ ]*: *$/)) {
                                    split(substr($0, RSTART), f, " "); p += f[1] } }
                   END { print n, p }"""
        n, periods = map(int, run("awk", prog, PERF).stdout.split())
        s = summary(PERF)
        self.assertEqual(s["format"], "perf")
        self.assertEqual(s["samples"], n)
        types = {t["type"]: t for t in s["types"]}
        self.assertEqual(types["samples"]["total"], n)
        self.assertEqual(types["cpu"]["total"], periods)

    def test_cpuprofile_matches_json(self):
        with open(CPUPROFILE) as f:
            doc = json.load(f)
        s = summary(CPUPROFILE)
        self.assertEqual(s["format"], "cpuprofile")
        types = {t["type"]: t for t in s["types"]}
        self.assertEqual(s["samples"], len(doc["samples"]))
        self.assertEqual(types["cpu"]["total"], 1000 * sum(max(d, 0) for d in doc["timeDeltas"]))

    def test_folded_samples_match_awk(self):
        total = int(run("awk", "{ s += $NF } END { print s }", FOLDED).stdout)
        s = summary(FOLDED)
        self.assertEqual(s["samples"], total)
        self.assertEqual(s["stacks"], int(run("awk", "END { print NR }", FOLDED).stdout))

    def test_text_mode_stacks_and_time_range(self):
        out = run(WTCTL, "profile", "summary", GO_CPU, "--top", "1").stdout.decode()
        self.assertRegex(out, r"Time: 20\d\d-\d\d-\d\dT[\d:.]+Z \.\. 20\d\d-\d\d-\d\dT[\d:.]+Z \(duration")
        self.assertRegex(out, r"Samples: 149 \(\d+ rows, \d+ unique stacks, \d+ functions\)")

    def test_malformed_inputs_name_format_and_position(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        with open(JFR, "rb") as f:
            jfr = f.read()
        with open(CPUPROFILE, "rb") as f:
            cpuprofile = f.read()
        cases = [  # (name, bytes, --format, expected message pattern)
            ("bad.folded", b"a;b 3\nc;d 4\nc;d x\n", "folded", rb"folded: line 3"),
            ("bad.perf", b"comm 123 foo bar\n\tdeadbeef sym (dso)\n", "perf", rb"perf: line 1"),
            ("bad.cpuprofile", cpuprofile[:500], "cpuprofile", rb"cpuprofile: JSON error at line 1, column \d+"),
            ("bad.jfr", jfr[:100000], None, rb"jfr: chunk 0 at byte \d+"),
            ("bad.speedscope", json.dumps({
                "$schema": "https://www.speedscope.app/file-format-schema.json",
                "shared": {"frames": [{"name": "a"}]},
                "profiles": [{"type": "sampled", "name": "x", "unit": "none", "startValue": 0,
                              "endValue": 1, "samples": [[0, 5]], "weights": [1]}]}).encode(),
             None, rb"speedscope: profiles\[0\]\.samples\[0\]\[1\]"),
            ("unknown.bin", b"garbage\x00\x01", None, rb"could not recognise"),
        ]
        for name, data, fmt, pattern in cases:
            with self.subTest(case=name):
                path = os.path.join(tmp.name, name)
                with open(path, "wb") as f:
                    f.write(data)
                for cmd in (["summary"], ["convert", "--to", "speedscope"]):
                    args = [WTCTL, "profile"] + cmd + [path] + (["--format", fmt] if fmt else [])
                    r = run(*args, check=False)
                    self.assertEqual(r.returncode, 1, r.stderr)
                    self.assertIn(path.encode(), r.stderr)
                    self.assertRegex(r.stderr, pattern)
                    self.assertEqual(r.stdout, b"")


@unittest.skipUnless(os.access(WTCTL, os.X_OK), "wtctl not built")
class ConvertReferenceTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def out(self, name):
        return os.path.join(self.tmp.name, name)

    def test_to_pprof_read_by_go_tool_pprof_raw(self):
        for src in (PERF, JFR, CPUPROFILE, FOLDED, PYSPY):
            with self.subTest(src=os.path.basename(src)):
                pb = self.out("out.pb.gz")
                run(WTCTL, "profile", "convert", src, "--to", "pprof", "-o", pb)
                types, sums, _ = pprof_raw(pb)
                s = summary(src)
                self.assertEqual(sums, [t["total"] for t in s["types"]])
                self.assertEqual(len(types), len(s["types"]))

    def compare_with_awk_collapse(self, perf_text):
        ref = parse_folded_lines(run("awk", "-f", STACKCOLLAPSE_AWK, perf_text).stdout.decode(
            errors="surrogateescape"), strip_root=True)
        ours = run(WTCTL, "profile", "convert", perf_text, "--to", "folded", "--type", "samples").stdout
        self.assertEqual(parse_folded_lines(ours.decode(errors="surrogateescape")), ref)

    def test_perf_to_folded_matches_awk_collapse(self):
        for src in (PERF, PERF_FORKS):
            with self.subTest(src=os.path.basename(src)):
                self.compare_with_awk_collapse(src)

    def test_perf_to_folded_matches_perf_stackcollapse(self):
        # perf comes with appliance/install-deps: missing or not recording is a failure
        self.assertTrue(shutil.which("perf"), "perf is not installed (appliance/install-deps)")
        if "stackcollapse" not in run("perf", "script", "-l", check=False).stdout.decode():
            self.skipTest("perf script report stackcollapse is not available")
        rec = self.out("rec")
        r = subprocess.run([GEN_PERF, rec, "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr.decode(errors="replace")[-2000:])
        ref = run("perf", "script", "report", "stackcollapse", "-i",
                  os.path.join(rec, "perf.data")).stdout.decode(errors="surrogateescape")
        ref = parse_folded_lines(ref, strip_root=True)  # perf prepends COMM
        text = os.path.join(rec, "perf-script.txt")
        ours = run(WTCTL, "profile", "convert", text, "--to", "folded", "--type", "samples").stdout
        ours = parse_folded_lines(ours.decode(errors="surrogateescape"))
        self.assertGreater(sum(ref.values()), 0)
        self.assertEqual(ours, ref)

    def speedscope(self, src, *extra):
        out = self.out("out.speedscope.json")
        run(WTCTL, "profile", "convert", src, "--to", "speedscope", "-o", out, *extra)
        with open(out, "rb") as f:
            doc = json.loads(f.read().decode("utf-8"))  # strict UTF-8
        check_speedscope_schema(self, doc)
        return out, doc

    def test_speedscope_round_trip(self):
        for src, typ in ((GO_CPU, "cpu"), (GO_HEAP, "alloc_space"), (GO_HEAP, "inuse_objects"),
                         (PERF, "cpu"), (JFR, "cpu"), (CPUPROFILE, "cpu"), (FOLDED, None),
                         (PYSPY, None)):
            with self.subTest(src=os.path.basename(src), type=typ):
                extra = ("--type", typ) if typ else ()
                orig = summary(src, *extra)
                out, doc = self.speedscope(src, *extra)
                # the file's own figures, counted with python
                self.assertEqual(sum(sum(p["weights"]) for p in doc["profiles"]), orig["total"])
                self.assertEqual({p["unit"] for p in doc["profiles"]},
                                 {orig["unit"] if orig["unit"] in SPEEDSCOPE_UNITS else "none"})
                self_py = collections.Counter()
                for p in doc["profiles"]:
                    for st, w in zip(p["samples"], p["weights"]):
                        if st:
                            self_py[doc["shared"]["frames"][st[-1]]["name"]] += w
                self.assertEqual({k: v for k, v in self_py.items() if v},
                                 {r["function"]: r["self"] for r in orig["top"] if r["self"]})
                # read back by our decoder: same total and per-function figures
                back = summary(out)
                self.assertEqual(back["format"], "speedscope")
                self.assertEqual(back["total"], orig["total"])
                self.assertEqual({(r["function"], r["self"], r["total"]) for r in back["top"] if r["total"]},
                                 {(r["function"], r["self"], r["total"]) for r in orig["top"] if r["total"]})

    def test_speedscope_per_thread_and_all_types(self):
        _, doc = self.speedscope(PERF_FORKS)
        comms = set(run("awk", r"/^[^# \t]/ { print $1 }", PERF_FORKS).stdout.decode().split())
        self.assertEqual({p["name"] for p in doc["profiles"]}, comms)
        out, doc = self.speedscope(PERF_FORKS, "--type", "all")
        orig = summary(PERF_FORKS)
        self.assertEqual(len(doc["profiles"]), len(comms) * len(orig["types"]))
        back = summary(out)
        self.assertEqual(sorted(t["total"] for t in back["types"]),
                         sorted(t["total"] for t in orig["types"]))

    def test_speedscope_invalid_utf8_and_escapes(self):
        src = self.out("odd.folded")
        with open(src, "wb") as f:
            f.write(b'main;caf\xe9 "quoted" \\back;tab\there 5\nmain;ok\xe2\x82\xac 2\n')
        out, doc = self.speedscope(src, "--format", "folded")
        names = {f["name"] for f in doc["shared"]["frames"]}
        self.assertIn('caf\ufffd "quoted" \\back', names)
        self.assertIn("ok\u20ac", names)
        self.assertEqual(summary(out)["total"], 7)

    def test_stdin_input(self):
        with open(FOLDED, "rb") as f:
            data = f.read()
        r = subprocess.run([WTCTL, "--json", "profile", "summary", "-", "--top", "0"], input=data,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["total"], summary(FOLDED)["total"])


@unittest.skipUnless(os.access(WTCTL, os.X_OK), "wtctl not built")
class ProgressTest(unittest.TestCase):
    """A progress line on stderr for inputs >= 50 MB, only on a terminal."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.big = os.path.join(cls.tmp.name, "big.folded")
        lines = "".join("root;service%d;handler%d;work%d %d\n" % (i % 7, i % 101, i, i % 5 + 1)
                        for i in range(2000))
        with open(cls.big, "w") as f:
            while f.tell() < 52 << 20:
                f.write(lines)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_on_pty(self, *args):
        master, slave = pty.openpty()
        try:
            proc = subprocess.Popen(list(args), stdout=subprocess.PIPE, stderr=slave)
        finally:
            os.close(slave)
        chunks = []
        try:
            while True:
                try:
                    b = os.read(master, 4096)
                except OSError:  # EIO: the child closed the pty
                    break
                if not b:
                    break
                chunks.append(b)
            out = proc.stdout.read()
            self.assertEqual(proc.wait(timeout=120), 0)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
            os.close(master)
        return out, b"".join(chunks)

    def test_progress_on_terminal(self):
        out, err = self.run_on_pty(WTCTL, "--json", "profile", "summary", self.big, "--top", "1")
        self.assertGreater(json.loads(out)["total"], 0)
        self.assertRegex(err, rb"wtctl: .*big\.folded: decoding 5\d\.\d MB")
        self.assertRegex(err, rb"done in [\d.]+ s \([\d]+ MB/s\)")

    def test_no_progress_when_not_a_terminal(self):
        r = run(WTCTL, "--json", "profile", "summary", self.big, "--top", "1")
        self.assertNotIn(b"decoding", r.stderr)
        small_out, small_err = self.run_on_pty(WTCTL, "--json", "profile", "summary", FOLDED)
        self.assertNotIn(b"decoding", small_err)



if __name__ == "__main__":
    unittest.main()
