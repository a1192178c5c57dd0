# shellcheck shell=bash disable=SC2034,SC2154  # sets PORT for, and uses $edge of, the sourcing script
# bench/lib/edge.sh — sourced (not run: bench/run runs bench/*.sh only) by
# the bench scripts that time one wt-edge on loopback (bench/edge_ingest.sh,
# bench/edge_query.sh): a temp dir removed on exit with the edge stopped,
# and the start of an edge with the bench project ("bench", upload token
# bench-up, read token bench-read) that waits for its /healthz.
# Needs $edge (the wt-edge binary). Uses and sets: tmp, pid, PORT.

# bench_edge_init NAME TMPNAME: messages name NAME; temp dir /tmp/TMPNAME.XXXXXX
bench_edge_init() {
	BENCH_EDGE_NAME=$1
	tmp=$(mktemp -d "/tmp/$2.XXXXXX")
	pid=
	trap bench_edge_cleanup EXIT
}

bench_edge_cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$tmp"; }

bench_free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# bench_edge_start SETTINGS TRIES: starts $edge with data in $tmp/data and
# SETTINGS (more "key = value;" of its edge group); waits up to TRIES × 50 ms
# for /healthz; sets pid and PORT. Exits the script if it does not start.
bench_edge_start() {
	local port; port=$(bench_free_port)
	cat >"$tmp/edge.cfg" <<CFG
edge = { id = "bench"; listen = "127.0.0.1:$port"; data_dir = "$tmp/data"; $1 };
projects = ( { name = "bench"; upload_tokens = [ "bench-up" ]; read_tokens = [ "bench-read" ]; } );
CFG
	WT_LOG_LEVEL=warn "$edge" --config "$tmp/edge.cfg" 2>>"$tmp/edge.log" &
	pid=$!
	for _ in $(seq "$2"); do
		curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && { PORT=$port; return 0; }
		sleep 0.05
	done
	echo "$BENCH_EDGE_NAME: wt-edge did not start"; cat "$tmp/edge.log"; exit 1
}

bench_edge_stop() { kill "$pid"; wait "$pid" || true; pid=; }
