// jitwork.js — a Node.js workload with two hot JavaScript functions whose
// CPU split it measures itself, for the eBPF sampler's JIT perf-map test
// (tests/integration/test_ebpf.py). Run with --perf-basic-prof (and
// --no-turbo-inlining, so each function keeps its own compiled code).
// Usage: node --perf-basic-prof jitwork.js SECONDS; prints one JSON line
// {"pid":…, "cpu_ns":{"hotJitAlpha":…, "hotJitBeta":…}}.
"use strict";

function hotJitAlpha(n) {
	let x = 1;
	for (let i = 0; i < n; i++) x = (x * 31 + i) % 1000003;
	return x;
}

function hotJitBeta(n) {
	let x = 7;
	for (let i = 0; i < n; i++) x = (x * 17 + (i ^ x)) % 999983;
	return x;
}

const seconds = Number(process.argv[2] || 3);
const ns = { hotJitAlpha: 0n, hotJitBeta: 0n };
const end = process.hrtime.bigint() + BigInt(Math.round(seconds * 1e9));
let sink = 0;
while (process.hrtime.bigint() < end) {
	const t0 = process.hrtime.bigint();
	sink ^= hotJitAlpha(200000);
	const t1 = process.hrtime.bigint();
	sink ^= hotJitBeta(100000);
	const t2 = process.hrtime.bigint();
	ns.hotJitAlpha += t1 - t0;
	ns.hotJitBeta += t2 - t1;
}
console.log(JSON.stringify({ pid: process.pid, sink, cpu_ns: { hotJitAlpha: Number(ns.hotJitAlpha), hotJitBeta: Number(ns.hotJitBeta) } }));
