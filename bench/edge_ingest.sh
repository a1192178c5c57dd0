#!/usr/bin/env bash
# bench/edge_ingest.sh — uploads/s and samples/s at wt-edge: 8 concurrent
# keep-alive clients on loopback POST a real folded file and a real Go CPU
# pprof for BENCH_SECONDS (default 15) each, with edge.sync = true and false;
# prints the ratio sync/nosync. Then compares rollup_mode merge vs rmw
# (RocksDB merge operator vs read-modify-write in the group commit) on a
# larger folded file with sync off.
# After each run the edge's peak (VmHWM) and current RSS are printed, and
# again 10 s after the last run on each edge (steady).
# Needs $BUILD/bin/wt-edge and $BUILD/bench/ingest_load (make bench builds both).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
secs=${BENCH_SECONDS:-15}
clients=${BENCH_CLIENTS:-8}
corpus=$PWD/tests/corpus
folded=$corpus/gen/c/folded-c-fp.stackcollapse-perf.txt
pprof=$corpus/gen/go/go-cpu.pb.gz
big_folded=$corpus/folded/flamegraph__perf-vertx-java-collapsed-all.txt
edge=$BUILD/bin/wt-edge
load=$BUILD/bench/ingest_load
[[ -x $edge && -x $load ]] || { echo "edge_ingest: build $edge and $load first (make bench)"; exit 1; }

# shellcheck source=bench/lib/edge.sh
source bench/lib/edge.sh
bench_edge_init edge_ingest wt-edge-bench

start_edge() { # sync(true|false) rollup_mode: on a fresh data dir
	rm -rf "$tmp/data"
	bench_edge_start "sync = $1; workers = 4; rollup_mode = \"$2\";" 100
}
# the edge's peak (VmHWM) and current RSS in MB, from /proc
rss_mb() { awk '/^VmHWM|^VmRSS/ { printf "%s %.0f MB  ", $1, $2 / 1024 }' "/proc/$pid/status"; }
stop_edge() { # RSS 10 s after the load (steady) before stopping
	sleep 10
	echo "  edge RSS after 10 s quiet: $(rss_mb)"
	bench_edge_stop
}

samples_of() { # file format → samples per upload as the edge counts them
	curl -s -XPOST -H 'Authorization: Bearer bench-up' --data-binary @"$1" \
		"http://127.0.0.1:$PORT/v1/profiles?format=$2&service=probe" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["samples"])'
}

run() { # label file format → sets RATE (uploads/s)
	local spu out n s
	spu=$(samples_of "$2" "$3")
	out=$("$load" 127.0.0.1 "$PORT" "/v1/profiles?format=$3&service=bench" bench-up "$2" "$clients" "$secs")
	n=$(sed -n 's/.*uploads=\([0-9]*\).*/\1/p' <<<"$out")
	s=$(sed -n 's/.*seconds=\([0-9.]*\).*/\1/p' <<<"$out")
	RATE=$(awk -v n="$n" -v s="$s" 'BEGIN{printf "%.1f", n/s}')
	printf '  %-28s %9s uploads/s %12s samples/s   (%s)\n' "$1" "$RATE" \
		"$(awk -v r="$RATE" -v k="$spu" 'BEGIN{printf "%.0f", r*k}')" "$out"
	echo "    edge RSS under load: $(rss_mb)"
}

echo "edge_ingest: $clients clients, ${secs}s per run, loopback"
declare -A R
for sync in true false; do
	start_edge $sync merge
	run "folded sync=$sync" "$folded" folded; R[folded_$sync]=$RATE
	run "pprof sync=$sync" "$pprof" pprof; R[pprof_$sync]=$RATE
	stop_edge
done
for f in folded pprof; do
	awk -v a="${R[${f}_true]}" -v b="${R[${f}_false]}" -v f=$f \
		'BEGIN{printf "  ratio %s sync/nosync = %.3f\n", f, (b > 0 ? a / b : 0)}'
done
for mode in merge rmw; do
	start_edge false $mode
	run "rollup_mode=$mode (java folded)" "$big_folded" folded; R[$mode]=$RATE
	stop_edge
done
awk -v a="${R[rmw]}" -v b="${R[merge]}" 'BEGIN{printf "  ratio rmw/merge = %.3f\n", (b > 0 ? a / b : 0)}'
