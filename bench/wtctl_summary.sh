#!/usr/bin/env bash
# bench/wtctl_summary.sh — `wtctl profile summary` against `go tool pprof
# -top` on the same real Go CPU profile of >= 20,000 samples
# (google/pprof's large.cpu: Go runtime/pprof, 4 min, 24,029 samples in
# 20,430 records as `go tool pprof -raw` counts them), one run each after
# one warm-up, with wall-time and peak-RSS ratios (/usr/bin/time -v).
# Both print every function (-nodecount huge / --top 0) so they do the
# same work; the pprof binary is also timed directly (without the `go`
# command's start-up) so the ratio does not flatter us.
# The perf script → folded half of the issue's benchmark (convert --to
# folded on >= 40 MB vs `perf script report stackcollapse` and the awk
# collapse) is bench/bench_perf_collapse.sh, which bench/run also runs.
# Prints figures and ratios; never fails on time.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
corpus=$PWD/tests/corpus
in=${BENCH_PPROF:-$corpus/pprof/google-pprof__large.cpu.pb.gz}
wtctl=$PWD/$BUILD/bin/wtctl
out=$BUILD/bench/wtctl-summary
mkdir -p "$out"

[[ -x $wtctl ]] || { echo "wtctl_summary: $wtctl not built"; exit 1; }
[[ -s $in ]] || { echo "wtctl_summary: $in missing"; exit 1; }
command -v go >/dev/null || { echo "wtctl_summary: go not installed; skipped"; exit 0; }
pprof_bin=$(go env GOTOOLDIR)/pprof
export PPROF_BINARY_PATH=/nonexistent HOME=${TMPDIR:-/tmp}

# run NAME CMD... → wall seconds in $secs, user+sys in $cpu, peak RSS KiB in
# $rss (from time -v). Both times are reported: on a busy shared machine CPU
# time is the steadier one.
run() {
	local name=$1; shift
	"$@" >/dev/null 2>&1 # warm-up: page cache, go command caches
	if ! /usr/bin/time -v -o "$out/time.$name" "$@" >"$out/out.$name" 2>"$out/err.$name"; then
		echo "wtctl_summary: $name failed:"; tail -3 "$out/err.$name"; return 1
	fi
	secs=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, t, ":"); s = 0
		for (i = 1; i <= n; i++) s = s * 60 + t[i]; print (s < 0.01 ? 0.01 : s) }' "$out/time.$name")
	cpu=$(awk -F': ' '/User time|System time/ { c += $2 } END { print (c < 0.01 ? 0.01 : c) }' \
		"$out/time.$name")
	rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$out/time.$name")
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a / b }'; }

samples=$("$wtctl" --json profile summary "$in" --top 1 |
	python3 -c 'import json, sys; print(json.load(sys.stdin)["samples"])')
printf 'input: %s (%d bytes, %s samples)\n' "$in" "$(stat -c %s "$in")" "$samples"

run wtctl "$wtctl" profile summary "$in" --top 0 || exit 1
w_s=$secs w_c=$cpu w_rss=$rss
printf '  wtctl profile summary --top 0     : wall %6.2f s | cpu %6.2f s | peak RSS %6.1f MB\n' "$w_s" \
	"$w_c" "$(awk -v k="$w_rss" 'BEGIN { print k / 1024 }')"
for v in "go tool pprof:go tool pprof" "pprof binary:$pprof_bin"; do
	label=${v%%:*} cmd=${v#*:}
	# shellcheck disable=SC2086 # cmd is "go tool pprof" or one path
	run "${label// /_}" $cmd -top -nodecount=1000000 -nodefraction=0 -edgefraction=0 "$in" || continue
	printf '  %-33s : wall %6.2f s | cpu %6.2f s | peak RSS %6.1f MB\n' \
		"$label -top" "$secs" "$cpu" "$(awk -v k="$rss" 'BEGIN { print k / 1024 }')"
	printf '  %-33s : wall %sx, cpu %sx faster; peak RSS %sx smaller\n' "ratio wtctl vs $label" \
		"$(ratio "$secs" "$w_s")" "$(ratio "$cpu" "$w_c")" "$(ratio "$rss" "$w_rss")"
done
# sanity, not timing: both report the same total
w_total=$("$wtctl" --json profile summary "$in" --type cpu --top 1 |
	python3 -c 'import json, sys; print(json.load(sys.stdin)["total"])')
p_total=$(go tool pprof -top -unit=ns -nodecount=1 "$in" 2>/dev/null |
	sed -n 's/.* of \([0-9]*\)ns total.*/\1/p')
printf '  cpu total: wtctl %s ns, go tool pprof %s ns\n' "$w_total" "$p_total"
exit 0
