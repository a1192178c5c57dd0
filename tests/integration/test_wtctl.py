#!/usr/bin/env python3
"""test_wtctl.py — `wtctl profile summary` and `wtctl profile convert`
against independent references: `go tool pprof -top` (parsed, exact units)
for pprof inputs, awk over the text for folded inputs; and round trips
(convert to pprof, read it back with `go tool pprof`; convert to folded,
sum it with awk). Offline only: no daemon is started.
"""
import json
import os
import re
import subprocess
import tempfile
import unittest

ROOT = os.environ.get("WT_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("BUILD", "build")
BIN = os.environ.get("WT_BIN") or os.path.join(ROOT, BUILD, "bin")
WTCTL = os.path.join(BIN, "wtctl")
CORPUS = os.path.join(ROOT, "..", "shared", "corpus")
GO_CPU = os.path.join(CORPUS, "gen", "go", "go-cpu.pb.gz")
GO_HEAP = os.path.join(CORPUS, "gen", "go", "go-heap.pb.gz")
FOLDED = os.path.join(CORPUS, "gen", "c", "folded-c-fp.stackcollapse-perf.txt")

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
        ptotal, rows = pprof_top(pb, s["types"][-1]["name"] or "0", s["unit"])
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

    def test_speedscope_not_yet(self):
        r = run(WTCTL, "profile", "convert", GO_CPU, "--to", "speedscope", check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"speedscope", r.stderr)


if __name__ == "__main__":
    unittest.main()
