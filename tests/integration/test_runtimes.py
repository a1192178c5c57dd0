#!/usr/bin/env python3
"""test_runtimes.py — every runtime row of the seed's coverage table
(docs/profilers.md), end to end on one real wt-edge: a REAL profile of each
runtime is pushed the way docs/profilers.md says (mostly `wtctl profile
upload`), then the edge's table (/v1/projects/demo/profiles/table) is
compared with figures computed independently of our code:

  JVM      tests/gen/gen-jfr recording   → `jfr summary` / `jfr print` (JDK 17)
           async-profiler collapsed      → awk over the text
           Pyroscope /ingest format=jfr  → same totals as a direct format=jfr
                                           upload, and `jfr summary` / `jfr print --json` sums
  Python   py-spy speedscope             → python3 json (tests/unit/common/ref_speedscope.py)
           Austin 3 collapsed            → awk over the text
  Ruby     rbspy pprof                   → `go tool pprof -raw` sums + a python protobuf walk
  .NET     Pyroscope.NET pprof (2 files) → `go tool pprof -raw` where it accepts the file,
                                           a python protobuf walk for both
  Node.js  node --cpu-prof               → python3 json (tests/unit/common/ref_cpuprofile.py),
           (convert-cpuprofile + folded, and format=cpuprofile direct)
  native   perf record -g + perf script  → `perf report --stdio` (format=perf and =folded)
  Go       tests/gen/gen-go-profiles     → `go tool pprof -raw` (cpu, heap, goroutine,
                                           mutex via --type mutex, block via --type block)

Totals must be equal exactly; the top-10 functions by self value must carry
the reference's values. OTLP is covered by test_otlp.py.

Also `wtctl profile upload` itself: format detected by content, body gzipped
(checked against the edge's wt_edge_upload_bytes_total), retries on connect
errors and 5xx (a local fake server counts the tries), and the printed
summary of what was stored (samples, types, time range).

Inputs are generated once and cached under $BUILD/testdata (jfr/, go/,
runtimes/); corpus files are read from tests/corpus.
"""
import gzip
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness.edge import BIN, CORPUS, ROOT, UPLOAD_TOKEN, Edge, free_port  # noqa: E402
from test_edge import folded_reference, pprof_reference  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
from pbwire import fields, varint  # noqa: E402

BUILD = os.environ.get("BUILD", "build")
BUILD_DIR = BUILD if os.path.isabs(BUILD) else os.path.join(ROOT, BUILD)
TESTDATA = os.path.join(BUILD_DIR, "testdata")
CACHE = os.path.join(TESTDATA, "runtimes")
WTCTL = os.path.join(BIN, "wtctl")
FUTURE = "4102444800"  # 2100-01-01
GEN_ENV = dict(os.environ, BUILD=BUILD_DIR)

AP_COLLAPSED = os.path.join(CORPUS, "folded/async-profiler__jfrconverter-sample1.collapsed")
KAFKA_JFR_GZ = os.path.join(CORPUS, "jfr/pyroscope__kafka-cpu-lock-alloc.jfr.gz")
PYSPY_SPEEDSCOPE = os.path.join(CORPUS, "speedscope/py-spy-0.4.1__linux-jax.speedscope.json")
AUSTIN3 = os.path.join(CORPUS, "folded/austin-python__austin-3.0.0-wall.out")
RBSPY = os.path.join(CORPUS, "pprof/pyroscope__ruby-rbspy-puma.pb.gz")
DOTNET_LABELS = os.path.join(CORPUS, "pprof/pyroscope__dotnet-labels.pb")
DOTNET_FUNCID0 = os.path.join(CORPUS, "pprof/pyroscope__dotnet-funcid0.pb")


def run(args, check=True, env=None, timeout=300):
    r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError("%s exited %d: %s" % (args, r.returncode, r.stderr[-3000:]))
    return r


def go_env():
    home = os.path.join(TESTDATA, "gohome")
    os.makedirs(home, exist_ok=True)
    return dict(os.environ, HOME=home, GOCACHE=os.path.join(home, "cache"), PPROF_BINARY_PATH="/nonexistent")


# ---- independent references ----------------------------------------------------------------

def jfr_summary_count(summary_path, event):
    """Count of one event type in `jfr summary` output."""
    with open(summary_path) as f:
        for line in f:
            p = line.split()
            if len(p) >= 3 and p[0] == event:
                return int(p[1])
    return 0


def jfr_print_leaf_counts(exec_txt):
    """Per leaf method, the number of jdk.ExecutionSample events in `jfr print`:
    the first line of each stackTrace, `pkg.Class.method(args) line: N` → `pkg.Class.method`."""
    counts, want = {}, False
    with open(exec_txt) as f:
        for line in f:
            s = line.strip()
            if s.startswith("stackTrace = ["):
                want = True
                continue
            if want:
                want = False
                if s and s not in ("]", "..."):
                    name = s.split("(", 1)[0]
                    counts[name] = counts.get(name, 0) + 1
    return counts


def jfr_refs(path):
    out = {}
    with open(path) as f:
        for line in f:
            k, v = line.split()
            out[k] = int(v)
    return out


AUSTIN_AWK = r"""
/^#/ || NF == 0 { next }
{ n = $NF; line = $0; sub(/ [0-9]+$/, "", line); k = split(line, f, ";"); leaf = ""
  for (i = 1; i <= k; i++) if (f[i] !~ /^[PT][0-9]+$/) leaf = f[i]
  tot += n
  if (leaf != "") { fn = leaf; sub(/:[0-9]+$/, "", fn); sub(/^.*:/, "", fn); self[fn] += n } }
END { printf "T\t%d\n", tot; for (x in self) printf "S\t%s\t%d\n", x, self[x] }
"""


def austin_reference(path):
    """Austin 3 `P<pid>;T<tid>;file:function:line;... <µs>`: total and self per
    function in nanoseconds (docs/formats.md: wall mode, µs × 1000)."""
    out = run(["awk", AUSTIN_AWK, path]).stdout
    total, self_ = 0, {}
    for line in out.splitlines():
        p = line.split("\t")
        if p[0] == "T":
            total = int(p[1]) * 1000
        else:
            self_[p[1]] = int(p[2]) * 1000
    return total, self_


def ref_script(name, path):
    return run([sys.executable, os.path.join(ROOT, "tests/unit/common", name), path]).stdout


def speedscope_reference(path):
    total, self_ = 0, {}
    for line in ref_script("ref_speedscope.py", path).splitlines():
        if line.startswith("profile "):
            total += int(line.split("\t")[2])
        elif line.startswith("self "):
            nm, v = line[5:].rsplit("\t", 1)
            self_[nm] = self_.get(nm, 0) + int(v)
    return total, self_


def cpuprofile_reference(path):
    """(len(samples), Σ max(timeDelta,0)·1000, {leaf: count}, {leaf: cpu ns})."""
    n = cpu = 0
    cnt, ns = {}, {}
    for line in ref_script("ref_cpuprofile.py", path).splitlines():
        if line.startswith("samples "):
            n = int(line.split()[1])
        elif line.startswith("cpu "):
            cpu = int(line.split()[1])
        elif line.startswith("self "):
            nm, c, v = line[5:].rsplit("\t", 2)
            cnt[nm], ns[nm] = int(c), int(v)
    return n, cpu, cnt, ns


def go_raw_totals(path):
    """Per sample type, the sum of the values `go tool pprof -raw` lists."""
    out = run(["go", "tool", "pprof", "-raw", path], env=go_env()).stdout
    types, sums, section = [], None, False
    sample_re = re.compile(r"^\s*(-?\d+(?:\s+-?\d+)*):")
    for line in out.splitlines():
        if line.startswith("Samples:"):
            section = True
            continue
        if line.startswith("Locations"):
            break
        if section and not types:
            types = [t.split("/")[0] for t in line.split()]
            sums = [0] * len(types)
            continue
        m = sample_re.match(line) if section else None
        if m:
            for i, v in enumerate(m.group(1).split()):
                sums[i] += int(v)
    return dict(zip(types, sums))


# A protobuf wire walk of profile.proto, written here from the field numbers
# of google/pprof's proto/profile.proto: Profile.sample_type=1, sample=2,
# location=4, function=5, string_table=6; Sample.location_id=1, value=2;
# Location.id=1, line=4; Line.function_id=1; Function.id=1, name=2;
# ValueType.type=1. It shares nothing with common/pprof_decode.c.

def _repeated_varints(wt, v):
    if wt == 0:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = varint(v, i)
        out.append(x)
    return out


def _signed(x):
    return x - (1 << 64) if x >= 1 << 63 else x


def pprof_walk(path):
    """(totals per sample type name, {leaf function name: [value per type]}).
    Leaf = first location of a sample, its first (innermost) line. When every
    Function has id 0 (the .NET profiler leaves ids out), functions are
    referred to by position, index + 1 — what Pyroscope does with such files."""
    with open(path, "rb") as f:
        b = f.read()
    if b[:2] == b"\x1f\x8b":
        b = gzip.decompress(b)
    strings, stypes, samples, locs, funcs = [], [], [], {}, []
    for f, wt, v in fields(b):
        if f == 6:
            strings.append(v.decode("utf-8", "replace"))
        elif f == 1:
            stypes.append(dict((ff, vv) for ff, _, vv in fields(v)).get(1, 0))
        elif f == 2:
            ids, vals = [], []
            for ff, w2, vv in fields(v):
                if ff == 1:
                    ids += _repeated_varints(w2, vv)
                elif ff == 2:
                    vals += [_signed(x) for x in _repeated_varints(w2, vv)]
            samples.append((ids, vals))
        elif f == 4:
            lid, first_fn = 0, None
            for ff, _, vv in fields(v):
                if ff == 1:
                    lid = vv
                elif ff == 4 and first_fn is None:
                    first_fn = dict((f3, v3) for f3, _, v3 in fields(vv)).get(1, 0)
            locs[lid] = first_fn
        elif f == 5:
            d = dict((ff, vv) for ff, _, vv in fields(v))
            funcs.append((d.get(1, 0), d.get(2, 0)))
    by_pos = all(fid == 0 for fid, _ in funcs)
    fname = {(i + 1 if by_pos else fid): strings[name] for i, (fid, name) in enumerate(funcs)}
    names = [strings[t] for t in stypes]
    totals = [0] * len(names)
    self_ = {}
    for ids, vals in samples:
        for i, v in enumerate(vals):
            totals[i] += v
        fn = locs.get(ids[0]) if ids else None
        if fn:
            acc = self_.setdefault(fname[fn], [0] * len(names))
            for i, v in enumerate(vals):
                acc[i] += v
    return dict(zip(names, totals)), {k: dict(zip(names, v)) for k, v in self_.items()}


def perf_report(perf_data):
    """`perf report --stdio --no-children --sort sym -n -g none`: (# Samples,
    Event count, {symbol: samples}) — a symbol listed once per DSO is summed."""
    out = run(["perf", "report", "-i", perf_data, "--stdio", "--no-children", "--sort", "sym", "-n",
               "-g", "none"]).stdout
    samples = events = None
    header = None
    rows = {}
    row_re = re.compile(r"^\s*[\d.]+%\s+(\d+)\s+\[.\]\s+(.*?)\s*$")
    for line in out.splitlines():
        # perf abbreviates the header from 1000 on ("1K"): exact only below
        m = re.match(r"# Samples: (\d+)$", line.strip())
        if m:
            header = int(m.group(1))
        m = re.match(r"# Event count \(approx.\): (\d+)", line)
        if m:
            events = int(m.group(1))
        m = row_re.match(line)
        if m:
            rows[m.group(2)] = rows.get(m.group(2), 0) + int(m.group(1))
    # the exact count is the sum of the per-symbol rows (-n); it must agree
    # with the header whenever perf prints the header unabbreviated
    samples = sum(rows.values()) if rows else None
    if header is not None and samples != header:
        raise AssertionError(f"perf report: rows sum to {samples} samples, header says {header}")
    return samples, events, rows


def gen_perf():
    """perf record -F 999 -g of tests/gen/cwork via tests/gen/gen-perf-folded,
    cached under $BUILD/testdata/runtimes/perf. None when perf cannot record."""
    out = os.path.join(CACHE, "perf")
    script = os.path.join(out, "perf-script.txt")
    srcs = [os.path.join(ROOT, "tests/gen/gen-perf-folded"), os.path.join(ROOT, "tests/gen/cwork/cwork.c")]
    if not (os.path.exists(script) and os.path.exists(os.path.join(out, "perf.data")) and
            all(os.path.getmtime(script) > os.path.getmtime(s) for s in srcs)):
        r = run([srcs[0], out, "1"], check=False)
        if r.returncode == 77:
            return None
        if r.returncode != 0:
            raise AssertionError("gen-perf-folded failed: " + r.stderr[-2000:])
    return out


def gen_node():
    """node --cpu-prof on tests/gen/node/work.js (800 ms), cached."""
    out = os.path.join(CACHE, "node")
    prof = os.path.join(out, "work.cpuprofile")
    src = os.path.join(ROOT, "tests/gen/node/work.js")
    if not (os.path.exists(prof) and os.path.getmtime(prof) > os.path.getmtime(src)):
        if not shutil.which("node"):
            return None
        os.makedirs(out, exist_ok=True)
        run(["node", "--cpu-prof", "--cpu-prof-dir=" + out, "--cpu-prof-name=work.cpuprofile.tmp", src, "800"])
        os.replace(prof + ".tmp", prof)
    return prof


# ---- a fake server for the retry tests -------------------------------------------------------

class FakeServer:
    """Answers POSTs with the statuses in `plan` (then 200 + a stored-like JSON);
    records (path, body) of every request."""

    def __init__(self, plan, port=None):
        self.plan, self.requests = list(plan), []
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.requests.append((self.path, body, dict(self.headers)))
                st = outer.plan.pop(0) if outer.plan else 200
                if st == 200:
                    ans = json.dumps({"project": "demo", "service": "fake", "format": "folded", "samples": 1,
                                      "types": ["cpu"], "from_ns": 1700000000000000000,
                                      "until_ns": 1700000001500000000, "seq": 7}).encode()
                else:
                    ans = json.dumps({"error": "unavailable" if st >= 500 else "invalid_input",
                                      "detail": "fake %d" % st}).encode()
                self.send_response(st)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(ans)))
                self.end_headers()
                self.wfile.write(ans)

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", port or 0), H)
        self.port = self.srv.server_address[1]
        self.thread = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


# ---- the tests ---------------------------------------------------------------------------------

class RuntimesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.edge = Edge(None)
        cls.addClassCleanup(cls.edge.cleanup)
        cls.edge.start()
        cls.tmp = tempfile.mkdtemp(prefix="wt-runtimes-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)

    # -- helpers --

    def wtctl(self, *args, check=True, edge=None):
        r = run([WTCTL, "--edge", edge or self.edge.url, "--token", UPLOAD_TOKEN] + list(args), check=False)
        if check:
            self.assertEqual(r.returncode, 0, "wtctl %s: %s" % (" ".join(args), r.stderr))
        return r

    def upload(self, path, service, *extra):
        """`wtctl --json profile upload`; returns the answer (server JSON + wtctl's fields)."""
        r = self.wtctl("--json", "profile", "upload", path, "--service", service, *extra)
        ans = json.loads(r.stdout)
        self.assertEqual(ans["service"], service)
        return ans

    def table(self, service, type_, **params):
        st, js = self.edge.query("table", service=service, type=type_, limit=0, **{"from": "0", "until": FUTURE},
                                 **params)
        self.assertEqual(st, 200, js)
        self.assertEqual(js["type"], type_)
        return js

    def assert_table(self, js, total, ref_self, what):
        """Total exact; the edge's top-10 functions by self carry the reference's
        values (ties may order differently, so names are checked by value)."""
        self.assertEqual(js["total"], total, what + ": total")
        got = {}
        for r in js["rows"]:
            got[r["function"]] = got.get(r["function"], 0) + r["self"]
        top = sorted(((v, k) for k, v in got.items() if v), key=lambda x: (-x[0], x[1]))[:10]
        ref_top = sorted((v for v in ref_self.values() if v), reverse=True)[:10]
        self.assertTrue(top or not total, what + ": no function has a self value")
        self.assertEqual([v for v, _ in top], ref_top, what + ": top-10 self values")
        for v, k in top:
            self.assertEqual(ref_self.get(k), v, "%s: self of %r" % (what, k))
        return got

    def services(self):
        st, js = self.edge.query("services")
        self.assertEqual(st, 200)
        return {s["name"]: {t["type"]: t["unit"] for t in s["types"]} for s in js["services"]}

    # -- JVM --

    def test_jvm_jfr_recording_matches_jfr_tool(self):
        # the JDK comes with appliance/install-deps: a generator failure is a failure
        r = run([os.path.join(ROOT, "tests/gen/gen-jfr")], check=False, env=GEN_ENV, timeout=600)
        self.assertEqual(r.returncode, 0, "tests/gen/gen-jfr failed: " + r.stderr[-2000:])
        d = os.path.join(TESTDATA, "jfr")
        ans = self.upload(os.path.join(d, "app.jfr"), "jvm-app")  # format auto
        self.assertEqual((ans["format"], ans["format_sent"], ans["detected"]), ("jfr", "jfr", True))
        n_exec = jfr_summary_count(os.path.join(d, "app.summary"), "jdk.ExecutionSample")
        self.assertGreater(n_exec, 10)
        js = self.table("jvm-app", "cpu")
        self.assertEqual(js["unit"], "samples")
        self.assert_table(js, n_exec, jfr_print_leaf_counts(os.path.join(d, "app.exec.txt")), "jvm cpu")
        # the other types against awk sums over `jfr print --json` (gen-jfr's app.refs)
        refs = jfr_refs(os.path.join(d, "app.refs"))
        if refs["lock_count"]:
            self.assertEqual(self.table("jvm-app", "lock")["total"], refs["lock_ns"])
        if refs["gc_count"]:
            self.assertEqual(self.table("jvm-app", "gc_pause")["total"], refs["gc_ns"])
        tlab = sum(jfr_summary_count(os.path.join(d, "app.summary"), e)
                   for e in ("jdk.ObjectAllocationInNewTLAB", "jdk.ObjectAllocationOutsideTLAB"))
        if refs["alloc_count"] and not tlab:
            self.assertEqual(self.table("jvm-app", "alloc_objects")["total"], refs["alloc_count"])
            self.assertEqual(self.table("jvm-app", "alloc_space")["total"], refs["alloc_weight"])

    def test_jvm_async_profiler_collapsed(self):
        ans = self.upload(AP_COLLAPSED, "jvm-ap", "--format", "folded")
        self.assertEqual((ans["format"], ans["types"], ans["detected"]), ("folded", ["cpu"], False))
        total, self_, _ = folded_reference(AP_COLLAPSED)
        self.assert_table(self.table("jvm-ap", "cpu"), total, self_, "async-profiler collapsed")

    def test_jvm_pyroscope_ingest_jfr(self):
        with open(KAFKA_JFR_GZ, "rb") as f:
            gz = f.read()
        plain = gzip.decompress(gz)
        now = int(time.time())
        for svc, body in (("kafka-gz", gz), ("kafka-plain", plain)):
            st, body = self.edge.upload(body, path="/ingest", name=svc + ".cpu{env=ci,region=eu}", format="jfr",
                                        spyName="javaspy", **{"from": str(now - 10), "until": str(now)})
            self.assertEqual(st, 200, body)
            self.assertEqual(json.loads(body)["format"], "jfr")
        st, body = self.edge.upload(gz, format="jfr", service="kafka-direct")
        self.assertEqual(st, 200, body)
        types = ("cpu", "alloc_objects", "alloc_space", "lock")
        direct = {t: self.table("kafka-direct", t) for t in types}
        for svc in ("kafka-gz", "kafka-plain"):
            self.assertEqual(set(self.services()[svc]), set(types))
            for t in types:
                js = self.table(svc, t, **{"label.env": "ci"})
                self.assertEqual(js["total"], direct[t]["total"], "%s %s" % (svc, t))
                self.assertEqual(js["rows"][:10], direct[t]["rows"][:10], "%s %s" % (svc, t))
        # …and the direct upload against the JDK's own tool
        sumf = os.path.join(TESTDATA, "jfr/corpus/pyroscope__kafka-cpu-lock-alloc.jfr.gz.summary")
        reff = os.path.join(TESTDATA, "jfr/corpus/pyroscope__kafka-cpu-lock-alloc.jfr.gz.refs")
        if os.path.exists(sumf) and os.path.exists(reff):  # written by gen-jfr (JVM test)
            refs = jfr_refs(reff)
            self.assertEqual(direct["cpu"]["total"], jfr_summary_count(sumf, "jdk.ExecutionSample"))
            self.assertEqual(direct["lock"]["total"], refs["lock_sum"])
            self.assertEqual(direct["alloc_objects"]["total"], refs["tlab_count"] + refs["outside_count"])
            self.assertEqual(direct["alloc_space"]["total"], refs["tlab_sum"] + refs["outside_sum"])

    # -- Python --

    def test_python_pyspy_speedscope(self):
        ans = self.upload(PYSPY_SPEEDSCOPE, "py-spy")
        self.assertEqual((ans["format"], ans["types"]), ("speedscope", ["cpu"]))
        total, self_ = speedscope_reference(PYSPY_SPEEDSCOPE)
        js = self.table("py-spy", "cpu")
        self.assertEqual(js["unit"], "nanoseconds")
        self.assert_table(js, total, self_, "py-spy speedscope")

    def test_python_austin_collapsed(self):
        ans = self.upload(AUSTIN3, "austin", "--format", "folded")
        self.assertEqual(ans["types"], ["wall"])  # '# mode: wall' header
        total, self_ = austin_reference(AUSTIN3)
        js = self.table("austin", "wall")
        self.assertEqual(js["unit"], "nanoseconds")
        self.assert_table(js, total, self_, "austin")

    def test_folded_dialect_line_shapes(self):
        """SHAPE TEST, not tool output: no real py-spy raw, rbspy collapsed or
        dotnet folded file exists in the corpus, so these lines are written
        here in the shapes docs/formats.md documents (py-spy raw
        `func (file:line)` frames with a `thread (0x…)` / thread-name /
        `process N:"cmd"` root; rbspy `method - file:line`; .NET
        `Module!Namespace.Class.Method`) to check they parse with frames kept
        exactly as written and counts summed."""
        shapes = {
            "shape-pyspy": ('thread (0x7F3A2B1C4740);<module> (app.py:40);handle (app.py:22);compute (lib/calc.py:7) 5\n'
                            'MainThread;<module> (app.py:40);handle (app.py:23) 3\n'
                            'process 4242:"python3 app.py";<module> (app.py:40);idle (app.py) 2\n',
                            10, {"compute (lib/calc.py:7)": 5, "handle (app.py:23)": 3, "idle (app.py)": 2}),
            "shape-rbspy": ("<main> - bin/puma:10;block in run - lib/puma/server.rb:120;handle - app/x.rb:5 4\n"
                            "<main> - bin/puma:10;sleep - <internal:kernel>:187 6\n",
                            10, {"handle - app/x.rb:5": 4, "sleep - <internal:kernel>:187": 6}),
            "shape-dotnet": ("Thread (1234);System.Private.CoreLib!System.Threading.ThreadPoolWorkQueue.Dispatch;"
                             "App!App.Controllers.CpuController.Fib 7\n"
                             "Thread (1234);UNMANAGED_CODE_TIME 2\n",
                             9, {"App!App.Controllers.CpuController.Fib": 7, "UNMANAGED_CODE_TIME": 2}),
        }
        for svc, (text, total, self_) in shapes.items():
            with self.subTest(svc):
                path = os.path.join(self.tmp, svc + ".txt")
                with open(path, "w") as f:
                    f.write(text)
                ans = self.upload(path, svc)  # auto: detected as folded
                self.assertEqual((ans["format"], ans["detected"]), ("folded", True))
                js = self.table(svc, "cpu")
                self.assertEqual(js["total"], total)
                self.assertEqual({r["function"]: r["self"] for r in js["rows"] if r["self"]}, self_)

    # -- Ruby --

    def test_ruby_rbspy_pprof(self):
        ans = self.upload(RBSPY, "rbspy")
        self.assertEqual((ans["format"], ans["types"]), ("pprof", ["samples"]))
        raw = go_raw_totals(RBSPY)
        totals, self_ = pprof_walk(RBSPY)
        self.assertEqual(totals, raw)  # the two references agree
        self.assert_table(self.table("rbspy", "samples"), raw["samples"],
                          {k: v["samples"] for k, v in self_.items()}, "rbspy")

    # -- .NET --

    # the canonical names docs/formats.md ("Sample types") gives the .NET type names
    DOTNET_TYPES = {"cpu": "cpu", "wall": "wall", "exception": "exceptions", "alloc_samples": "alloc_objects",
                    "alloc_size": "alloc_space", "lock_count": "mutex_contentions", "lock_time": "lock"}
    DOTNET_TYPES.update({k.replace("_", "-"): v for k, v in DOTNET_TYPES.items()})

    def test_dotnet_pprof(self):
        for svc, path, go_accepts in (("dotnet-labels", DOTNET_LABELS, True),
                                      ("dotnet-funcid0", DOTNET_FUNCID0, False)):
            with self.subTest(svc):
                ans = self.upload(path, svc)
                self.assertEqual(ans["format"], "pprof")
                totals, self_ = pprof_walk(path)
                if go_accepts:
                    self.assertEqual(go_raw_totals(path), totals)
                else:  # go tool pprof: "found function with reserved ID=0"
                    r = run(["go", "tool", "pprof", "-raw", path], check=False, env=go_env())
                    self.assertNotEqual(r.returncode, 0)
                stored = self.services()[svc]
                self.assertEqual(set(stored), {self.DOTNET_TYPES[t] for t in totals})
                for t, total in totals.items():
                    js = self.table(svc, self.DOTNET_TYPES[t])
                    self.assert_table(js, total, {k: v[t] for k, v in self_.items()}, "%s %s" % (svc, t))
                self.assertGreater(totals["cpu"], 0)

    # -- Node.js --

    def test_node_cpuprofile_convert_and_direct(self):
        prof = gen_node()
        # node comes with appliance/install-deps: missing is a failure
        self.assertTrue(prof, "node is not installed (appliance/install-deps)")
        n, cpu, cnt, ns = cpuprofile_reference(prof)
        self.assertGreater(n, 50)
        # the seed's path: convert-cpuprofile, then upload the folded text
        folded = os.path.join(self.tmp, "work.folded")
        with open(folded, "w") as f:
            r = subprocess.run([WTCTL, "profile", "convert-cpuprofile", prof], stdout=f, stderr=subprocess.PIPE,
                               text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        ans = self.upload(folded, "node-folded", "--format", "folded")
        self.assertEqual(ans["types"], ["cpu"])
        self.assert_table(self.table("node-folded", "cpu"), n, cnt, "node convert-cpuprofile")
        # direct: format=cpuprofile → cpu in ns (Σ max(timeDelta,0)·1000) and samples
        ans = self.upload(prof, "node", "--format", "cpuprofile")
        self.assertEqual(ans["types"], ["cpu", "samples"])
        self.assert_table(self.table("node", "cpu"), cpu, ns, "node cpuprofile cpu")
        self.assert_table(self.table("node", "samples"), n, cnt, "node cpuprofile samples")

    # -- native (perf) --

    def test_native_perf_script(self):
        d = gen_perf()
        # perf comes with appliance/install-deps: not recording is a failure
        self.assertTrue(d, "tests/gen/gen-perf-folded: perf cannot record here")
        samples, events, rows = perf_report(os.path.join(d, "perf.data"))
        self.assertGreater(samples, 50)
        # perf report names an unsymbolized address in a file "0x<16 hex>";
        # the edge names it "<file>+0x<hex>" with the same file-relative
        # address (docs/formats.md): compare those by address
        ref = {k: v for k, v in rows.items() if not k.startswith("0x")}
        ref_addr = {}
        for k, v in rows.items():
            if k.startswith("0x"):
                ref_addr[int(k, 16)] = ref_addr.get(int(k, 16), 0) + v
        script = os.path.join(d, "perf-script.txt")
        for svc, fmt in (("cwork-perf", "perf"), ("cwork-folded", "folded")):
            with self.subTest(fmt):
                ans = self.upload(script, svc, "--format", fmt)
                self.assertEqual(ans["format"], "perf")  # folded given perf text is parsed as perf
                self.assertEqual(sorted(ans["types"]), ["cpu", "samples"])
                js = self.table(svc, "samples")
                self.assertEqual(js["total"], samples)
                got = {}
                for r in js["rows"]:
                    got[r["function"]] = got.get(r["function"], 0) + r["self"]
                top = sorted(((v, k) for k, v in got.items() if v and not k.startswith("[")),
                             key=lambda x: (-x[0], x[1]))[:10]
                self.assertGreaterEqual(len(top), 3)
                for v, k in top:
                    m = re.fullmatch(r".+\+0x([0-9a-f]+)", k)
                    want = ref_addr.get(int(m.group(1), 16)) if m else ref.get(k)
                    self.assertEqual(want, v, "perf report samples of %r" % k)
                for k, v in sorted(ref.items(), key=lambda kv: -kv[1])[:10]:
                    self.assertEqual(got.get(k), v, "edge self of perf report's %r" % k)
                self.assertEqual(self.table(svc, "cpu")["total"], events)  # cpu-clock periods, ns

    # -- Go --

    def test_go_profiles_all_types(self):
        r = run([os.path.join(ROOT, "tests/gen/gen-go-profiles")], check=False, env=GEN_ENV)
        # Go comes with appliance/install-deps: a generator failure is a failure
        self.assertEqual(r.returncode, 0, "tests/gen/gen-go-profiles failed: " + r.stderr[-2000:])
        d = os.path.join(TESTDATA, "go")
        cases = [  # (file, service, extra args, {pprof type: stored type})
            ("cpu", "go-cpu", [], {"cpu": "cpu", "samples": "samples"}),
            ("heap", "go-heap", [], {t: t for t in ("alloc_objects", "alloc_space", "inuse_objects",
                                                     "inuse_space")}),
            ("goroutine", "go-goroutine", [], {"goroutine": "goroutine"}),
            ("mutex", "go-mutex", ["--type", "mutex"], {"contentions": "mutex_contentions",
                                                         "delay": "mutex_delay"}),
            ("block", "go-block", ["--type", "block"], {"contentions": "block_contentions",
                                                         "delay": "block_delay"}),
        ]
        for name, svc, extra, types in cases:
            with self.subTest(name):
                path = os.path.join(d, name + ".pb.gz")
                ans = self.upload(path, svc, *extra)
                self.assertEqual((ans["format"], ans["gzip"]), ("pprof", False))  # already gzip: sent as is
                self.assertEqual(ans["bytes_sent"], os.path.getsize(path))
                self.assertEqual(set(self.services()[svc]), set(types.values()))
                for pt, st in types.items():
                    total, self_, _ = pprof_reference(path, pt)
                    if name in ("mutex", "block"):
                        self.assertGreater(total, 0, name)
                    self.assert_table(self.table(svc, st), total, self_, "go %s %s" % (name, st))

    # -- wtctl profile upload itself --

    def test_upload_detects_gzips_and_prints_what_was_stored(self):
        d = gen_perf()
        path = os.path.join(d, "perf-script.txt") if d else AUSTIN3
        size = os.path.getsize(path)
        before = self.edge.metrics()["wt_edge_upload_bytes_total"]
        r = self.wtctl("profile", "upload", path, "--service", "cli-text")
        lines = dict(l.split(":", 1) for l in r.stdout.splitlines() if ":" in l)
        fmt = "perf" if d else "folded"
        self.assertEqual(lines["format"].strip(), fmt + " (detected by content)")
        m = re.fullmatch(r"\s*(\d+) bytes \(gzip of (\d+)\), 1 try", lines["sent"])
        self.assertTrue(m, r.stdout)
        sent = int(m.group(1))
        self.assertEqual(int(m.group(2)), size)
        self.assertLess(sent, size)
        # the edge received exactly the gzip body
        self.assertEqual(self.edge.metrics()["wt_edge_upload_bytes_total"] - before, sent)
        self.assertRegex(lines["stored"], r"^\s*\d+ samples, project demo, service cli-text, seq \d+$")
        self.assertEqual(lines["types"].split(), ["cpu", "samples"] if d else ["wall"])
        t = re.fullmatch(r"\s*(\S+) \.\. (\S+)", r.stdout.split("time:", 1)[1].splitlines()[0])
        self.assertTrue(t, r.stdout)
        if d:
            # the stored span equals the span of the perf timestamps (awk over the text)
            ans = self.upload(path, "cli-json")
            span_us = int(run(["awk", r'/^[^#[:space:]]/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/)'
                                      r' { t = substr($i, 1, length($i) - 1) * 1e6; if (!n++ || t < lo) lo = t;'
                                      r' if (t > hi) hi = t } } END { printf "%.0f\n", hi - lo }', path]).stdout)
            self.assertEqual((ans["until_ns"] - ans["from_ns"]) // 1000, span_us)
            self.assertEqual((ans["bytes_read"], ans["tries"], ans["gzip"]), (size, 1, True))
        # unknown content: sent as format=auto, the edge's 415 is reported, exit 1
        junk = os.path.join(self.tmp, "junk.bin")
        with open(junk, "wb") as f:
            f.write(bytes(range(256)) * 4)
        r = self.wtctl("profile", "upload", junk, "--service", "junk", check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("format not recognised", r.stderr)
        self.assertIn("HTTP 415", r.stderr)

    def test_upload_retries_5xx_and_connect_errors(self):
        with open(AP_COLLAPSED, "rb") as f:
            original = f.read()
        # 503, 502, then 200: three tries, the same gzip body each time
        fake = FakeServer([503, 502])
        self.addCleanup(fake.close)
        url = "http://127.0.0.1:%d" % fake.port
        t0 = time.time()
        r = self.wtctl("--json", "profile", "upload", AP_COLLAPSED, "--service", "fake", edge=url)
        self.assertGreaterEqual(time.time() - t0, 1.4)  # 0.5 s + 1 s backoff
        self.assertEqual(json.loads(r.stdout)["tries"], 3)
        self.assertEqual(len(fake.requests), 3)
        for path, body, _ in fake.requests:
            self.assertEqual(gzip.decompress(body), original)
            q = urllib.parse.parse_qs(urllib.parse.urlparse(path).query)
            self.assertEqual((q["format"], q["service"]), (["folded"], ["fake"]))
        self.assertIn("retrying in 500 ms", r.stderr)
        self.assertIn("retrying in 1000 ms", r.stderr)
        # one Idempotency-Key for all tries of an invocation, a new one per invocation
        keys = [h.get("Idempotency-Key") for _, _, h in fake.requests]
        self.assertRegex(keys[0] or "", r"^wtctl-[0-9a-f]{32}$")
        self.assertEqual(len(set(keys)), 1, keys)
        fake.requests.clear()
        self.wtctl("profile", "upload", AP_COLLAPSED, "--service", "fake", edge=url)
        self.wtctl("profile", "upload", AP_COLLAPSED, "--service", "fake", "--idempotency-key", "ci-run-7", edge=url)
        k2, k3 = (h.get("Idempotency-Key") for _, _, h in fake.requests)
        self.assertRegex(k2 or "", r"^wtctl-[0-9a-f]{32}$")
        self.assertNotEqual(k2, keys[0])
        self.assertEqual(k3, "ci-run-7")
        # always 503: gives up after 3 tries, exit 1
        fake2 = FakeServer([503] * 5)
        self.addCleanup(fake2.close)
        r = self.wtctl("profile", "upload", AP_COLLAPSED, "--service", "fake",
                       edge="http://127.0.0.1:%d" % fake2.port, check=False)
        self.assertEqual((r.returncode, len(fake2.requests)), (1, 3))
        self.assertIn("HTTP 503", r.stderr)
        # a 4xx is final: one try
        fake3 = FakeServer([400])
        self.addCleanup(fake3.close)
        r = self.wtctl("profile", "upload", AP_COLLAPSED, "--service", "fake",
                       edge="http://127.0.0.1:%d" % fake3.port, check=False)
        self.assertEqual((r.returncode, len(fake3.requests)), (1, 1))
        # connection refused at first, the server comes up during the backoff
        port = free_port()
        p = subprocess.Popen([WTCTL, "--json", "--edge", "http://127.0.0.1:%d" % port, "--token", UPLOAD_TOKEN,
                              "profile", "upload", AP_COLLAPSED, "--service", "late"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: p.poll() is None and p.kill())
        first = p.stderr.readline()  # the first try failed; wtctl now sleeps 500 ms
        self.assertIn("Couldn't connect", first)
        self.assertIn("retrying in 500 ms", first)
        fake4 = FakeServer([], port=port)
        self.addCleanup(fake4.close)
        out, err = p.communicate(timeout=30)
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(json.loads(out)["tries"], 2)
        self.assertEqual(len(fake4.requests), 1)


if __name__ == "__main__":
    unittest.main()
