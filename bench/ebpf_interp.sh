#!/usr/bin/env bash
# bench/ebpf_interp.sh — cost of naming interpreted and JIT-compiled
# functions in the edge's eBPF profiles (part of `make bench`): runs
# bench/ebpf_overhead.sh once with a Python workload (Debian's python3,
# CPython frames walked in BPF, against ebpf.python = false) and a Node.js
# workload (node --perf-basic-prof, the perf map read by the edge, against
# node without the flag), at 19 and 99 Hz, with the interpreter's names and
# without: CPU of wt-edge + its BPF programs, BPF ns per sample, the
# workload's own slowdown, and their ratios. The table layout is
# bench/ebpf_overhead.sh's; results and how to read them: docs/operations.md
# "Overhead", "Interpreter names". Environment: EBPF_BENCH_SECONDS (15),
# EBPF_BENCH_FREQS ("19 99"); a runtime that is not installed is left out.
set -uo pipefail
cd "$(dirname "$0")/.."
wl=""
[[ -x /usr/bin/python3 ]] && wl+="python "
command -v node >/dev/null && wl+="node "
[[ -n $wl ]] || { echo "ebpf_interp: skipped: neither /usr/bin/python3 nor node installed"; exit 0; }
export EBPF_BENCH_WORKLOAD=$wl EBPF_BENCH_MODES="hash hash:fp:nointerp" EBPF_BENCH_SCENARIOS=quiet
export EBPF_BENCH_FREQS=${EBPF_BENCH_FREQS:-19 99} EBPF_BENCH_SECONDS=${EBPF_BENCH_SECONDS:-15}
exec bash bench/ebpf_overhead.sh "$@"
