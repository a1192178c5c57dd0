#!/usr/bin/env bash
# bench/primitives_ratio.sh — "no parser or query got slower" as instruction
# counts: this tree's binaries against a base revision's, measured in the same
# run with callgrind (valgrind --tool=callgrind), printed as after/before
# ratios. Instruction counts do not depend on the machine's load, so the
# figures hold on the shared VM; nothing fails on a ratio (exit non-zero only
# when something could not run).
#
#   parsers: `wtctl profile summary FILE --format F`, counting only what runs
#            inside wt_format_decode (--toggle-collect): pprof (Go CPU
#            profile), folded, JFR (async-profiler and Pyroscope's kafka
#            recording), perf script;
#   query:   a hub (under callgrind) over a small dataset in a private
#            ClickHouse, counting only hub_handle_flamegraph: the same
#            flamegraph request three times (cold frames cache, then warm);
#            PRIM_ROUNDS (default 2) rounds of before and after, each
#            side's smallest count printed with its spread (the hub's count varies a
#            little from run to run).
#
# Environment: BASE_REV (default 0971717: before the JFR decoder, the hub's
# caches and its ClickHouse and S3 clients moved onto common/'s hash tables
# and request function), BASE_BUILD (a
# `make` build dir of that revision with bin/; default: built here in
# $BUILD/bench/base from a git worktree at $BUILD/bench/base-src),
# PRIM_QUERY=0 skips the hub query (it needs clickhouse-server).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-build}
BASE_REV=${BASE_REV:-0971717}
out=$ROOT/$BUILD/bench/primitives
corpus=$ROOT/tests/corpus
mkdir -p "$out"

if ! command -v valgrind >/dev/null; then
	echo "primitives_ratio: valgrind is not installed (apt-get install valgrind): not measured"
	exit 1
fi

if [[ -z ${BASE_BUILD:-} ]]; then
	src=$ROOT/$BUILD/bench/base-src
	BASE_BUILD=$ROOT/$BUILD/bench/base
	want=$(git rev-parse --verify -q "$BASE_REV^{commit}") || { echo "primitives_ratio: no revision $BASE_REV"; exit 1; }
	if [[ -d $src ]]; then
		git -C "$src" checkout -q --detach "$want" || { echo "primitives_ratio: checkout in $src failed"; exit 1; }
	else # -f: a worktree of this path whose folder went with `make clean`
		git worktree add -f --detach "$src" "$want" >/dev/null || { echo "primitives_ratio: worktree failed"; exit 1; }
	fi
	echo "primitives_ratio: building $BASE_REV in $BASE_BUILD"
	nice make -C "$src" -j2 BUILD="$BASE_BUILD" all >"$out/base-build.log" 2>&1 ||
		{ echo "primitives_ratio: base build failed ($out/base-build.log)"; exit 1; }
fi
AFTER_BIN=$ROOT/$BUILD/bin
BEFORE_BIN=$BASE_BUILD/bin
[[ -x $BEFORE_BIN/wtctl && -x $AFTER_BIN/wtctl ]] || { echo "primitives_ratio: wtctl missing"; exit 1; }

# Ir of the last callgrind output file $1
ir() { awk '/^(totals|summary):/ { v = $2 } END { print v + 0 }' "$1"; }

status=0
printf '%-34s %16s %16s %8s\n' "instructions (callgrind Ir)" before after ratio
decode() { # name, format, file
	local name=$1 fmt=$2 file=$3 b a
	for side in before after; do
		local bin=$BEFORE_BIN
		[[ $side == after ]] && bin=$AFTER_BIN
		valgrind --tool=callgrind --toggle-collect=wt_format_decode \
			--callgrind-out-file="$out/$name.$side.cg" \
			"$bin/wtctl" profile summary "$file" --format "$fmt" >"$out/$name.$side.txt" 2>"$out/$name.$side.log" ||
			{ echo "primitives_ratio: $name ($side) failed: $out/$name.$side.log"; status=1; return; }
	done
	b=$(ir "$out/$name.before.cg")
	a=$(ir "$out/$name.after.cg")
	if ! cmp -s "$out/$name.before.txt" "$out/$name.after.txt"; then
		echo "primitives_ratio: $name: the summaries differ ($out/$name.*.txt)"
		status=1
	fi
	awk -v n="decode $name" -v b="$b" -v a="$a" 'BEGIN { printf "%-34s %16d %16d %8.4f\n", n, b, a, b ? a / b : 0 }'
}
decode pprof pprof "$corpus/pprof/google-pprof__large.cpu.pb.gz"
decode folded folded "$corpus/folded/cargo-flamegraph__rust-rayon-stacks.folded"
decode jfr-async jfr "$corpus/jfr/jfr-parser__async-profiler.jfr"
decode jfr-kafka jfr "$corpus/jfr/pyroscope__kafka-cpu-lock-alloc.jfr.gz"
decode perf perf "$corpus/perf-script/flamegraph__example-perf-stacks.txt.gz"

if [[ ${PRIM_QUERY:-1} != 0 ]]; then
	BEFORE_BIN=$BEFORE_BIN AFTER_BIN=$AFTER_BIN OUT=$out WT_ROOT=$ROOT python3 - <<'PY' || status=1
import os, random, subprocess, sys, time
sys.path.insert(0, os.path.join(os.environ["WT_ROOT"], "tests", "integration"))
from harness.clickhouse import ClickHouse
from harness.hub import Hub

out = os.environ["OUT"]
T0 = 1_700_000_000
ch = ClickHouse().start()
ROUNDS = int(os.environ.get("PRIM_ROUNDS", 2))
res = {"before": [], "after": []}
try:
    for rnd, side in [(r, sd) for r in range(ROUNDS) for sd in ("before", "after")]:
        binary = os.path.join(os.environ["BEFORE_BIN" if side == "before" else "AFTER_BIN"], "wt-hub")
        hub = Hub(None, ch, database=f"wt_prim_{side}{rnd}", workers=2, ch_timeout_ms=60000)
        cg = os.path.join(out, f"query.{side}.{rnd}.cg")
        log = open(hub.log, "ab")
        hub.proc = subprocess.Popen(["valgrind", "--tool=callgrind", "--toggle-collect=hub_handle_flamegraph",
                                     f"--callgrind-out-file={cg}", binary, "--config", hub.cfg],
                                    stdout=log, stderr=log)
        log.close()
        try:
            deadline = time.time() + 600
            while True:
                try:
                    if hub.request("GET", "/healthz", timeout=30)[0] == 200:
                        break
                except OSError:
                    pass
                if hub.proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"{side} hub did not start: {hub.read_log()[-2000:]}")
                time.sleep(0.5)
            assert hub.create_project("prim")[0] == 201
            up = hub.create_token("prim", "upload")
            rd = hub.create_token("prim", "read")
            rng = random.Random(7)  # the same dataset on both sides
            for i in range(6):
                lines = "".join(f"main;svc{rng.randrange(4)};f{rng.randrange(300)};g{rng.randrange(2000)};"
                                f"h{j % 50} {1 + rng.randrange(9)}\n" for j in range(3000))
                st, js = hub.upload(lines.encode(), up, "a", format="folded", **{"from": str(T0 + 600 * i)})
                assert st == 200, js
            for _ in range(3):
                st, js = hub.query("prim", "flamegraph", rd, **{"from": str(T0 - 60), "until": str(T0 + 7200)})
                assert st == 200, js
            hub.proc.terminate()  # callgrind writes its file when the hub exits
            hub.proc.wait(timeout=300)
        finally:
            if hub.proc.poll() is None:
                hub.proc.kill()
                hub.proc.wait()
            hub.proc = None
            hub.cleanup()
        with open(cg) as f:
            res[side].append(max([int(l.split()[1]) for l in f if l.startswith(("totals:", "summary:"))] or [0]))
finally:
    ch.cleanup()
# the hub's count varies a little from run to run (thread timing, heap
# layout, never less work): each side's smallest, and its spread
b, a = min(res["before"]), min(res["after"])
print("%-34s %16d %16d %8.4f" % ("hub flamegraph x3 (handler)", b, a, a / b if b else 0))
for side in ("before", "after"):
    v = res[side]
    print("  %s rounds: %s (spread %.2f%%)" % (side, " ".join(str(x) for x in v),
                                                100 * (max(v) - min(v)) / min(v) if min(v) else 0))
PY
fi
echo "(ratio = after / before; < 1 fewer instructions. before: $BASE_REV, after: this tree; outputs in $out)"
exit $status
