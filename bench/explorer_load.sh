#!/usr/bin/env bash
# bench/explorer_load.sh — how long the explorer takes to show a flame
# graph of one busy hour, as its user sees it: the "loaded in N ms" of its
# status line (hub/ui/app.js loadProfile: the hub request plus the page's
# own work, before the first draw) in headless Debian chromium.
# Starts a local cluster as `make run` does (appliance/up; eBPF sampler off)
# in a temporary directory on a free port base and stops it at the end,
# also on failure. Puts EXPLORER_SAMPLES samples (default BENCH_SAMPLES,
# else 10 M, like bench/hub_query.sh) over EXPLORER_STACKS stacks (default
# BENCH_STACKS, else 100 k) of the last whole hour that ended more than
# 10 minutes ago into the cluster's ClickHouse, generated as hub_query.sh
# does, then opens that hour in the explorer: the first load after the hub
# started, 7 loads again (answered by the hub's view cache), and 5 loads
# of the same data with the range starting 1..5 minutes earlier (new view
# cache keys: the page cannot pass cache=0). Beside them, the hub's own
# time for the page's flame graph request (curl, cache=0 and cached).
# EXPLORER_CLUSTER=1: the --cluster layout (rows through the Distributed
# tables). EXPLORER_SAMPLES=0 skips the benchmark.
set -euo pipefail
cd "$(dirname "$0")/.."
export WT_ROOT=$PWD BUILD=${BUILD:-build}
N=${EXPLORER_SAMPLES:-${BENCH_SAMPLES:-10000000}}
S=${EXPLORER_STACKS:-${BENCH_STACKS:-100000}}
[[ $N =~ ^[0-9]+$ && $S =~ ^[1-9][0-9]*$ ]] || { echo "explorer_load: EXPLORER_SAMPLES/STACKS: expected numbers"; exit 2; }
((N > 0)) || { echo "explorer_load: skipped (EXPLORER_SAMPLES=0)"; exit 0; }
CHROMIUM=/usr/bin/chromium
SERVICE=bench
[[ -x $CHROMIUM ]] || { echo "explorer_load: $CHROMIUM is missing (appliance/install-deps installs it)"; exit 1; }
py() { python3 -c "import sys; sys.path.insert(0, 'tests/integration'); $1"; }
mods=$(py 'from test_browser import playwright_dir
m, why = playwright_dir()
print(m) if m else sys.exit("explorer_load: cannot install npm playwright-core: " + why)')

tmp=$(mktemp -d /tmp/wt-explorer.XXXXXX)
node_pid=
cleanup() {
	set +e
	if [[ -n $node_pid ]]; then kill "$node_pid" 2>/dev/null; fi
	appliance/down --dir "$tmp/run" >/dev/null || echo "explorer_load: appliance/down failed; see $tmp"
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# ---- the cluster ----------------------------------------------------------------
up_args=(--dir "$tmp/run" --port-base "$(py 'from test_appliance import free_port_base; print(free_port_base(120))')")
[[ ${EXPLORER_CLUSTER:-0} == 1 ]] && up_args+=(--cluster)
WT_EBPF=0 appliance/up "${up_args[@]}" >"$tmp/up.log" 2>&1 || { cat "$tmp/up.log"; exit 1; }
set -a # the URLs and tokens, also for node
# shellcheck source=/dev/null
. "$tmp/run/env"
set +a
cfg() { "$WT_ROOT/$BUILD/bin/wtctl" config get "$tmp/run/${2:-hub}/hub.cfg" "$1"; } # KEY [hub|hub2]
CH=$(cfg clickhouse.url) DB=$(cfg clickhouse.database) CLUSTER=$(cfg clickhouse.cluster)
chq() { curl -sS --fail-with-body --data-binary "$1" "$CH/?database=$DB${2:-}"; }

# ---- data: as bench/hub_query.sh generates it ----------------------------------------
# stack s has 11 frames fn<i>_<s mod 3^(i+1)> (shared prefixes like a call
# tree); N samples of 10 ms evenly over the hour, 16 threads of one host.
# In cluster mode profile_*_v1 are the Distributed tables the hub writes
# through (synchronous, so that OPTIMIZE sees every row on its shard).
H=$((($(date +%s) - 600) / 3600 * 3600 - 3600))
sync=''
[[ -n $CLUSTER ]] && sync='&insert_distributed_sync=1'
since() { awk -v a="$1" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'; }
fmt() { sed ':a;s/\B[0-9]\{3\}\>/,&/;ta' <<<"$1"; }
t=$(date +%s%N)
chq "INSERT INTO profile_stacks_v1 (project, stack_id, frames)
	SELECT '$WT_PROJECT', number, arrayMap(i -> concat('fn', toString(i), '_',
		toString(number % toUInt64(pow(3, i + 1)))), range(11)) FROM numbers($S)" "$sync"
chq "INSERT INTO profile_samples_v1 (date, time_ns, project, service, sample_type, unit,
		stack_id, value, host, thread, upload_id, retention_days)
	SELECT toDate(toDateTime(intDiv(t, 1000000000))), t,
		'$WT_PROJECT', '$SERVICE', 'cpu', 'nanoseconds', intHash64(number) % $S, 10000000,
		'host1', toString(number % 16), 'bench', 30
	FROM (SELECT number, toUInt64($H * 1000000000 + intDiv(number * 3600000, $N) * 1000000) AS t
		FROM numbers($N))" "$sync"
echo "generated $(fmt "$N") samples / $(fmt "$S") stacks of $(date -u -d "@$H" '+%F %H:00 UTC') in ClickHouse" \
	"in $(since "$t") s (raw rows + aggregates by the materialized views)"
t=$(date +%s%N)
# steady state after background merges, as hub_query.sh does; cluster
# mode: the shard-local tables on the ClickHouse server of each hub (one per
# shard) where that shard holds rows (18.16 fails OPTIMIZE of an empty
# replicated table: "Unknown log entry type: 0")
for h in hub $([[ -n $CLUSTER ]] && echo hub2); do
	for tbl in profile_samples_v1 stack_agg_v1 label_sets_v1 series_agg_v1; do
		if [[ -z $CLUSTER ]]; then
			chq "OPTIMIZE TABLE $tbl FINAL"
		elif (($(CH=$(cfg clickhouse.url "$h") chq "SELECT count() FROM system.parts WHERE active
				AND database = '$DB' AND table = '${tbl}_local'") > 0)); then
			CH=$(cfg clickhouse.url "$h") chq "OPTIMIZE TABLE ${tbl}_local FINAL"
		fi
	done
done
echo "OPTIMIZE FINAL in $(since "$t") s"

# ---- the explorer ---------------------------------------------------------------------
hits() { curl -sS -f "$WT_HUB_URL/metrics" | awk '$1 == "wt_hub_view_cache_hits_total" { print $2 }'; }
hits0=$(hits)
loads="[{\"kind\":\"first\",\"from\":$H,\"until\":$((H + 3600))}"
for _ in 1 2 3 4 5 6 7; do loads+=",{\"kind\":\"cached\",\"from\":$H,\"until\":$((H + 3600))}"; done
for k in 1 2 3 4 5; do loads+=",{\"kind\":\"shifted\",\"from\":$((H - 60 * k)),\"until\":$((H + 3600))}"; done
NODE_PATH=$mods WT_PLAYWRIGHT=$mods/playwright-core/index.js WT_CHROMIUM=$CHROMIUM WT_SERVICE=$SERVICE \
	WT_LOADS="$loads]" node bench/explorer_load.mjs >"$tmp/loads" 2>&1 &
node_pid=$!
wait "$node_pid" || { cat "$tmp/loads"; exit 1; }
node_pid=
hits1=$(hits)
want=$((N * 10000000))
if awk -v w="$want" '$1 == "LOAD" && $6 != w { bad = 1 } END { exit !bad }' "$tmp/loads"; then
	echo "explorer_load: the page's flame graph total is not $want:"; cat "$tmp/loads"; exit 1
fi

# ---- the hub alone: the page's flame graph request (same parameters and order; max_nodes is
# app.js MAX_NODES)
url="$WT_HUB_URL/v1/projects/$WT_PROJECT/profiles/flamegraph?service=$SERVICE&type=cpu&from=$H&until=$((H + 3600))&max_nodes=250000"
hub_ms() { # cache runs
	local i
	for ((i = 0; i < $2; i++)); do
		curl -sS -f -o "$tmp/fg.json" -w '%{time_total}\n' -H "Authorization: Bearer $WT_READ_TOKEN" "$url&cache=$1" |
			awk '{ printf "%d\n", $1 * 1000 + 0.5 }'
	done
}
hub_ms 0 5 >"$tmp/hub0"
bytes=$(stat -c %s "$tmp/fg.json")
grep -q '"path":"aggregates"' "$tmp/fg.json" || echo "explorer_load: warning: the hub did not read the aggregates"
grep -q '"truncated":true' "$tmp/fg.json" && echo "explorer_load: note: the flame graph is truncated (the page also loads the table)"
hub_ms 1 1 >/dev/null # fills the view cache (the page's entry may have been evicted since)
hub_ms 1 7 >"$tmp/hub1"
url=${url/max_nodes=250000/max_nodes=8192} # app.js FIRST_NODES
hub_ms 0 5 >"$tmp/hubf"

stats() { sort -n | awk '{ a[NR] = $1 } END { printf "median %d ms, max %d ms", NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2, a[NR] }'; }
col() { awk -v k="$1" -v c="$2" '$1 == "LOAD" && $2 ~ ("^(" k ")$") { print $c }' "$tmp/loads"; }
first=$(col first 3)
echo "explorer loaded in ($(fmt "$N") samples, 1 h$([[ -n $CLUSTER ]] && echo ", cluster $CLUSTER")):" \
	"uncached $(col 'first|shifted' 3 | stats) (n=6: the first load after the hub started $first ms, then the range" \
	"starting 1..5 min earlier); cached $(col cached 3 | stats) (n=7; the hub's view cache answered $((hits1 - hits0)) requests)"
echo "  all nodes drawn (the page's whole tree after its first paint of app.js FIRST_NODES): uncached" \
	"$(col 'first|shifted' 7 | stats), cached $(col cached 7 | stats)"
echo "  the first flame graph request until its first byte: uncached $(col 'first|shifted' 5 | stats), cached" \
	"$(col cached 5 | stats); the whole tree's request until its $(fmt "$bytes")-byte JSON was parsed: uncached" \
	"$(col 'first|shifted' 4 | stats), cached $(col cached 4 | stats)"
req() { awk -v p="$1" '$1 == "REQ" && $3 == p { print $4 }' "$tmp/loads" | stats; }
echo "  the page's other requests meanwhile (all 13 loads): /services $(req /services), /labels $(req /labels)," \
	"/profiles/series $(req /profiles/series)"
echo "  hub flamegraph request alone (curl, max_nodes 250000): uncached (cache=0) $(stats <"$tmp/hub0") (n=5); cached" \
	"$(stats <"$tmp/hub1") (n=7); max_nodes 8192 uncached $(stats <"$tmp/hubf") (n=5)"
echo "  load average: $(cut -d' ' -f1-3 /proc/loadavg)"
