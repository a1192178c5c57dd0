#!/usr/bin/env bash
# bench/hub_bytes.sh — compressed bytes on disk per sample for eBPF-shaped
# data, per hub table (system.parts after OPTIMIZE FINAL: the steady state
# after background merges), per stack_agg_v1 resolution and per column.
# The data looks like what the edge's eBPF sampler sends (edge/ebpf_build.c):
# every flush (10 s) of every host is one pprof upload per service whose
# samples are per (stack, labelset), labels host, thread (the comm), pid
# (a number label) and container, value = count × period (19 Hz); the
# stacks come from one pool per service shared by every host (the same
# binaries), Zipf-popular, prefixes shared like a call tree. It goes
# through the real ingest path (POST /v1/profiles → parse → ClickHouse,
# the materialized views fill the aggregates). A "sample" here is one
# 19 Hz tick (sum(value) / period), not one row.
# Starts its own private ClickHouse and hub and stops them at the end.
# BYTES_HOSTS (12) BYTES_PROCS (4 per host) BYTES_FLUSHES (120 = 20 min)
# BYTES_STACKS (3000 per service) BYTES_SEED (1) BYTES_PAR (4 uploaders);
# BYTES_CH_EXTRA=FILE.xml appends FILE to the server's config.xml (e.g. a
# <compression> section); BYTES_VARIANTS=1 also copies the rows into tables
# of other sorting keys and prints their bytes (what a new key would give).
set -euo pipefail
cd "$(dirname "$0")/.."
export WT_ROOT=$PWD BUILD=${BUILD:-build}
export WT_BIN=${WT_BIN:-$PWD/$BUILD/bin}
exec python3 - "$@" <<'PY'
import concurrent.futures, gzip, os, random, sys, time
sys.path.insert(0, os.path.join(os.environ["WT_ROOT"], "tests", "integration"))
from harness.clickhouse import ClickHouse
from harness.hub import Hub
sys.path.insert(0, os.path.join(os.environ["WT_ROOT"], "tests", "tools"))
from pbwire import enc_varint, f_bytes, put_varint  # noqa: E402

HOSTS = int(os.environ.get("BYTES_HOSTS", 12))
PROCS = int(os.environ.get("BYTES_PROCS", 4))
FLUSHES = int(os.environ.get("BYTES_FLUSHES", 120))
STACKS = int(os.environ.get("BYTES_STACKS", 3000))
SEED = int(os.environ.get("BYTES_SEED", 1))
PAR = int(os.environ.get("BYTES_PAR", 4))
HZ, FLUSH_S = 19, 10
PERIOD = 1_000_000_000 // HZ
BASE_S = 1_699_999_200
DB = "watchtower"


# ---- a minimal pprof encoder (profile.proto field numbers; pbwire's fields) ----
def fld(num, payload):          # length-delimited
    return f_bytes(num, payload)


def fv(num, v):                 # varint
    return enc_varint(num << 3) + put_varint(v)


def packed(num, vals):
    return f_bytes(num, b"".join(put_varint(v) for v in vals))


class Pprof:
    def __init__(self):
        self.strs, self.sidx = [""], {"": 0}
        self.funcs, self.locs, self.samples = [], [], []
        self.floc = {}

    def s(self, x):
        if x not in self.sidx:
            self.sidx[x] = len(self.strs)
            self.strs.append(x)
        return self.sidx[x]

    def loc(self, name):
        if name not in self.floc:
            fid = len(self.funcs) + 1
            self.funcs.append(fv(1, fid) + fv(2, self.s(name)))
            self.locs.append(fv(1, fid) + fld(4, fv(1, fid)))
            self.floc[name] = fid
        return self.floc[name]

    def sample(self, frames_root_first, value, labels):
        ids = [self.loc(f) for f in reversed(frames_root_first)]  # leaf first
        lab = b""
        for k, v in labels:
            if isinstance(v, int):
                lab += fld(3, fv(1, self.s(k)) + fv(3, v))
            else:
                lab += fld(3, fv(1, self.s(k)) + fv(2, self.s(v)))
        self.samples.append(packed(1, ids) + packed(2, [value]) + lab)

    def encode(self, time_ns, duration_ns):
        st = fv(1, self.s("cpu")) + fv(2, self.s("nanoseconds"))
        out = [fld(1, st)]
        out += [fld(2, x) for x in self.samples]
        out += [fld(4, x) for x in self.locs]
        out += [fld(5, x) for x in self.funcs]
        out += [fld(6, x.encode()) for x in self.strs]
        out += [fv(9, time_ns), fv(10, duration_ns), fld(11, st), fv(12, PERIOD)]
        return gzip.compress(b"".join(out), 1)


# ---- the shape ---------------------------------------------------------------
rng = random.Random(SEED)
pool = []                      # stacks, root first; a call tree's leaves
for i in range(STACKS):
    if pool and rng.random() < 0.9:
        parent = rng.choice(pool)
        cut = rng.randint(1, len(parent))
        st = parent[:cut] + [f"app::mod{rng.randint(0, 60)}::fn{rng.randint(0, 400)}"
                             for _ in range(rng.randint(1, 8))]
    else:
        st = ["_start", "__libc_start_main", "main"] + [f"app::init{rng.randint(0, 9)}"]
    pool.append(st[:64])
# Zipf-like popularity (a few hot stacks, a long tail), per host the same
weights = [1.0 / (r + 1) ** 1.1 for r in range(STACKS)]
cum, acc = [], 0.0
for w in weights:
    acc += w
    cum.append(acc)
THREADS = ["api", "worker-0", "worker-1", "worker-2", "gc"]


def upload_body(h, f):
    r = random.Random(SEED * 1_000_003 + h * 10_007 + f)
    p = Pprof()
    for proc in range(PROCS):
        pid = 1000 + h * 17 + proc
        counts = {}
        for _ in range(HZ * FLUSH_S):          # one core busy: 19 Hz × 10 s
            s = r.choices(range(STACKS), cum_weights=cum)[0]
            th = THREADS[min(len(THREADS) - 1, int(r.expovariate(1.2)))]
            counts[(s, th)] = counts.get((s, th), 0) + 1
        for (s, th), c in counts.items():
            p.sample(pool[s], c * PERIOD, [("host", f"host-{h:03d}"), ("thread", th), ("pid", pid),
                                           ("container", f"api-{h:03d}-{proc}")])
    # each host flushes at its own offset (edges are not synchronised)
    t0 = (BASE_S + f * FLUSH_S) * 10**9 + (h * 7_919_000_003) % (FLUSH_S * 10**9)
    return p.encode(t0, FLUSH_S * 10**9)


ch = ClickHouse()
if os.environ.get("BYTES_CH_EXTRA"):   # XML appended to the server's config.xml
    ch.extra_config = os.environ["BYTES_CH_EXTRA"]
ch.start()
hub = None
try:
    hub = Hub(None, ch, workers=4, hub_extra="worker_interval_s = 0;").start()
    assert hub.create_project("bench")[0] == 201
    up = hub.create_token("bench", "upload")
    t = time.perf_counter()

    def one(hf):
        h, f = hf
        body = upload_body(h, f)
        for _ in range(120):    # a loaded machine: the hub defers (503 + retry), as a client retries
            st, js = hub.upload(body, up, "api", format="pprof")
            if st != 503:
                break
        assert st == 200, (st, js)

    jobs = [(h, f) for f in range(FLUSHES) for h in range(HOSTS)]
    with concurrent.futures.ThreadPoolExecutor(PAR) as ex:
        list(ex.map(one, jobs))
    print(f"ingested {len(jobs)} uploads ({HOSTS} hosts x {PROCS} processes x {FLUSHES} flushes of {FLUSH_S} s,"
          f" {STACKS} stacks) in {time.perf_counter() - t:.1f} s")
    q = lambda sql: ch.query(sql, database=DB).strip()
    t = time.perf_counter()
    tables = ("profile_samples_v1", "stack_agg_v1", "function_rollup_v1", "label_sets_v1", "profile_stacks_v1")
    for tbl in tables:
        q(f"OPTIMIZE TABLE {tbl} FINAL")
    print(f"OPTIMIZE FINAL in {time.perf_counter() - t:.1f} s")
    N = int(q(f"SELECT intDiv(sum(value), {PERIOD}) FROM profile_samples_v1"))
    print(f"samples (19 Hz ticks, sum(value)/period): {N:,}; server {q('SELECT version()')};"
          f" seed {SEED}")
    # per resolution: copy each into a table of the same schema, merge, measure
    for res in (60, 3600, 86400):
        q(f"DROP TABLE IF EXISTS bytes_res_{res}")
        q(f"CREATE TABLE bytes_res_{res} AS stack_agg_v1")
        q(f"INSERT INTO bytes_res_{res} SELECT * FROM stack_agg_v1 WHERE res = {res}")
        q(f"OPTIMIZE TABLE bytes_res_{res} FINAL")
    total = 0
    for tbl in tables + tuple(f"bytes_res_{r}" for r in (60, 3600, 86400)):
        rows, cb, ub = q("SELECT sum(rows), sum(data_compressed_bytes), sum(data_uncompressed_bytes)"
                         f" FROM system.parts WHERE active AND database = '{DB}' AND table = '{tbl}'"
                         " FORMAT TabSeparated").split("\t")
        name = tbl if not tbl.startswith("bytes_res_") else f"  stack_agg_v1 res={tbl[10:]}"
        if not tbl.startswith("bytes_res_"):
            total += int(cb)
        print(f"on disk {name:26s} {int(rows):>10,} rows {int(cb):>12,} B  {int(cb) / N:6.2f} B/sample"
              f"  {int(cb) / max(1, int(rows)):6.2f} B/row  (uncompressed {int(ub) / N:6.2f} B/sample)")
    print(f"on disk {'all tables':26s} {'':>10s}      {total:>12,} B  {total / N:6.2f} B/sample")
    if os.environ.get("BYTES_COLUMNS", "1") == "1":
        for tbl in ("profile_samples_v1", "stack_agg_v1", "function_rollup_v1"):
            out = q("SELECT name, data_compressed_bytes FROM system.columns WHERE database = currentDatabase()"
                    f" AND table = '{tbl}' ORDER BY data_compressed_bytes DESC FORMAT TabSeparated")
            cols = [l.split("\t") for l in out.splitlines()]
            print(f"columns {tbl}: " + ", ".join(f"{c} {int(b) / N:.2f}" for c, b in cols if int(b) * 50 > N))
    if os.environ.get("BYTES_VARIANTS") == "1":
        # same rows, other sorting keys (a new key is a new table: CREATE AS
        # + INSERT SELECT; what the key alone changes)
        raw_cols = "project, service, sample_type, time_ns"
        variants = [
            ("profile_samples_v1", "labels before stack",
             f"({raw_cols}, host, container, thread, stack_id)"),
            ("stack_agg_v1", "stack before bucket",
             "(project, service, sample_type, res, labelset_id, stack_id, bucket, unit, retention_days)"),
            ("function_rollup_v1", "minute before function",
             "(project, service, sample_type, minute, function, unit, retention_days)"),
        ]
        for i, (tbl, what, key) in enumerate(variants):
            eng = q(f"SELECT engine_full FROM system.tables WHERE database = currentDatabase() AND name = '{tbl}'")
            eng = eng.replace("\\'", "'")
            head, rest = eng.split(" ORDER BY ", 1)
            tail = rest[rest.index(" SETTINGS"):] if " SETTINGS" in rest else ""
            q(f"DROP TABLE IF EXISTS bytes_var_{i}")
            q(f"CREATE TABLE bytes_var_{i} AS {tbl} ENGINE = {head} ORDER BY {key}{tail}")
            q(f"INSERT INTO bytes_var_{i} SELECT * FROM {tbl}")
            q(f"OPTIMIZE TABLE bytes_var_{i} FINAL")
            rows, cb = q("SELECT sum(rows), sum(data_compressed_bytes) FROM system.parts WHERE active"
                         f" AND database = '{DB}' AND table = 'bytes_var_{i}' FORMAT TabSeparated").split("\t")
            print(f"variant {tbl} {what}: ORDER BY {key}: {int(rows):,} rows {int(cb):,} B"
                  f"  {int(cb) / N:.2f} B/sample")
finally:
    if hub:
        hub.stop()
        hub.cleanup()
    ch.stop()
    ch.cleanup()
PY
