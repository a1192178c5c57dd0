#!/usr/bin/env bash
# bench/hub_symbols.sh — cost of query-time symbolization at the hub.
# Stores BENCH_STACKS stacks of 9 unsymbolized frames "wt-hub+0x<offset>"
# (offsets spread over wt-hub's own .text, ~29.5 k distinct addresses,
# shared call-tree prefixes) and BENCH_SAMPLES samples, uploads the
# unstripped wt-hub as the debug file, then times the flamegraph query:
#   baseline : symbolize=0 (frames as stored)
#   first    : the first query after the upload (every address looked up
#              with libdw: symbol table, DWARF lines, inline chains)
#   warm     : later queries (expansions from the cache)
# Prints medians and the ratio warm/baseline. Private ClickHouse + hub on
# free loopback ports, stopped at the end. About 1 minute on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
export WT_ROOT=$PWD BUILD=${BUILD:-build}
export WT_BIN=${WT_BIN:-$PWD/$BUILD/bin}
exec python3 - "$@" <<'PY'
import os, re, statistics, subprocess, sys, time
sys.path.insert(0, os.path.join(os.environ["WT_ROOT"], "tests", "integration"))
from harness.clickhouse import ClickHouse
from harness.hub import Hub

N = int(os.environ.get("BENCH_SAMPLES", 1_000_000))
S = int(os.environ.get("BENCH_STACKS", 20_000))
RUNS = int(os.environ.get("BENCH_RUNS", 7))
BASE_S = 1_700_000_000
DB = "watchtower"
binary = os.path.join(os.environ["WT_BIN"], "wt-hub")
bid = re.search(r"Build ID:\s*([0-9a-f]+)", subprocess.run(["readelf", "-n", binary], capture_output=True,
                text=True, check=True).stdout).group(1)
sec = subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True, check=True).stdout
t = re.search(r"\.text\s+PROGBITS\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)", sec)
text_off, text_size = int(t.group(1), 16), int(t.group(2), 16)

ch = ClickHouse().start()
hub = None
try:
    hub = Hub(None, ch, workers=2).start()
    assert hub.create_project("bench")[0] == 201
    rd = hub.create_token("bench", "read")
    up = hub.create_token("bench", "upload")
    ch.query(f"""INSERT INTO profile_stacks_v1 (project, stack_id, frames)
        SELECT 'bench', number, arrayMap(i -> concat('wt-hub+0x', lower(hex({text_off} +
            cityHash64(i, number % toUInt64(pow(3, i + 1))) % {text_size}))), range(9)) FROM numbers({S})""",
             database=DB)
    ch.query(f"""INSERT INTO profile_samples_v1 (date, time_ns, project, service, sample_type, unit,
            stack_id, value, host, thread, upload_id, retention_days)
        SELECT toDate(toDateTime({BASE_S} + intDiv(number, 1000))), ({BASE_S} * 1000000000) + number * 1000000,
            'bench', 'svc', 'cpu', 'nanoseconds', intHash64(number) % {S}, 10000000,
            'host1', '0', 'bench', 30
        FROM numbers({N})""", database=DB)
    frm, until = BASE_S, BASE_S + N // 1000 + 1

    def q(**extra):
        t = time.perf_counter()
        st, js = hub.query("bench", "flamegraph", rd, service="svc", type="cpu",
                           **{"from": str(frm), "until": str(until)}, **extra)
        assert st == 200, (st, str(js)[:300])
        return time.perf_counter() - t, js

    q(symbolize="0")
    base = statistics.median(q(symbolize="0")[0] for _ in range(RUNS))
    with open(binary, "rb") as f:
        data = f.read()
    st, js = hub.request("PUT", f"/v1/projects/bench/debuginfo/{bid}?name=wt-hub", data, token=up)
    assert st == 201, (st, js)
    first, js = q()
    assert "wt-hub+0x" not in js["root"]["children"][0]["name"], js["root"]["children"][0]["name"]
    warm = statistics.median(q()[0] for _ in range(RUNS))
    print(f"hub symbols: {S} stacks x 9 frames, {N} samples, debug file wt-hub {len(data)} bytes")
    print(f"flamegraph as stored (symbolize=0): median {base*1000:.0f} ms")
    print(f"flamegraph first query after upload: {first*1000:.0f} ms (ratio {first/base:.2f}x)")
    print(f"flamegraph symbolized, warm cache:  median {warm*1000:.0f} ms (ratio {warm/base:.2f}x)")
finally:
    if hub:
        hub.cleanup()
    ch.cleanup()
PY
