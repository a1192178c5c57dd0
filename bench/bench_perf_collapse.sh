#!/usr/bin/env bash
# bench/bench_perf_collapse.sh — perf script → folded conversion throughput
# (`wtctl profile convert FILE --to folded`, i.e. common/perf_script.c plus
# the folded encoder) on >= 40 MB of REAL `perf script` text, with ratios
# against baselines measured in the same run:
#   awk     tests/gen/stackcollapse.awk over the same 40 MB file;
#   perf    `perf script report stackcollapse` (perf's own Python collapse)
#           on the recording the text came from — it reads perf.data, so
#           its throughput is counted in bytes of the equivalent text.
# The text: cwork (built by tests/gen/gen-perf-folded) recorded with
# perf record -F 3999 -g for 5 s, printed by perf script, repeated until it
# is >= 40 MB (BENCH_PERF_MB).
# One run each (the parser-only figure, bench/bench_perf.c, is the best of
# 3 in-process runs); prints figures and ratios, never fails on time. Exit 0
# also when perf cannot record here (the bench is skipped with a notice).
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
root=$PWD
out=$BUILD/bench/perf-collapse
mb=${BENCH_PERF_MB:-40}
wtctl=$root/$BUILD/bin/wtctl
mkdir -p "$out"

[[ -x $wtctl ]] || { echo "bench_perf_collapse: $wtctl not built"; exit 1; }
if [[ ! -s $out/rec/perf-script.txt ]]; then
	tests/gen/gen-perf-folded "$out/rec" 3 >/dev/null
	rc=$?
	if [[ $rc -eq 77 ]]; then
		echo "bench_perf_collapse: perf cannot record here; skipped"
		exit 0
	fi
	[[ $rc -eq 0 ]] || { echo "bench_perf_collapse: gen-perf-folded failed ($rc)"; exit 1; }
	# a bigger recording of the cwork it built, so that perf's own collapse
	# has more than start-up time to measure
	perf record -q -F 3999 -g -o "$out/rec/perf-big.data" -- "$out/rec/cwork" 5 >/dev/null 2>&1 &&
		perf script -i "$out/rec/perf-big.data" >"$out/rec/perf-script-big.txt" 2>/dev/null ||
		{ echo "bench_perf_collapse: perf record -F 3999 failed"; exit 1; }
fi
one=$out/rec/perf-script-big.txt
big=$out/perf-script-${mb}mb.txt
one_bytes=$(stat -c %s "$one")
if [[ ! -s $big || $big -ot $one ]]; then
	reps=$(( (mb * 1000000 + one_bytes - 1) / one_bytes ))
	: >"$big.tmp"
	for ((i = 0; i < reps; i++)); do cat "$one"; echo; done >>"$big.tmp"
	mv "$big.tmp" "$big"
fi
big_bytes=$(stat -c %s "$big")
records=$(grep -c '^[^#[:space:]]' "$big")

# run NAME CMD... → sets secs (wall), cpu (user+sys) and rss_kb (/usr/bin/time).
# Both are reported: on a busy shared machine CPU time is the steadier one.
run() {
	local name=$1; shift
	local tf=$out/time.$name u s
	if ! /usr/bin/time -f '%e %U %S %M' -o "$tf" "$@" >"$out/out.$name" 2>"$out/err.$name"; then
		echo "bench_perf_collapse: $name failed:"; tail -5 "$out/err.$name"
		secs=; cpu=; rss_kb=; return 1
	fi
	read -r secs u s rss_kb <"$tf"
	# /usr/bin/time has 10 ms resolution; never divide by zero
	secs=$(awk -v s="$secs" 'BEGIN { print (s < 0.01 ? 0.01 : s) }')
	cpu=$(awk -v u="$u" -v s="$s" 'BEGIN { c = u + s; print (c < 0.01 ? 0.01 : c) }')
}
mbps() { awk -v b="$1" -v s="$2" 'BEGIN { printf "%.1f", b / 1e6 / s }'; }

printf 'input: %s (%.1f MB, %d records; one recording = %.2f MB)\n' "$big" \
	"$(awk -v b="$big_bytes" 'BEGIN { print b / 1e6 }')" "$records" \
	"$(awk -v b="$one_bytes" 'BEGIN { print b / 1e6 }')"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a / b }'; }

run wtctl "$wtctl" profile convert "$big" --to folded --type samples -o "$out/wtctl.folded" || exit 1
w_s=$secs w_c=$cpu w_rss=$rss_kb
printf '  wtctl profile convert --to folded : wall %6.2f s %7s MB/s | cpu %6.2f s %7s MB/s | peak RSS %d MB\n' \
	"$w_s" "$(mbps "$big_bytes" "$w_s")" "$w_c" "$(mbps "$big_bytes" "$w_c")" $((w_rss / 1024))

run awk awk -f tests/gen/stackcollapse.awk "$big"
a_cpu=$cpu
if [[ -n $secs ]]; then
	printf '  awk stackcollapse                 : wall %6.2f s %7s MB/s | cpu %6.2f s %7s MB/s | peak RSS %d MB\n' \
		"$secs" "$(mbps "$big_bytes" "$secs")" "$cpu" "$(mbps "$big_bytes" "$cpu")" $((rss_kb / 1024))
	printf '  ratio wtctl/awk throughput        : wall %sx, cpu %sx\n' "$(ratio "$secs" "$w_s")" "$(ratio "$cpu" "$w_c")"
fi

if perf script -l 2>/dev/null | grep -q '^ *stackcollapse'; then
	run perf perf script report stackcollapse -i "$out/rec/perf-big.data"
	if [[ -n $secs ]]; then
		# throughput in bytes of the equivalent perf script text of one recording
		p_ws=$(mbps "$one_bytes" "$secs") p_cs=$(mbps "$one_bytes" "$cpu")
		printf '  perf script report stackcollapse  : wall %6.2f s %7s MB/s | cpu %6.2f s %7s MB/s (one recording, %.2f MB of text)\n' \
			"$secs" "$p_ws" "$cpu" "$p_cs" "$(awk -v b="$one_bytes" 'BEGIN { print b / 1e6 }')"
		printf '  ratio wtctl/perf throughput       : wall %sx, cpu %sx\n' \
			"$(ratio "$(mbps "$big_bytes" "$w_s")" "$p_ws")" "$(ratio "$(mbps "$big_bytes" "$w_c")" "$p_cs")"
	fi
else
	echo "  perf script report stackcollapse  : not available here"
fi

# parser only (no file read, no process start): bench/bench_perf.c, best of 3
if [[ -x $BUILD/bench/bench_perf ]]; then
	read -r d_s d_tp e_s < <("$BUILD/bench/bench_perf" "$big" 3)
	if [[ -n ${d_s:-} ]]; then
		printf '  decoder only (bench_perf, best/3) : %6.3f s %7s MB/s (+ folded encode %.4f s)\n' "$d_s" "$d_tp" "$e_s"
		[[ -n ${a_cpu:-} ]] && printf '  ratio decoder/awk (cpu)           : %sx\n' \
			"$(ratio "$d_tp" "$(mbps "$big_bytes" "$a_cpu")")"
	fi
fi

# sanity, not timing: the same sample count in every output
w_n=$(awk '{ s += $NF } END { print s + 0 }' "$out/wtctl.folded")
printf '  samples: wtctl %s, awk %s, records %s\n' "$w_n" \
	"$(awk '{ s += $NF } END { print s + 0 }' "$out/out.awk" 2>/dev/null)" "$records"
exit 0
