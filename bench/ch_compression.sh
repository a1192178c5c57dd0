#!/usr/bin/env bash
# bench/ch_compression.sh — what the private ClickHouse's zstd compression
# of merged parts (appliance/clickhouse/start-private) costs a full scan:
# the same 4 M rows shaped like profile_samples_v1's scanned columns
# (time_ns, stack_id of 100 k, value, thread), merged into one part, on a
# server with LZ4 (WT_CH_COMPRESSION=lz4) and one with zstd; prints the
# compressed bytes and the median of BENCH_RUNS (7) raw GROUP BY stack_id
# on each, the two alternating. Starts both servers and stops them.
set -euo pipefail
cd "$(dirname "$0")/.."
export WT_ROOT=$PWD
exec python3 - "$@" <<'PY'
import os, statistics, sys, time
sys.path.insert(0, os.path.join(os.environ["WT_ROOT"], "tests", "integration"))
from harness.clickhouse import ClickHouse

N = int(os.environ.get("BENCH_SAMPLES", 4_000_000))
RUNS = int(os.environ.get("BENCH_RUNS", 7))
chs, res = {}, {}
try:
    for mode in ("lz4", "zstd"):
        os.environ["WT_CH_COMPRESSION"] = mode
        chs[mode] = ClickHouse().start()
    for mode, ch in chs.items():
        ch.query("CREATE TABLE t (time_ns UInt64, stack_id UInt64, value Int64, thread String)"
                 " ENGINE = MergeTree ORDER BY (time_ns, stack_id)")
        ch.query("INSERT INTO t SELECT 1699999200000000000 + intDiv(number * 3600000, {0}) * 1000000,"
                 " intHash64(number) % 100000, 10000000, toString(number % 16) FROM numbers({0})".format(N),
                 timeout=600)
        ch.query("OPTIMIZE TABLE t FINAL", timeout=600)
    for _ in range(RUNS):
        for mode, ch in chs.items():
            t = time.perf_counter()
            ch.query("SELECT stack_id, sum(value) FROM t GROUP BY stack_id FORMAT Null", timeout=600)
            res.setdefault(mode, []).append(time.perf_counter() - t)
    cb = {m: int(ch.query("SELECT sum(data_compressed_bytes) FROM system.parts WHERE active AND table = 't'"))
          for m, ch in chs.items()}
    med = {m: statistics.median(xs) for m, xs in res.items()}
    for m in chs:
        print(f"{m:4s}: {N:,} rows {cb[m]:>12,} compressed bytes  GROUP BY stack_id median {med[m] * 1000:6.0f} ms")
    print(f"zstd / lz4: bytes {cb['zstd'] / cb['lz4']:.2f}x, scan time {med['zstd'] / med['lz4']:.2f}x")
finally:
    for ch in chs.values():
        ch.stop()
        ch.cleanup()
PY
