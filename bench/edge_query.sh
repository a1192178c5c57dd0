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

tmp=$(mktemp -d /tmp/wt-edge-query.XXXXXX)
pid=
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

start_edge() { # query_aggregates(true|false)
	local port; port=$(free_port)
	cat >"$tmp/edge.cfg" <<CFG
edge = { id = "bench"; listen = "127.0.0.1:$port"; data_dir = "$tmp/data"; sync = false; workers = 2;
	 query_aggregates = $1; };
projects = ( { name = "bench"; upload_tokens = [ "bench-up" ]; read_tokens = [ "bench-read" ]; } );
CFG
	WT_LOG_LEVEL=warn "$edge" --config "$tmp/edge.cfg" 2>>"$tmp/edge.log" &
	pid=$!
	for _ in $(seq 200); do
		curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && { PORT=$port; return 0; }
		sleep 0.05
	done
	echo "edge_query: wt-edge did not start"; cat "$tmp/edge.log"; exit 1
}
stop_edge() { kill "$pid"; wait "$pid" || true; pid=; }

export BENCH_OUT=$tmp/medians
export BENCH_T0=$(( $(date +%s) / 60 * 60 - (${BENCH_MINUTES:-60} + 1) * 60 ))
echo "edge_query: flame graph over the whole buffer, ${BENCH_QUERIES:-15} queries per path"
start_edge true
python3 bench/edge_query.py fill "$PORT"
python3 bench/edge_query.py query "$PORT" "stack aggregates (default)"
stop_edge
start_edge false
python3 bench/edge_query.py query "$PORT" "per-minute rows (query_aggregates=false)"
stop_edge
awk '{ m[NR] = $NF } END { if (m[1] > 0) printf "  ratio aggregates/rows = %.3f\n", m[1] / m[2] }' "$BENCH_OUT"
