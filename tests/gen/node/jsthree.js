// jsthree.js — Node.js workload with known truth for the eBPF sampler's
// JIT perf-map names (tests/integration/test_ebpf_jit.py). Run with
// --perf-basic-prof (V8 writes /tmp/perf-PID.map) and --no-turbo-inlining
// (each function keeps its own compiled code).
//
// `node jsthree.js cpu SECONDS`: hotAlpha, hotBeta and hotGamma spin for
//   50 / 30 / 20 % of the CPU in short interleaved slices, called from
//   runCpu; each slice is timed with the process's CPU time
//   (process.cpuUsage: a loaded machine would skew wall time; node's
//   helper threads add to every slice alike). Prints {"pid", "cpu_ns":
//   {fn: ns}}.
// `node jsthree.js late SECONDS`: hotAlpha alone for SECONDS, then a
//   function made only then (new Function: lateDelta, unknown to V8 until
//   that moment, so its code is appended to the perf map late) alone for
//   SECONDS, each phase's CPU time measured with process.cpuUsage.
//   Prints {"pid", "cpu_ns": {"hotAlpha": ns, "lateDelta": ns},
//   "late_at_ms": ms since start when lateDelta was made}.
// `node jsthree.js rate SECONDS`: hotAlpha, hotBeta and hotGamma in turn
//   (5:3:2 iterations) for SECONDS of wall time; prints {"pid",
//   "iters_per_s", "iters_per_cpu_s"} (per second of wall time and of the
//   process's CPU time; bench/ebpf_overhead.sh's Node.js workload).
"use strict";

const t00 = process.hrtime.bigint();

function spin(n, seed) {
	let x = seed;
	for (let i = 0; i < n; i++) x = (x * 31 + (i ^ x)) % 1000003;
	return x;
}

// three copies of the loop, not calls of spin: each must be hot itself
function hotAlpha(n) {
	let x = 1;
	for (let i = 0; i < n; i++) x = (x * 31 + (i ^ x)) % 1000003;
	return x;
}

function hotBeta(n) {
	let x = 3;
	for (let i = 0; i < n; i++) x = (x * 31 + (i ^ x)) % 1000003;
	return x;
}

function hotGamma(n) {
	let x = 5;
	for (let i = 0; i < n; i++) x = (x * 31 + (i ^ x)) % 1000003;
	return x;
}

function cpuNs() {
	const u = process.cpuUsage();
	return BigInt(u.user + u.system) * 1000n;
}

function runCpu(seconds) {
	const shares = [[hotAlpha, 0.5], [hotBeta, 0.3], [hotGamma, 0.2]];
	const ns = { hotAlpha: 0n, hotBeta: 0n, hotGamma: 0n };
	// calibrate: iterations per ms (after a warm-up that compiles spin)
	spin(2e6, 1);
	let t0 = process.hrtime.bigint();
	spin(2e6, 1);
	const perMs = 2e6 / Math.max(Number(process.hrtime.bigint() - t0) / 1e6, 0.01);
	const sliceMs = 10; // one round; each function gets its share of it
	const end = process.hrtime.bigint() + BigInt(Math.round(seconds * 1e9));
	let sink = 0;
	while (process.hrtime.bigint() < end) {
		for (const [f, share] of shares) {
			const n = Math.max(1, Math.round(perMs * sliceMs * share));
			const a = cpuNs();
			sink ^= f(n);
			ns[f.name] += cpuNs() - a;
		}
	}
	return { sink, ns };
}

// each phase timed with the process's CPU time (process.cpuUsage): the
// phases are seconds long, and a loaded machine would skew wall time
function runLate(seconds) {
	const ns = { hotAlpha: 0n, lateDelta: 0n };
	let sink = 0;
	let end = process.hrtime.bigint() + BigInt(Math.round(seconds * 1e9));
	let c0 = cpuNs();
	while (process.hrtime.bigint() < end)
		sink ^= hotAlpha(100000);
	ns.hotAlpha = cpuNs() - c0;
	const lateAt = Number(process.hrtime.bigint() - t00) / 1e6;
	// eslint-disable-next-line no-new-func
	const lateDelta = new Function("return function lateDelta(n) { let x = 7; " +
		"for (let i = 0; i < n; i++) x = (x * 17 + (i ^ x)) % 999983; return x; };")();
	end = process.hrtime.bigint() + BigInt(Math.round(seconds * 1e9));
	c0 = cpuNs();
	while (process.hrtime.bigint() < end)
		sink ^= lateDelta(100000);
	ns.lateDelta = cpuNs() - c0;
	return { sink, ns, lateAt };
}

function runRate(seconds) {
	const end = process.hrtime.bigint() + BigInt(Math.round(seconds * 1e9));
	let n = 0, sink = 0;
	const c0 = cpuNs();
	while (process.hrtime.bigint() < end) {
		sink ^= hotAlpha(50000) ^ hotBeta(30000) ^ hotGamma(20000);
		n += 100000;
	}
	return { sink, ips: n / seconds, ipc: n / Math.max(Number(cpuNs() - c0) / 1e9, 1e-9) };
}

const mode = process.argv[2] || "cpu";
const seconds = Number(process.argv[3] || 3);
const out = { pid: process.pid };
if (mode === "rate") {
	const r = runRate(seconds);
	out.sink = r.sink;
	out.iters_per_s = r.ips;
	out.iters_per_cpu_s = r.ipc;
} else if (mode === "late") {
	const r = runLate(seconds);
	out.sink = r.sink;
	out.late_at_ms = r.lateAt;
	out.cpu_ns = { hotAlpha: Number(r.ns.hotAlpha), lateDelta: Number(r.ns.lateDelta) };
} else {
	const r = runCpu(seconds);
	out.sink = r.sink;
	out.cpu_ns = { hotAlpha: Number(r.ns.hotAlpha), hotBeta: Number(r.ns.hotBeta), hotGamma: Number(r.ns.hotGamma) };
}
console.log(JSON.stringify(out));
