#!/usr/bin/env bash
# bench/edge_query.sh — the edge's local flame query over 1 M buffered
# samples of eBPF shape (bench/edge_query.py says what is uploaded). One
# wt-edge fills its buffer through the upload API and answers the query from
# its stack aggregates; then the same data dir is opened again with
# edge.query_aggregates = false (the per-minute rows path) and the same
# query is timed. Prints both medians and p99, and their ratio.
# Takes about a minute (most of it the 240 uploads). Needs $BUILD/bin/wt-edge.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
edge=$BUILD/bin/wt-edge
[[ -x $edge ]] || { echo "edge_query: build $edge first (make)"; exit 1; }

# shellcheck source=bench/lib/edge.sh
source bench/lib/edge.sh
bench_edge_init edge_query wt-edge-query

start_edge() { bench_edge_start "sync = false; workers = 2; query_aggregates = $1;" 200; } # query_aggregates(true|false)

export BENCH_OUT=$tmp/medians
export BENCH_T0=$(( $(date +%s) / 60 * 60 - (${BENCH_MINUTES:-60} + 1) * 60 ))
echo "edge_query: flame graph over the whole buffer, ${BENCH_QUERIES:-15} queries per path"
start_edge true
python3 bench/edge_query.py fill "$PORT"
python3 bench/edge_query.py query "$PORT" "stack aggregates (default)"
bench_edge_stop
start_edge false
python3 bench/edge_query.py query "$PORT" "per-minute rows (query_aggregates=false)"
bench_edge_stop
awk '{ m[NR] = $NF } END { if (m[1] > 0) printf "  ratio aggregates/rows = %.3f\n", m[1] / m[2] }' "$BENCH_OUT"
