// regress — Go workloads with known behaviour for the hub's analysis tests
// (tests/integration/test_analysis.py; built by tests/gen/gen-analysis).
//
//	regress -mode cpu -version v1|v2 -out FILE [-seconds S] [-span ID -trace ID]
//	regress -mode leak -out DIR [-snapshots N]
//
// cpu: a runtime/pprof CPU profile of a program whose hot function changes
// between versions: v1 spends ~80% of its time in funcA and ~20% in funcB,
// v2 the reverse. With -span/-trace, v2 runs funcB under the pprof labels
// span_id/trace_id (what a tracing integration sets with pprof.Do), so the
// profile links that work to the span. Durations are the process's CPU
// time (getrusage), not wall time: the profiler samples CPU time, so the
// profile holds the same number of samples (~100 per CPU second) however
// loaded the machine is.
//
// leak: N heap profiles (runtime.MemProfileRate = 1, so inuse values are
// exact) written after each step of a program that leaks 256 KiB per step in
// leakyCache, keeps a constant-size buffer in steadyBuffer and allocates
// garbage in churn: DIR/heap-0.pb.gz … heap-(N-1).pb.gz.
// Standard library only.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"
)

// cpuNow is the process's CPU time (user + system) so far.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		die(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

var sink uint64

// funcA and funcB burn d of CPU time in their own loops (no callees), so their time is
// self time: that is what the rollup and the regression worker compare.

//go:noinline
func funcA(d time.Duration) {
	x := sink | 1
	for end := cpuNow() + d; cpuNow() < end; {
		for i := 0; i < 200000; i++ {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
		}
	}
	sink = x
}

//go:noinline
func funcB(d time.Duration) {
	x := sink | 1
	for end := cpuNow() + d; cpuNow() < end; {
		for i := 0; i < 200000; i++ {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
		}
	}
	sink = x
}

var leaked [][]byte
var steady []byte
var garbage []byte

//go:noinline
func leakyCache() {
	for i := 0; i < 4; i++ {
		leaked = append(leaked, make([]byte, 64<<10))
	}
}

//go:noinline
func steadyBuffer() {
	steady = make([]byte, 512<<10) // replaces the previous one: inuse stays constant
}

//go:noinline
func churn() {
	for i := 0; i < 64; i++ {
		garbage = make([]byte, 16<<10)
	}
	garbage = nil
}

func die(err error) {
	fmt.Fprintln(os.Stderr, "regress:", err)
	os.Exit(1)
}

func cpuMode(version, out string, secs float64, span, trace string) {
	f, err := os.Create(out)
	if err != nil {
		die(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		die(err)
	}
	hot, cold := funcA, funcB
	if version == "v2" {
		hot, cold = funcB, funcA
	}
	total := time.Duration(secs * float64(time.Second))
	const slot = 50 * time.Millisecond
	ctx := context.Background()
	for start := cpuNow(); cpuNow()-start < total; {
		hot(slot * 8 / 10)
		if version == "v2" && span != "" {
			// only funcB carries the span in v2: its hot path under the labels
			pprof.Do(ctx, pprof.Labels("span_id", span, "trace_id", trace), func(context.Context) {
				hot(slot * 8 / 10)
			})
		}
		cold(slot * 2 / 10)
	}
	pprof.StopCPUProfile()
	if err := f.Close(); err != nil {
		die(err)
	}
}

func leakMode(dir string, n int) {
	for k := 0; k < n; k++ {
		leakyCache()
		steadyBuffer()
		churn()
		runtime.GC()
		runtime.GC()
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("heap-%d.pb.gz", k)))
		if err != nil {
			die(err)
		}
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			die(err)
		}
		if err := f.Close(); err != nil {
			die(err)
		}
	}
}

func main() {
	runtime.MemProfileRate = 1
	mode := flag.String("mode", "cpu", "cpu | leak")
	version := flag.String("version", "v1", "cpu: v1 (hot funcA) | v2 (hot funcB)")
	out := flag.String("out", "", "cpu: output file; leak: output directory")
	secs := flag.Float64("seconds", 1.0, "cpu: profile duration")
	span := flag.String("span", "", "cpu v2: span_id pprof label on funcB")
	trace := flag.String("trace", "", "cpu v2: trace_id pprof label on funcB")
	snaps := flag.Int("snapshots", 6, "leak: number of heap profiles")
	flag.Parse()
	if *out == "" {
		die(fmt.Errorf("-out is required"))
	}
	switch *mode {
	case "cpu":
		if *version != "v1" && *version != "v2" {
			die(fmt.Errorf("-version must be v1 or v2"))
		}
		cpuMode(*version, *out, *secs, *span, *trace)
	case "leak":
		leakMode(*out, *snaps)
	default:
		die(fmt.Errorf("-mode must be cpu or leak"))
	}
}
