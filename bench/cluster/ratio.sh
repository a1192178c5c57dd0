#!/usr/bin/env bash
# bench/cluster/ratio.sh — one ClickHouse server vs the 2-shard x 2-replica
# cluster (docs/operations.md "## Scale out") on this machine, same data, same hub code:
#   ingest : samples/s of folded uploads through a hub (4 client threads,
#            services spread over both shards)
#   query  : flame-graph latency through a hub for one service (one shard)
#            and the ClickHouse GROUP BY over all services (both shards)
# Prints each figure for both setups and the ratio cluster / single.
# Not part of `make bench` (starts ZooKeeper and five clickhouse-servers;
# about 2-3 minutes on 2 cores). BENCH_SAMPLES / BENCH_STACKS / BENCH_RUNS
# override the sizes. docs/operations.md "Scale out" discusses the numbers.
set -euo pipefail
cd "$(dirname "$0")/../.."
export WT_ROOT=$PWD BUILD=${BUILD:-build}
export WT_BIN=${WT_BIN:-$PWD/$BUILD/bin}
exec python3 - "$@" <<'PY'
import concurrent.futures, os, statistics, sys, time, urllib.parse, urllib.request
sys.path.insert(0, os.path.join(os.environ["WT_ROOT"], "tests", "integration"))
from harness.clickhouse import ClickHouse
from harness.cluster import Cluster
from harness.hub import Hub

N = int(os.environ.get("BENCH_SAMPLES", 4_000_000))
S = int(os.environ.get("BENCH_STACKS", 50_000))
RUNS = int(os.environ.get("BENCH_RUNS", 7))
SERVICES = 8
BASE_S = 1_700_000_000
DB = "watchtower"
DIST = {"insert_distributed_sync": 1, "load_balancing": "in_order", "prefer_localhost_replica": 0}

def q(ch, sql, **settings):
    url = ch.url + "/?" + urllib.parse.urlencode(dict(database=DB, **settings))
    with urllib.request.urlopen(urllib.request.Request(url, data=sql.encode()), timeout=600) as r:
        return r.read()

def load(ch, settings):
    q(ch, f"""INSERT INTO profile_stacks_v1 (project, stack_id, frames)
        SELECT 'bench', number, arrayMap(i -> concat('fn', toString(i), '_',
            toString(number % toUInt64(pow(3, i + 1)))), range(11)) FROM numbers({S})""", **settings)
    q(ch, f"""INSERT INTO profile_samples_v1 (date, time_ns, project, service, sample_type, unit,
            stack_id, value, host, thread, upload_id, retention_days)
        SELECT toDate(toDateTime({BASE_S} + intDiv(number, 1000))), ({BASE_S} * 1000000000) + number * 1000000,
            'bench', concat('svc', toString(number % {SERVICES})), 'cpu', 'nanoseconds',
            intHash64(number) % {S}, 10000000, 'host1', toString(number % 16), 'bench', 30
        FROM numbers({N})""", **settings)

def folded_body():
    lines = []
    for s in range(20_000):
        lines.append(";".join(f"ing{i}_{s % 3 ** (i + 1)}" for i in range(11)) + f" {1 + s % 7}")
    return ("\n".join(lines) + "\n").encode()

def measure(name, ch, hub, settings):
    hub.create_project("bench")
    rd, up = hub.create_token("bench", "read"), hub.create_token("bench", "upload")
    t = time.perf_counter(); load(ch, settings); gen = time.perf_counter() - t
    frm, until = BASE_S, BASE_S + N // 1000 + 1
    def flame():
        st, js = hub.query("bench", "flamegraph", rd, service="svc3", type="cpu",
                           **{"from": str(frm), "until": str(until)})
        assert st == 200 and js["total"] == N // SERVICES * 10000000, (st, str(js)[:200])
    all_sql = (f"SELECT stack_id, sum(value) FROM profile_samples_v1 WHERE project = 'bench' AND sample_type = 'cpu'"
               f" GROUP BY stack_id FORMAT RowBinary")
    flame(); q(ch, all_sql, **settings)
    fl, al = [], []
    for _ in range(RUNS):
        t = time.perf_counter(); flame(); fl.append(time.perf_counter() - t)
        t = time.perf_counter(); q(ch, all_sql, **settings); al.append(time.perf_counter() - t)
    body = folded_body()
    uploads = 16
    def one(i):
        st, js = hub.upload(body, up, f"ing{i % SERVICES}", format="folded", **{"from": str(BASE_S + i)})
        assert st == 200, (st, js)
        return js["rows"]
    t = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        rows = sum(ex.map(one, range(uploads)))
    ing = rows / (time.perf_counter() - t)
    r = {"flame": statistics.median(fl), "all": statistics.median(al), "ingest": ing, "gen": gen}
    print(f"{name:8s}: generate {N} samples {gen:.1f} s; flamegraph (1 service) median {r['flame']*1000:.0f} ms;"
          f" GROUP BY all services median {r['all']*1000:.0f} ms; hub ingest {ing:,.0f} samples/s", flush=True)
    return r

res = {}
ch = ClickHouse().start()
hub = None
try:
    hub = Hub(None, ch, workers=4).start()
    res["single"] = measure("single", ch, hub, {})
finally:
    if hub:
        hub.cleanup()
    ch.cleanup()
cl = Cluster()
hub = None
try:
    cl.start()
    hub = Hub(None, cl.servers[0], workers=4, clickhouse_extra='cluster = "wt";').start(timeout=120)
    res["cluster"] = measure("2x2", cl.servers[0], hub, DIST)
finally:
    if hub:
        hub.cleanup()
    for s in cl.servers:
        s.cleanup()
    cl.zk.cleanup()
s, c = res["single"], res["cluster"]
print(f"ratio cluster/single: flamegraph latency {c['flame']/s['flame']:.2f}x, all-services GROUP BY"
      f" {c['all']/s['all']:.2f}x, hub ingest samples/s {c['ingest']/s['ingest']:.2f}x,"
      f" bulk INSERT SELECT time {c['gen']/s['gen']:.2f}x")
PY
