// profile_test.go — what the profiler collects, checked with the Go
// toolchain's own reader (`go tool pprof -raw/-top`) as the independent
// reference: span labels on CPU samples, per-period deltas of the
// cumulative heap/mutex/block profiles, mutex/block rate handling.

package profiler

import (
	"bufio"
	"context"
	"crypto/sha256"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var sink byte

//go:noinline
// cpuSpent reports whether the process has used d of CPU since start
// (cpuTime's value) or 20 d of wall time passed since wall: the loops below
// run for CPU time, so a loaded machine still gives the profiler its
// samples (a wall-clock loop at load 25 got 10 % of a CPU).
func cpuSpent(start time.Duration, wall time.Time, d time.Duration) bool {
	return cpuTime()-start >= d || time.Since(wall) >= 20*d
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func burn(d time.Duration) {
	buf := make([]byte, 1024)
	for c0, w0 := cpuTime(), time.Now(); !cpuSpent(c0, w0, d); {
		for i := 0; i < 32; i++ {
			s := sha256.Sum256(buf)
			buf[0] ^= s[0]
		}
	}
	sink = buf[0]
}

//go:noinline
func spanHotLoop(d time.Duration) uint64 {
	x := uint64(1)
	for c0, w0 := cpuTime(), time.Now(); !cpuSpent(c0, w0, d); {
		for i := 0; i < 100000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	return x
}

func goTool(t *testing.T, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go tool not in PATH")
	}
	out, err := exec.Command("go", append([]string{"tool", "pprof"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func writeTemp(t *testing.T, name string, data []byte) string {
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

var (
	rawSampleRe = regexp.MustCompile(`^\s+(\d+(?:\s+\d+)*):((?:\s+\d+)*)\s*$`)
	rawLabelRe  = regexp.MustCompile(`^\s+\S+:\[.*\]\s*$`)
	rawLocRe    = regexp.MustCompile(`^\s+(\d+): (0x[0-9a-f]+) `)
)

// rawSamples parses `go tool pprof -raw`: stack key (addresses + label
// lines) -> summed values, plus the sample type header.
func rawSamples(t *testing.T, path string) (map[string][]int64, string) {
	out := goTool(t, "-raw", path)
	type smp struct {
		vals   []int64
		ids    []string
		labels []string
	}
	var ss []*smp
	locs := map[string]string{}
	header := ""
	section := ""
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "Samples:":
			section = "s"
			continue
		case line == "Locations":
			section = "l"
			continue
		case line == "Mappings":
			section = ""
			continue
		}
		if section == "s" {
			if header == "" {
				header = strings.TrimSpace(line)
				continue
			}
			if m := rawSampleRe.FindStringSubmatch(line); m != nil {
				s := &smp{ids: strings.Fields(m[2])}
				for _, v := range strings.Fields(m[1]) {
					n, _ := strconv.ParseInt(v, 10, 64)
					s.vals = append(s.vals, n)
				}
				ss = append(ss, s)
			} else if rawLabelRe.MatchString(line) && len(ss) > 0 {
				ss[len(ss)-1].labels = append(ss[len(ss)-1].labels, strings.TrimSpace(line))
			}
		} else if section == "l" {
			if m := rawLocRe.FindStringSubmatch(line); m != nil {
				locs[m[1]] = m[2]
			}
		}
	}
	res := map[string][]int64{}
	for _, s := range ss {
		var k []string
		for _, id := range s.ids {
			k = append(k, locs[id])
		}
		key := strings.Join(k, ",") + "|" + strings.Join(s.labels, ";")
		if res[key] == nil {
			res[key] = make([]int64, len(s.vals))
		}
		for i, v := range s.vals {
			res[key][i] += v
		}
	}
	return res, header
}

func snapshot(t *testing.T, name string) []byte {
	var b strings.Builder
	if err := pprof.Lookup(name).WriteTo(&b, 0); err != nil {
		t.Fatal(err)
	}
	return []byte(b.String())
}

//go:noinline
func contendOn(mu *sync.Mutex, n int) {
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i++ {
				mu.Lock()
				time.Sleep(20 * time.Microsecond)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// checkDelta applies the delta to two cumulative snapshots and compares the
// result, stack by stack, with `go tool pprof -raw` of the inputs.
func checkDelta(t *testing.T, typ ProfileType, p1, p2 []byte, cumIdx map[int]bool) {
	t.Helper()
	d := &deltaState{}
	d1, n1, err := d.apply(p1)
	if err != nil {
		t.Fatal(err)
	}
	d2, n2, err := d.apply(p2)
	if err != nil {
		t.Fatal(err)
	}
	r1, h1 := rawSamples(t, writeTemp(t, "p1.pb.gz", p1))
	r2, _ := rawSamples(t, writeTemp(t, "p2.pb.gz", p2))
	rd1, _ := rawSamples(t, writeTemp(t, "d1.pb.gz", d1))
	rd2, hd := rawSamples(t, writeTemp(t, "d2.pb.gz", d2))
	if hd != h1 {
		t.Errorf("%s: sample types %q became %q", typ, h1, hd)
	}
	// first delta = the first snapshot itself (minus all-zero samples)
	if len(rd1) != n1 {
		t.Errorf("%s: first delta has %d stacks, apply said %d", typ, len(rd1), n1)
	}
	for k, v := range rd1 {
		if !equal(v, r1[k]) {
			t.Errorf("%s: first delta %s = %v, snapshot %v", typ, k, v, r1[k])
		}
	}
	want := map[string][]int64{}
	for k, v2 := range r2 {
		v := make([]int64, len(v2))
		nz := false
		for i := range v2 {
			v[i] = v2[i]
			if cumIdx[i] && r1[k] != nil {
				v[i] -= r1[k][i]
			}
			nz = nz || v[i] != 0
		}
		if nz {
			want[k] = v
		}
	}
	if len(want) == 0 {
		t.Fatalf("%s: nothing changed between snapshots; the test workload did not run", typ)
	}
	if len(rd2) != len(want) || n2 != len(want) {
		t.Errorf("%s: delta has %d stacks (apply: %d), want %d", typ, len(rd2), n2, len(want))
	}
	for k, v := range want {
		if !equal(rd2[k], v) {
			t.Errorf("%s: delta %s = %v, want %v", typ, k, rd2[k], v)
		}
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestMutexAndBlockDeltas(t *testing.T) {
	old := runtime.SetMutexProfileFraction(1)
	runtime.SetBlockProfileRate(1)
	defer runtime.SetMutexProfileFraction(old)
	defer runtime.SetBlockProfileRate(0)
	var mu sync.Mutex
	contendOn(&mu, 50)
	m1, b1 := snapshot(t, "mutex"), snapshot(t, "block")
	contendOn(&mu, 80)
	m2, b2 := snapshot(t, "mutex"), snapshot(t, "block")
	checkDelta(t, Mutex, m1, m2, map[int]bool{0: true, 1: true})
	checkDelta(t, Block, b1, b2, map[int]bool{0: true, 1: true})
}

var keepAlive [][]byte

//go:noinline
func allocSome(n int) {
	for i := 0; i < n; i++ {
		b := make([]byte, 2048+i%512)
		if i%8 == 0 {
			keepAlive = append(keepAlive, b)
		}
	}
}

func TestHeapDeltaKeepsInuse(t *testing.T) {
	old := runtime.MemProfileRate
	runtime.MemProfileRate = 512
	defer func() { runtime.MemProfileRate = old }()
	allocSome(5000)
	runtime.GC()
	h1 := snapshot(t, "heap")
	allocSome(3000)
	runtime.GC()
	h2 := snapshot(t, "heap")
	// alloc_objects, alloc_space are deltas; inuse_* stay absolute
	checkDelta(t, Heap, h1, h2, map[int]bool{0: true, 1: true})
	keepAlive = nil
}

func TestSpanLabelsOnCPUSamples(t *testing.T) {
	r := newRecorder(t)
	const span, trace = "abc123def4567890", "0af7651916cd43dd8448eb211c80319c"
	p := startOnce(t, Config{Endpoint: r.srv.URL, Service: "s", Types: []ProfileType{CPU}})
	ctx := WithSpan(context.Background(), span, trace)
	if v, _ := pprof.Label(ctx, SpanIDLabel); v != span {
		t.Errorf("ctx span_id %q", v)
	}
	done := make(chan struct{})
	go func() { spanHotLoop(300 * time.Millisecond); close(done) }() // inherits the labels
	spanHotLoop(300 * time.Millisecond)
	<-done
	pprof.SetGoroutineLabels(context.Background())
	DoSpan(context.Background(), "other", "", func(ctx context.Context) {
		if v, _ := pprof.Label(ctx, SpanIDLabel); v != "other" {
			t.Errorf("DoSpan span_id %q", v)
		}
		if _, ok := pprof.Label(ctx, TraceIDLabel); ok {
			t.Error("empty trace id set as a label")
		}
		burn(200 * time.Millisecond)
	})
	burn(100 * time.Millisecond) // unlabelled
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	reqs := r.all()
	if len(reqs) != 1 {
		t.Fatalf("%d uploads", len(reqs))
	}
	path := writeTemp(t, "cpu.pb.gz", reqs[0].body)
	// -hide: runtime.asyncPreempt is a leaf the runtime's asynchronous
	// preemption puts on top of a tight loop; on a loaded machine the
	// preemption and profiling signals arrive together and it takes a share
	// of the hot loop's samples. It is not the application's code.
	top := goTool(t, "-top", "-hide=runtime.asyncPreempt", "-tagfocus=span_id="+span, path)
	if !regexp.MustCompile(`(?m)^\s+\S+\s+\S+%\s+\S+%\s+\S+\s+\S+%\s+watchtower/clients/go/profiler\.spanHotLoop$`).MatchString(firstTopRow(top)) {
		t.Errorf("span %s: top function is not spanHotLoop:\n%s", span, top)
	}
	if strings.Contains(top, "profiler.burn") {
		t.Errorf("span %s selection holds burn (another span/no span):\n%s", span, top)
	}
	top = goTool(t, "-top", "-hide=runtime.asyncPreempt", "-tagfocus=trace_id="+trace, path)
	if !strings.Contains(firstTopRow(top), "spanHotLoop") {
		t.Errorf("trace %s: top:\n%s", trace, top)
	}
	top = goTool(t, "-top", "-tagfocus=span_id=other", path)
	if !strings.Contains(firstTopRow(top), "sha256") && !strings.Contains(top, "profiler.burn") {
		t.Errorf("span other:\n%s", top)
	}
	if strings.Contains(top, "spanHotLoop") {
		t.Errorf("span other holds spanHotLoop:\n%s", top)
	}
}

// firstTopRow returns the first function row of `go tool pprof -top`.
func firstTopRow(top string) string {
	seen := false
	for _, l := range strings.Split(top, "\n") {
		if strings.Contains(l, "flat%") {
			seen = true
			continue
		}
		if seen && strings.TrimSpace(l) != "" {
			return l
		}
	}
	return ""
}

func TestRatesSetOnlyWhenUnset(t *testing.T) {
	prev := runtime.SetMutexProfileFraction(0)
	defer runtime.SetMutexProfileFraction(prev)
	p := startOnce(t, Config{Endpoint: "http://127.0.0.1:1", Service: "s", Types: []ProfileType{Mutex}, MaxRetries: -1})
	if f := runtime.SetMutexProfileFraction(-1); f != DefaultMutexProfileFraction {
		t.Errorf("mutex fraction %d while running, want default %d", f, DefaultMutexProfileFraction)
	}
	p.Stop()
	if f := runtime.SetMutexProfileFraction(-1); f != 0 {
		t.Errorf("mutex fraction %d after Stop, want it restored to 0", f)
	}
	runtime.SetMutexProfileFraction(3) // the application's own choice
	p = startOnce(t, Config{Endpoint: "http://127.0.0.1:1", Service: "s", Types: []ProfileType{Mutex}, MaxRetries: -1})
	if f := runtime.SetMutexProfileFraction(-1); f != 3 {
		t.Errorf("mutex fraction %d, the application's 3 was overridden", f)
	}
	p.Stop()
	if f := runtime.SetMutexProfileFraction(-1); f != 3 {
		t.Errorf("mutex fraction %d after Stop, want 3", f)
	}
	p = startOnce(t, Config{Endpoint: "http://127.0.0.1:1", Service: "s", Types: []ProfileType{Mutex},
		MutexProfileFraction: 7, MaxRetries: -1})
	if f := runtime.SetMutexProfileFraction(-1); f != 7 {
		t.Errorf("explicit fraction: %d", f)
	}
	p.Stop()
	if f := runtime.SetMutexProfileFraction(-1); f != 3 {
		t.Errorf("mutex fraction %d after Stop, want 3", f)
	}
}
