#!/usr/bin/env bash
# bench/hub_query.sh — wt-hub query latency (flamegraph, table, diff,
# timeline) over 10 M stored samples / 100 k unique stacks, bytes on disk, and ingest rows/s through the hub, each
# printed with a ratio against a baseline measured in the same run:
#   query  : the raw ClickHouse GROUP BY stack_id over the same selection (curl)
#   ingest : the same number of rows POSTed straight to ClickHouse as RowBinary
# Starts its own private ClickHouse and hub on free loopback ports (the test
# harness classes) and stops them at the end. Every hub figure is printed
# beside the raw ClickHouse GROUP BY stack_id over the same selection and
# beside the hub's own raw path (path=raw) in the same run. BENCH_SCALE=large:
# 100 M samples / 1 M stacks over 7 days instead of 10 M / 100 k over 1 h
# (the default took 35 min on the shared 2-core VM, mostly generating the
# rows through the aggregate views; large, hours). Hub queries pass
# cache=0 (built from ClickHouse rows each time); the "cached" column is
# the same query answered by the hub's view cache (hub/viewcache.h). The
# ingest part also inserts the baseline's bytes into profile_samples_v1
# itself: the aggregate views' share of an INSERT. It also prints the CPU
# seconds per upload of the hub and of clickhouse-server (/proc/PID/stat)
# beside ClickHouse's for the two bare inserts: on a loaded VM the wall
# clock mostly measures waiting for a core.
# BENCH_SAMPLES / BENCH_STACKS / BENCH_SPAN_S / BENCH_RUNS override sizes.
set -euo pipefail
cd "$(dirname "$0")/.."
export WT_ROOT=$PWD BUILD=${BUILD:-build}
export WT_BIN=${WT_BIN:-$PWD/$BUILD/bin}
exec python3 - "$@" <<'PY'
import concurrent.futures, os, statistics, subprocess, sys, tempfile, time, urllib.parse, urllib.request
sys.path.insert(0, os.path.join(os.environ["WT_ROOT"], "tests", "integration"))
from harness.clickhouse import ClickHouse
from harness.hub import Hub

SCALE = os.environ.get("BENCH_SCALE", "default")
if SCALE == "large":
    N0, S0, SPAN0 = 100_000_000, 1_000_000, 7 * 86400
else:
    N0, S0, SPAN0 = 10_000_000, 100_000, 3600
N = int(os.environ.get("BENCH_SAMPLES", N0))
S = int(os.environ.get("BENCH_STACKS", S0))
SPAN = int(os.environ.get("BENCH_SPAN_S", SPAN0))
RUNS = int(os.environ.get("BENCH_RUNS", 5))
BASE_S = 1_699_999_200  # an hour boundary (not a day boundary)
DB = "watchtower"
def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]

def timed(fn, runs):
    out = []
    for _ in range(runs):
        t = time.perf_counter(); fn(); out.append(time.perf_counter() - t)
    return out

ch = ClickHouse().start()
hub = None
try:
    # debug log: the aggregate path's phases per query (selection.c)
    hub = Hub(None, ch, workers=4).start(env={"WT_LOG_LEVEL": "debug"})
    assert hub.create_project("bench")[0] == 201
    rd = hub.create_token("bench", "read")
    up = hub.create_token("bench", "upload")

    # --- synthetic data, generated inside ClickHouse ------------------------
    # stack s (root first) has 11 frames; frame i is fn<i>_<s mod 3^(i+1)>, so
    # prefixes are shared like a real call tree (~290 k tree nodes, S leaves).
    # N samples evenly over SPAN seconds from BASE_S, 16 threads of one host;
    # the materialized views fill the stack aggregates during the INSERT.
    t = time.perf_counter()
    ch.query(f"""INSERT INTO profile_stacks_v1 (project, stack_id, frames)
        SELECT 'bench', number, arrayMap(i -> concat('fn', toString(i), '_',
            toString(number % toUInt64(pow(3, i + 1)))), range(11)) FROM numbers({S})""", database=DB)
    ch.query(f"""INSERT INTO profile_samples_v1 (date, time_ns, project, service, sample_type, unit,
            stack_id, value, host, thread, upload_id, retention_days)
        SELECT toDate(toDateTime(intDiv(t, 1000000000))), t,
            'bench', 'svc', 'cpu', 'nanoseconds', intHash64(number) % {S}, 10000000,
            'host1', toString(number % 16), 'bench', 30
        FROM (SELECT number, toUInt64({BASE_S} * 1000000000 + intDiv(number * {SPAN * 1000}, {N}) * 1000000) AS t
              FROM numbers({N}))""", database=DB, timeout=7200)
    gen_s = time.perf_counter() - t
    print(f"scale {SCALE}: generated {N} samples / {S} stacks over {SPAN} s in ClickHouse in {gen_s:.1f} s"
          " (raw rows + aggregates by the materialized views)")
    t = time.perf_counter()
    for tbl in ("profile_samples_v1", "stack_agg_v1", "label_sets_v1", "series_agg_v1"):
        if ch.query(f"EXISTS TABLE {tbl}", database=DB).strip() == "1":  # (a hub before series_agg_v1)
            ch.query(f"OPTIMIZE TABLE {tbl} FINAL", database=DB, timeout=7200)
    print(f"OPTIMIZE FINAL (steady state after background merges) in {time.perf_counter() - t:.1f} s")
    for line in ch.query("SELECT table, sum(rows), sum(data_compressed_bytes) FROM system.parts WHERE active"
                         f" AND database = '{DB}' AND table IN ('profile_samples_v1', 'stack_agg_v1',"
                         " 'label_sets_v1', 'profile_stacks_v1', 'series_agg_v1') GROUP BY table ORDER BY table FORMAT TabSeparated"
                         ).strip().splitlines():
        tbl, rows, cb = line.split("\t")
        print(f"on disk {tbl:20s} {int(rows):>12,} rows  {int(cb):>13,} compressed bytes"
              f"  {int(cb) / N:6.2f} bytes/sample")

    def raw_sql(frm, until, label):
        cond = " AND thread = '3'" if label else ""
        return (f"SELECT stack_id, sum(value) AS v FROM profile_samples_v1 WHERE project = 'bench'"
                f" AND service = 'svc' AND sample_type = 'cpu' AND time_ns >= {frm * 10**9}"
                f" AND time_ns < {until * 10**9}{cond} GROUP BY stack_id FORMAT RowBinary")

    def raw_query(frm, until, label):
        sql = raw_sql(frm, until, label)
        def f():
            subprocess.run(["curl", "-sS", "-o", "/dev/null", "--data-binary", sql,
                            f"{ch.url}/?database={DB}"], check=True)
        return f

    def hub_query(view, frm, until, label, path="auto", cache="0"):
        # cache=0: built from ClickHouse rows each time (the view cache,
        # hub/viewcache.h, answers a past range asked again)
        params = {"service": "svc", "type": "cpu", "from": str(frm), "until": str(until), "path": path,
                  "cache": cache}
        if label:
            params["label.thread"] = "3"
        if view == "diff":
            params.update(base_from=str(frm), base_until=str(frm + (until - frm) // 2))
        def f():
            if view in ("diff", "timeline"):
                st, js = hub.request("GET", f"/v1/projects/bench/profiles/{view}?" + urllib.parse.urlencode(params),
                                     token=rd)
                assert st == 200, (st, str(js)[:300])
                return js
            st, js = hub.query("bench", view, rd, **params)
            assert st == 200, (st, str(js)[:300])
            return js
        return f

    # ranges: the whole data; one day (large scale); one hour on the hour
    # and one unaligned hour (a "last hour" that starts 17 s past a minute)
    ranges = [("whole", BASE_S, BASE_S + SPAN)]
    if SPAN > 86400:
        ranges.append(("1 day", BASE_S + 86400, BASE_S + 2 * 86400))
    mid = BASE_S + (SPAN // 2) // 3600 * 3600
    ranges.append(("1 h aligned", mid, mid + 3600) if SPAN > 3600 else ("1 h aligned", BASE_S, BASE_S + 3600))
    ranges.append(("1 h unaligned", BASE_S + 917, min(BASE_S + 917 + 3600, BASE_S + SPAN)))
    # half an hour on the hour: minute pieces only (no hour piece fits)
    ranges.append(("30 min", ranges[-2][1], ranges[-2][1] + 1800))
    js = hub_query("flamegraph", BASE_S, BASE_S + SPAN, False)()
    assert js["path"] == "aggregates" and js["total"] == N * 10000000, str(js)[:300]
    fm_whole = None
    print(f"{'range':14s} {'filter':7s} {'view':10s} {'new median':>10s} {'p99':>7s} | {'raw GROUP BY':>12s}"
          f" {'ratio':>7s} | {'hub raw path':>12s} | {'cached':>8s} {'ratio':>7s}")
    for rname, frm, until in ranges:
        for label in (False, True):
            hub_query("flamegraph", frm, until, label)(); raw_query(frm, until, label)()  # warm
            base = timed(raw_query(frm, until, label), RUNS)
            bm = statistics.median(base)
            old = statistics.median(timed(hub_query("flamegraph", frm, until, label, "raw"), max(1, RUNS // 2)))
            for view in ("flamegraph", "table", "diff", "timeline"):
                xs = timed(hub_query(view, frm, until, label), RUNS)
                m = statistics.median(xs)
                if view == "flamegraph" and rname == "whole" and not label:
                    fm_whole = m
                cm = float("nan")
                if view in ("flamegraph", "table"):
                    hub_query(view, frm, until, label, cache="1")()  # fills the view cache
                    cm = statistics.median(timed(hub_query(view, frm, until, label, cache="1"), RUNS))
                print(f"{rname:14s} {'thread' if label else '-':7s} {view:10s} {m*1000:8.0f}ms {pct(xs,99)*1000:5.0f}ms"
                      f" | {bm*1000:10.0f}ms {bm/m:6.1f}x | {old*1000 if view == 'flamegraph' else float('nan'):10.0f}ms"
                      f" | {cm*1000:6.0f}ms {bm/cm:6.1f}x")
    fm = fm_whole
    # where a whole-range flame graph's time goes (hub debug log; ClickHouse
    # wall clock, the hub's phases its worker thread's CPU time)
    phases, most = {}, 0
    for line in hub.read_log().splitlines():
        if "flame from aggregates" not in line or "misses=0 " not in line:
            continue
        kv = dict(x.split("=", 1) for x in line.split() if "=" in x and x.split("=", 1)[1][:1].isdigit())
        n = int(kv["stacks"])
        if n > most:
            phases, most = {}, n
        if n == most:
            for k, v in kv.items():
                if k.endswith("_ms"):
                    phases.setdefault(k, []).append(float(v))
    if phases:
        print(f"flame graph phases over {most} stacks (median ms; clickhouse: wall, the rest: hub CPU): "
              + " ".join(f"{k[:-3]} {statistics.median(v):.0f}" for k, v in phases.items()))
    # 4 concurrent clients (4 workers): throughput vs sequential
    t = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        list(ex.map(lambda _: hub_query("flamegraph", BASE_S, BASE_S + SPAN, False)(), range(4)))
    par = time.perf_counter() - t
    print(f"hub flamegraph, 4 concurrent clients: {4/par:.2f} queries/s vs sequential {1/fm:.2f} queries/s"
          f"  ratio {(4/par)/(1/fm):.2f}x")

    # --- ingest -------------------------------------------------------------
    lines = []
    for s in range(50_000):
        frames = [f"ing{i}_{s % 3 ** (i + 1)}" for i in range(11)]
        lines.append(";".join(frames) + f" {1 + s % 7}")
    folded = ("\n".join(lines) + "\n").encode()
    uploads = 4
    tck = os.sysconf("SC_CLK_TCK")
    def cpu_s(pid):  # user + system CPU seconds of a process (/proc/PID/stat)
        with open(f"/proc/{pid}/stat") as fh:
            f = fh.read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / tck
    t = time.perf_counter()
    rows = 0
    per = []
    hub_cpu = ch_cpu = 0.0
    for i in range(uploads):
        t1 = time.perf_counter()
        h0, c0 = cpu_s(hub.proc.pid), cpu_s(ch.pid)
        st, js = hub.upload(folded, up, f"ingest{i}", format="folded", **{"from": str(BASE_S + i)})
        assert st == 200, (st, js)
        per.append(time.perf_counter() - t1)
        hub_cpu += cpu_s(hub.proc.pid) - h0
        ch_cpu += cpu_s(ch.pid) - c0
        rows += js["rows"]
    hub_s = time.perf_counter() - t
    hub_rate = rows / hub_s
    # baseline: the same number of sample rows straight into ClickHouse (RowBinary via curl)
    with tempfile.NamedTemporaryFile(suffix=".rb") as f:
        data = urllib.request.urlopen(urllib.request.Request(f"{ch.url}/?database={DB}", data=(
            f"SELECT toDate('2023-11-14'), toUInt64({BASE_S}000000000 + number), 'bench', 'raw', 'cpu', 'samples',"
            f" intHash64(number), toInt64(1), '', '', '', '', '', emptyArrayString(), emptyArrayString(),"
            f" 'raw', toUInt16(30) FROM numbers({rows}) FORMAT RowBinary").encode())).read()
        f.write(data); f.flush()
        # the same table without the aggregate views attached: what a raw
        # insert of these rows costs
        ch.query("CREATE TABLE IF NOT EXISTS bench_samples_noviews AS profile_samples_v1", database=DB)
        ins = ("INSERT INTO bench_samples_noviews (date, time_ns, project, service, sample_type, unit, stack_id,"
               " value, host, thread, container, span_id, trace_id, labels.key, labels.value, upload_id,"
               " retention_days) FORMAT RowBinary")
        t = time.perf_counter()
        c0 = cpu_s(ch.pid)
        subprocess.run(["curl", "-sS", "-f", "-o", "/dev/null", "--data-binary", "@" + f.name,
                        f"{ch.url}/?database={DB}&query=" + urllib.parse.quote(ins)], check=True)
        raw_s = time.perf_counter() - t
        raw_cpu = cpu_s(ch.pid) - c0
        # the same bytes into profile_samples_v1 itself: the views' share
        # of an INSERT (its stack_agg_v1 and label_sets_v1 rows)
        t = time.perf_counter()
        c0 = cpu_s(ch.pid)
        subprocess.run(["curl", "-sS", "-f", "-o", "/dev/null", "--data-binary", "@" + f.name,
                        f"{ch.url}/?database={DB}&query="
                        + urllib.parse.quote(ins.replace("bench_samples_noviews", "profile_samples_v1"))], check=True)
        views_s = time.perf_counter() - t
        views_cpu = cpu_s(ch.pid) - c0
    raw_rate = rows / raw_s
    print(f"clickhouse RowBinary insert of the same rows into profile_samples_v1 (with the aggregate views):"
          f" {rows / views_s:,.0f} rows/s  ratio vs without {raw_s / views_s:.2f}x")
    print(f"baseline clickhouse RowBinary insert, table without the aggregate views (curl): {raw_rate:,.0f} rows/s")
    print(f"hub ingest (folded upload -> parse -> object store -> ClickHouse): {hub_rate:,.0f} rows/s"
          f"  ratio vs baseline {hub_rate/raw_rate:.2f}x  ({uploads} uploads of {len(folded)} bytes:"
          f" {', '.join(f'{x:.2f}' for x in per)} s)")
    # CPU seconds (/proc) are what a shared VM's load does not distort: the
    # hub's own work per upload, ClickHouse's for the same upload, and
    # ClickHouse's for the bare inserts of the same number of rows
    print(f"ingest CPU per {rows // uploads:,}-row upload: hub {hub_cpu / uploads:.2f} s, clickhouse"
          f" {ch_cpu / uploads:.2f} s; clickhouse for the same rows as one RowBinary insert: without the views"
          f" {raw_cpu / uploads:.2f} s, with them {views_cpu / uploads:.2f} s;  CPU ratio vs baseline"
          f" {raw_cpu / (hub_cpu + ch_cpu):.3f}x, vs the insert with the views {views_cpu / (hub_cpu + ch_cpu):.2f}x")
finally:
    if hub:
        hub.cleanup()
    ch.cleanup()
PY
