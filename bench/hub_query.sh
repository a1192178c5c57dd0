#!/usr/bin/env bash
# bench/hub_query.sh — wt-hub flame-graph query latency over 10 M stored
# samples / 100 k unique stacks, and ingest rows/s through the hub, each
# printed with a ratio against a baseline measured in the same run:
#   query  : the raw ClickHouse GROUP BY stack_id over the same selection (curl)
#   ingest : the same number of rows POSTed straight to ClickHouse as RowBinary
# Starts its own private ClickHouse and hub on free loopback ports (the test
# harness classes) and stops them at the end. BENCH_SAMPLES / BENCH_STACKS /
# BENCH_RUNS override the sizes. Runs in about 1-2 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
export WT_ROOT=$PWD BUILD=${BUILD:-build}
export WT_BIN=${WT_BIN:-$PWD/$BUILD/bin}
exec python3 - "$@" <<'PY'
import concurrent.futures, os, statistics, subprocess, sys, tempfile, time, urllib.request
sys.path.insert(0, os.path.join(os.environ["WT_ROOT"], "tests", "integration"))
from harness.clickhouse import ClickHouse
from harness.hub import Hub

N = int(os.environ.get("BENCH_SAMPLES", 10_000_000))
S = int(os.environ.get("BENCH_STACKS", 100_000))
RUNS = int(os.environ.get("BENCH_RUNS", 10))
BASE_S = 1_700_000_000
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
    hub = Hub(None, ch, workers=4).start()
    assert hub.create_project("bench")[0] == 201
    rd = hub.create_token("bench", "read")
    up = hub.create_token("bench", "upload")

    # --- synthetic data, generated inside ClickHouse ------------------------
    # stack s (root first) has 11 frames; frame i is fn<i>_<s mod 3^(i+1)>, so
    # prefixes are shared like a real call tree (~290 k tree nodes, S leaves).
    t = time.perf_counter()
    ch.query(f"""INSERT INTO profile_stacks_v1 (project, stack_id, frames)
        SELECT 'bench', number, arrayMap(i -> concat('fn', toString(i), '_',
            toString(number % toUInt64(pow(3, i + 1)))), range(11)) FROM numbers({S})""", database=DB)
    ch.query(f"""INSERT INTO profile_samples_v1 (date, time_ns, project, service, sample_type, unit,
            stack_id, value, host, thread, upload_id, retention_days)
        SELECT toDate(toDateTime({BASE_S} + intDiv(number, 1000))), ({BASE_S} * 1000000000) + number * 1000000,
            'bench', 'svc', 'cpu', 'nanoseconds', intHash64(number) % {S}, 10000000,
            'host1', toString(number % 16), 'bench', 30
        FROM numbers({N})""", database=DB)
    gen_s = time.perf_counter() - t
    print(f"generated {N} samples / {S} stacks in ClickHouse in {gen_s:.1f} s")

    frm, until = BASE_S, BASE_S + N // 1000 + 1
    raw_sql = (f"SELECT stack_id, sum(value) AS v FROM profile_samples_v1 WHERE project = 'bench'"
               f" AND service = 'svc' AND sample_type = 'cpu' AND time_ns >= {frm * 10**9}"
               f" AND time_ns < {until * 10**9} GROUP BY stack_id FORMAT RowBinary")
    def raw_query():
        subprocess.run(["curl", "-sS", "-o", "/dev/null", "--data-binary", raw_sql,
                        f"{ch.url}/?database={DB}"], check=True)
    def hub_query(view="flamegraph"):
        def f():
            st, js = hub.query("bench", view, rd, service="svc", type="cpu",
                               **{"from": str(frm), "until": str(until)})
            assert st == 200 and js["total"] == N * 10000000, (st, str(js)[:300])
        return f
    hub_query()(); raw_query()  # warm caches
    base = timed(raw_query, RUNS)
    flame = timed(hub_query("flamegraph"), RUNS)
    table = timed(hub_query("table"), RUNS)
    bm, fm, tm = statistics.median(base), statistics.median(flame), statistics.median(table)
    print(f"baseline clickhouse GROUP BY stack_id (curl): median {bm*1000:.0f} ms  p99 {pct(base,99)*1000:.0f} ms")
    print(f"hub flamegraph query:  median {fm*1000:.0f} ms  p99 {pct(flame,99)*1000:.0f} ms"
          f"  ratio vs baseline {fm/bm:.2f}x")
    print(f"hub table query:       median {tm*1000:.0f} ms  p99 {pct(table,99)*1000:.0f} ms"
          f"  ratio vs baseline {tm/bm:.2f}x")

    # 4 concurrent clients (4 workers): throughput vs sequential
    t = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        list(ex.map(lambda _: hub_query("flamegraph")(), range(4)))
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
    t = time.perf_counter()
    rows = 0
    for i in range(uploads):
        st, js = hub.upload(folded, up, f"ingest{i}", format="folded", **{"from": str(BASE_S + i)})
        assert st == 200, (st, js)
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
        ins = ("INSERT INTO profile_samples_v1 (date, time_ns, project, service, sample_type, unit, stack_id,"
               " value, host, thread, container, span_id, trace_id, labels.key, labels.value, upload_id,"
               " retention_days) FORMAT RowBinary")
        t = time.perf_counter()
        subprocess.run(["curl", "-sS", "-o", "/dev/null", "--data-binary", "@" + f.name,
                        f"{ch.url}/?database={DB}&query=" + urllib.parse.quote(ins)], check=True)
        raw_s = time.perf_counter() - t
    raw_rate = rows / raw_s
    print(f"baseline clickhouse RowBinary insert (curl): {raw_rate:,.0f} rows/s")
    print(f"hub ingest (folded upload -> parse -> object store -> ClickHouse): {hub_rate:,.0f} rows/s"
          f"  ratio vs baseline {hub_rate/raw_rate:.2f}x  ({uploads} uploads of {len(folded)} bytes)")
finally:
    if hub:
        hub.cleanup()
    ch.cleanup()
PY
