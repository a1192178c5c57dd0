// goprof — a small Go workload that writes real runtime/pprof profiles for
// the pprof decoder tests (tests/gen/gen-go-profiles runs it).
//
//	goprof OUTDIR [SECONDS]
//
// It burns CPU in distinct, non-inlined functions (two of them under pprof
// labels), allocates, contends on a mutex and blocks on channels, then writes
// OUTDIR/{cpu,heap,goroutine,mutex,block}.pb.gz. Standard library only.
package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"sync"
	"time"
)

var sink uint64
var keep [][]byte

//go:noinline
func burnHash(d time.Duration) {
	buf := make([]byte, 4096)
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		for i := 0; i < 64; i++ {
			s := sha256.Sum256(buf)
			buf[0] ^= s[0]
		}
	}
}

//go:noinline
func burnFib(d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		sink += fib(22)
	}
}

//go:noinline
func fib(n int) uint64 {
	if n < 2 {
		return uint64(n)
	}
	return fib(n-1) + fib(n-2)
}

//go:noinline
func burnSort(d time.Duration) {
	end := time.Now().Add(d)
	xs := make([]int, 20000)
	for time.Now().Before(end) {
		for i := range xs {
			xs[i] = (i * 7919) % 10007
		}
		sort.Ints(xs)
	}
}

//go:noinline
func allocate(n int) {
	for i := 0; i < n; i++ {
		b := make([]byte, 1024+i%4096)
		if i%16 == 0 {
			keep = append(keep, b)
		}
	}
}

//go:noinline
func contend(mu *sync.Mutex, n int) {
	for i := 0; i < n; i++ {
		mu.Lock()
		sink++
		time.Sleep(50 * time.Microsecond)
		mu.Unlock()
	}
}

//go:noinline
func blockOnChannel(ch chan int, n int) {
	for i := 0; i < n; i++ {
		<-ch
	}
}

func write(dir, name string) {
	f, err := os.Create(filepath.Join(dir, name+".pb.gz"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer f.Close()
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: goprof OUTDIR [SECONDS]")
		os.Exit(2)
	}
	dir := os.Args[1]
	secs := 1.5
	if len(os.Args) > 2 {
		if v, err := strconv.ParseFloat(os.Args[2], 64); err == nil {
			secs = v
		}
	}
	slice := time.Duration(secs * float64(time.Second) / 4)
	runtime.MemProfileRate = 4096
	runtime.SetMutexProfileFraction(1)
	runtime.SetBlockProfileRate(1)

	cpu, err := os.Create(filepath.Join(dir, "cpu.pb.gz"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx := context.Background()
	pprof.Do(ctx, pprof.Labels("stage", "hash"), func(context.Context) { burnHash(slice) })
	pprof.Do(ctx, pprof.Labels("stage", "sort", "kind", "ints"), func(context.Context) { burnSort(slice) })
	burnFib(slice)

	var mu sync.Mutex
	var wg sync.WaitGroup
	ch := make(chan int)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() { defer wg.Done(); contend(&mu, 100) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); blockOnChannel(ch, 200) }()
	for i := 0; i < 200; i++ {
		time.Sleep(20 * time.Microsecond)
		ch <- i
	}
	allocate(20000)
	wg.Wait()
	end := time.Now().Add(slice)
	for time.Now().Before(end) {
		allocate(2000)
		burnHash(5 * time.Millisecond)
	}
	pprof.StopCPUProfile()
	cpu.Close()

	// A few parked goroutines so the goroutine profile has distinct stacks.
	stop := make(chan struct{})
	for g := 0; g < 3; g++ {
		go func() { <-stop }()
	}
	runtime.GC()
	for _, n := range []string{"heap", "goroutine", "mutex", "block"} {
		write(dir, n)
	}
	close(stop)
}
