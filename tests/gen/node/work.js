// work.js — a small CPU-bound Node.js workload for the .cpuprofile tests:
//   node --cpu-prof --cpu-prof-dir=DIR tests/gen/node/work.js [MS]
// Runs for MS milliseconds (default 400) across a few named functions and
// one anonymous closure, so the profile has distinct self times, a
// recursive stack and "(anonymous)" frames.
'use strict';

function fib(n) {
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

function hashStrings(rounds) {
	let h = 0;
	for (let i = 0; i < rounds; i++) {
		const s = 'watchtower-' + i;
		for (let j = 0; j < s.length; j++)
			h = (h * 31 + s.charCodeAt(j)) | 0;
	}
	return h;
}

function sortNumbers(n) {
	const a = [];
	for (let i = 0; i < n; i++)
		a.push((i * 2654435761) % 1000003);
	a.sort((x, y) => x - y);
	return a[n >> 1];
}

function main(ms) {
	const end = Date.now() + ms;
	let acc = 0;
	while (Date.now() < end) {
		acc += fib(20);
		acc += hashStrings(2000);
		acc += sortNumbers(5000);
		acc += [1, 2, 3].map(function (x) { return fib(12 + x); }).length;
	}
	return acc;
}

const ms = parseInt(process.argv[2] || process.env.WORK_MS || '400', 10);
console.log(main(ms) !== 0 ? 'ok' : 'ok0');
