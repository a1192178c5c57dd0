// example — a Go workload profiled by watchtower/clients/go/profiler.
//
//	example [-endpoint URL] [-token T] [-service S] [-period 15s] [-duration 0]
//	        [-span ID] [-trace ID]
//
// Defaults come from WT_EDGE_URL and WT_UPLOAD_TOKEN. The workload has one
// function of each kind so every profile type has something to show:
//
//   - hotSpanWork: the CPU hot spot, run under profiler.WithSpan(span, trace)
//     so its samples carry span_id/trace_id;
//   - backgroundHash: CPU without a span (the span filter must leave it out);
//   - allocWorker: allocations, some kept (alloc_* and inuse_*);
//   - mutexWorker: four goroutines contending on one sync.Mutex (mutex_*);
//   - channelConsumer: waits on an unbuffered channel fed slowly (block_*);
//   - parked goroutines (goroutine).
//
// With -duration > 0 it stops after that long, calls Stop (which uploads the
// last window) and prints the profiler's Stats as JSON; it exits 1 when
// profiles were lost.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"watchtower/clients/go/profiler"
)

var (
	stopFlag int32
	retained [][]byte
	counter  uint64
)

func running() bool { return atomic.LoadInt32(&stopFlag) == 0 }

//go:noinline
func hotSpanWork() uint64 {
	x := uint64(88172645463325252)
	for i := 0; i < 2000000; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

//go:noinline
func backgroundHash(buf []byte) {
	for i := 0; i < 200; i++ {
		s := sha256.Sum256(buf)
		buf[0] ^= s[0]
	}
}

//go:noinline
func allocWorker() {
	for i := 0; i < 2000; i++ {
		b := make([]byte, 4096+i%1024)
		if i%50 == 0 {
			retained = append(retained, b)
			if len(retained) > 2000 {
				retained = retained[1000:]
			}
		}
	}
}

//go:noinline
func mutexWorker(mu *sync.Mutex) {
	mu.Lock()
	counter++
	time.Sleep(200 * time.Microsecond)
	mu.Unlock()
}

//go:noinline
func channelConsumer(ch <-chan int) int {
	return <-ch
}

func main() {
	endpoint := flag.String("endpoint", envOr("WT_EDGE_URL", "http://127.0.0.1:4040"), "edge or hub base URL")
	token := flag.String("token", os.Getenv("WT_UPLOAD_TOKEN"), "upload token")
	service := flag.String("service", "go-example", "service name")
	period := flag.Duration("period", 15*time.Second, "profile period")
	duration := flag.Duration("duration", 0, "stop after this long (0 = until SIGINT/SIGTERM)")
	span := flag.String("span", "abc123def4567890", "span id for the hot function")
	trace := flag.String("trace", "4bf92f3577b34da6a3ce929d0e0e4736", "trace id for the hot function")
	flag.Parse()

	p, err := profiler.Start(profiler.Config{
		Endpoint: *endpoint,
		Token:    *token,
		Service:  *service,
		Labels:   map[string]string{"env": "example"},
		Period:   *period,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}

	var wg sync.WaitGroup
	spawn := func(f func()) {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
	// The span: everything this goroutine runs carries span_id/trace_id.
	spawn(func() {
		ctx := profiler.WithSpan(context.Background(), *span, *trace)
		_ = ctx // pass ctx on to code that starts goroutines or nested spans
		var x uint64
		for running() {
			x += hotSpanWork()
		}
		atomic.AddUint64(&counter, x&1)
	})
	spawn(func() {
		buf := make([]byte, 4096)
		for running() {
			backgroundHash(buf)
			time.Sleep(2 * time.Millisecond) // about a quarter of the span's CPU
		}
	})
	spawn(func() {
		for running() {
			allocWorker()
			time.Sleep(5 * time.Millisecond)
		}
	})
	var mu sync.Mutex
	for g := 0; g < 4; g++ {
		spawn(func() {
			for running() {
				mutexWorker(&mu)
			}
		})
	}
	ch := make(chan int)
	spawn(func() {
		for running() {
			channelConsumer(ch)
		}
	})
	spawn(func() {
		for i := 0; ; i++ {
			time.Sleep(time.Millisecond)
			if !running() {
				close(ch)
				return
			}
			ch <- i
		}
	})
	park := make(chan struct{})
	for g := 0; g < 8; g++ {
		go func() { <-park }()
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	var timeout <-chan time.Time
	if *duration > 0 {
		timeout = time.After(*duration)
	}
	select {
	case <-sig:
	case <-timeout:
	}
	atomic.StoreInt32(&stopFlag, 1)
	wg.Wait()
	err = p.Stop()
	close(park)
	json.NewEncoder(os.Stdout).Encode(p.Stats())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if s := p.Stats(); s.Failed+s.Rejected+s.Dropped > 0 {
		os.Exit(1)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
