// Package profiler is Watchtower's first-party continuous profiler for Go
// programs. Standard library only (Go 1.19+).
//
// Start runs a background collection loop: every Period it records a CPU
// profile window (runtime/pprof.StartCPUProfile into a buffer) and takes
// heap, goroutine, mutex and block snapshots, and pushes each as pprof to a
// Watchtower edge (or hub):
//
//	POST {Endpoint}/v1/profiles?format=pprof&service=S&type=T&from=F&until=U&label.K=V
//	Authorization: Bearer {Token}
//
// Uploads go through a bounded in-memory queue (the oldest profile is dropped
// when it is full) drained by one uploader goroutine that retries network
// errors and 5xx/408/429 answers with exponential backoff and jitter; other
// 4xx answers are not retried. Nothing on the application's path blocks on
// the network.
//
// Heap allocation (alloc_objects/alloc_space), mutex and block profiles are
// cumulative in the Go runtime; the profiler uploads per-period deltas of
// them (see delta.go), so totals over a time range add up. inuse_* and
// goroutine are point-in-time values and are uploaded as they are.
//
// WithSpan and DoSpan attach span_id/trace_id pprof labels to the code run
// under them so CPU samples can be looked up by span (span.go).
package profiler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/url"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"time"
)

// ProfileType names one of the Go runtime profiles the profiler collects.
// The value is what is sent as `type=` on upload; the edge uses it as the
// hint that tells Go's mutex profile from its block profile (both name their
// sample types contentions/delay).
type ProfileType string

const (
	CPU       ProfileType = "cpu"       // samples/count, cpu/nanoseconds
	Heap      ProfileType = "heap"      // alloc_objects, alloc_space (deltas), inuse_objects, inuse_space
	Goroutine ProfileType = "goroutine" // goroutine/count
	Mutex     ProfileType = "mutex"     // mutex_contentions, mutex_delay (deltas)
	Block     ProfileType = "block"     // block_contentions, block_delay (deltas)
)

// AllTypes is the default set of profile types.
var AllTypes = []ProfileType{CPU, Heap, Goroutine, Mutex, Block}

// Defaults used when the corresponding Config field is zero.
const (
	DefaultPeriod               = 15 * time.Second
	DefaultMutexProfileFraction = 10    // report 1 in 10 mutex contention events
	DefaultBlockProfileRate     = 10000 // one blocking event per 10µs blocked
	DefaultQueueSize            = 64
	DefaultMaxRetries           = 5
	DefaultInitialBackoff       = 1 * time.Second
	DefaultMaxBackoff           = 30 * time.Second
	DefaultStopTimeout          = 10 * time.Second
	DefaultUploadTimeout        = 30 * time.Second
	minPeriod                   = 100 * time.Millisecond
)

// Logger receives the profiler's diagnostics; *log.Logger satisfies it.
type Logger interface {
	Printf(format string, args ...any)
}

// Config configures Start. Endpoint and Service are required.
type Config struct {
	// Endpoint is the base URL of a Watchtower edge or hub, e.g.
	// "http://127.0.0.1:4040"; "/v1/profiles" is appended.
	Endpoint string
	// Token is the project's upload token (sent as a Bearer token).
	Token string
	// Service names the application (1-255 printable bytes).
	Service string
	// Labels are added to every sample as label.K=V (e.g. "env", "version").
	// A sample's own pprof label of the same key (span_id from WithSpan) wins.
	Labels map[string]string
	// Period is the length of each CPU window and the snapshot interval
	// (default 15s, at least 100ms).
	Period time.Duration
	// Types selects the profiles to collect (default AllTypes).
	Types []ProfileType

	// MutexProfileFraction: 0 = if the application has not enabled mutex
	// profiling (runtime.SetMutexProfileFraction(-1) == 0), set it to
	// DefaultMutexProfileFraction while the profiler runs; > 0 = set this
	// value; < 0 = never touch it. Only used when Types has Mutex.
	MutexProfileFraction int
	// BlockProfileRate: 0 = unless the block profile already has records
	// (the runtime offers no way to read the rate, so existing records are
	// taken as "the application enabled it"), set
	// runtime.SetBlockProfileRate(DefaultBlockProfileRate) while the profiler
	// runs; > 0 = set this value; < 0 = never touch it. Only used when Types
	// has Block. Rates the profiler set are reset to 0 by Stop.
	BlockProfileRate int

	// HTTPClient sends the uploads (default: a client with UploadTimeout).
	HTTPClient *http.Client
	// Logger receives warnings (default: log.Default() with a prefix);
	// use log.New(io.Discard, "", 0) to silence it.
	Logger Logger

	// QueueSize bounds the profiles waiting for upload (default 64); when
	// full the oldest is dropped and Stats().Dropped counts it.
	QueueSize int
	// MaxRetries is the number of retries after the first attempt (default 5;
	// < 0 = no retries).
	MaxRetries int
	// InitialBackoff and MaxBackoff bound the exponential backoff between
	// attempts (defaults 1s and 30s); each wait is drawn from [d/2, d].
	InitialBackoff, MaxBackoff time.Duration
	// UploadTimeout bounds one HTTP attempt (default 30s).
	UploadTimeout time.Duration
	// StopTimeout bounds how long Stop waits for pending uploads (default 10s).
	StopTimeout time.Duration
}

// Stats are the profiler's counters (Profiler.Stats).
type Stats struct {
	Collected int64 // profiles put on the queue
	Uploaded  int64 // profiles acknowledged with 2xx
	Rejected  int64 // profiles answered with a non-retryable 4xx
	Failed    int64 // profiles given up after MaxRetries or at Stop
	Dropped   int64 // profiles dropped because the queue was full
	Retries   int64 // retried attempts
	Skipped   int64 // collection errors (e.g. a CPU profile already running)
}

// Profiler is a running profiler; Stop it once.
type Profiler struct {
	cfg      Config
	base     *url.URL
	log      Logger
	q        *queue
	stopCh   chan struct{}
	loopDone chan struct{}
	upDone   chan struct{}
	stopOnce sync.Once
	stopErr  error
	deltas   map[ProfileType]*deltaState

	// uploader cancellation: ctx is cancelled when Stop's timeout expires
	upCtx    context.Context
	upCancel context.CancelFunc

	mu    sync.Mutex
	stats Stats

	restoreMutex int  // value to restore, or -1
	restoreBlock bool // set block rate back to 0
	cpuWarned    bool // collector goroutine only
}

var (
	activeMu sync.Mutex
	active   *Profiler
)

// Start validates cfg, starts the collection and upload goroutines and
// returns the running Profiler. Only one Profiler may run at a time (the Go
// CPU profiler is process-global).
func Start(cfg Config) (*Profiler, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	base, err := url.Parse(strings.TrimRight(cfg.Endpoint, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("profiler: Endpoint %q is not an http(s) URL", cfg.Endpoint)
	}
	activeMu.Lock()
	defer activeMu.Unlock()
	if active != nil {
		return nil, errors.New("profiler: already started (Stop the running profiler first)")
	}
	p := &Profiler{
		cfg:          cfg,
		base:         base,
		log:          cfg.Logger,
		q:            newQueue(cfg.QueueSize),
		stopCh:       make(chan struct{}),
		loopDone:     make(chan struct{}),
		upDone:       make(chan struct{}),
		deltas:       map[ProfileType]*deltaState{},
		restoreMutex: -1,
	}
	p.upCtx, p.upCancel = context.WithCancel(context.Background())
	p.setRates()
	active = p
	go p.collectLoop()
	go p.uploadLoop()
	return p, nil
}

func (c *Config) fill() error {
	if c.Endpoint == "" {
		return errors.New("profiler: Config.Endpoint is required")
	}
	if c.Service == "" || len(c.Service) > 255 {
		return errors.New("profiler: Config.Service is required (1-255 bytes)")
	}
	for _, r := range c.Service {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("profiler: Config.Service %q has a control character", c.Service)
		}
	}
	for k := range c.Labels {
		if k == "" {
			return errors.New("profiler: Config.Labels has an empty key")
		}
	}
	if c.Period == 0 {
		c.Period = DefaultPeriod
	}
	if c.Period < minPeriod {
		return fmt.Errorf("profiler: Config.Period %v is below %v", c.Period, minPeriod)
	}
	if len(c.Types) == 0 {
		c.Types = AllTypes
	}
	seen := map[ProfileType]bool{}
	for _, t := range c.Types {
		switch t {
		case CPU, Heap, Goroutine, Mutex, Block:
		default:
			return fmt.Errorf("profiler: unknown profile type %q (want cpu, heap, goroutine, mutex or block)", t)
		}
		if seen[t] {
			return fmt.Errorf("profiler: profile type %q given twice", t)
		}
		seen[t] = true
	}
	if c.UploadTimeout <= 0 {
		c.UploadTimeout = DefaultUploadTimeout
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: c.UploadTimeout}
	}
	if c.Logger == nil {
		c.Logger = log.New(log.Writer(), "watchtower profiler: ", log.LstdFlags)
	}
	if c.QueueSize <= 0 {
		c.QueueSize = DefaultQueueSize
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = DefaultMaxRetries
	} else if c.MaxRetries < 0 {
		c.MaxRetries = 0
	}
	if c.InitialBackoff <= 0 {
		c.InitialBackoff = DefaultInitialBackoff
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.MaxBackoff < c.InitialBackoff {
		c.MaxBackoff = c.InitialBackoff
	}
	if c.StopTimeout <= 0 {
		c.StopTimeout = DefaultStopTimeout
	}
	return nil
}

func (p *Profiler) has(t ProfileType) bool {
	for _, x := range p.cfg.Types {
		if x == t {
			return true
		}
	}
	return false
}

// setRates enables mutex/block profiling as documented on Config.
func (p *Profiler) setRates() {
	if p.has(Mutex) {
		switch f := p.cfg.MutexProfileFraction; {
		case f > 0:
			p.restoreMutex = runtime.SetMutexProfileFraction(f)
		case f == 0 && runtime.SetMutexProfileFraction(-1) == 0:
			p.restoreMutex = runtime.SetMutexProfileFraction(DefaultMutexProfileFraction)
		}
	}
	if p.has(Block) {
		switch r := p.cfg.BlockProfileRate; {
		case r > 0:
			runtime.SetBlockProfileRate(r)
			p.restoreBlock = true
		case r == 0 && pprof.Lookup("block").Count() == 0:
			runtime.SetBlockProfileRate(DefaultBlockProfileRate)
			p.restoreBlock = true
		}
	}
}

func (p *Profiler) restoreRates() {
	if p.restoreMutex >= 0 {
		runtime.SetMutexProfileFraction(p.restoreMutex)
	}
	if p.restoreBlock {
		runtime.SetBlockProfileRate(0)
	}
}

// Stats returns a copy of the counters.
func (p *Profiler) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

func (p *Profiler) count(f func(*Stats)) {
	p.mu.Lock()
	f(&p.stats)
	p.mu.Unlock()
}

// Stop ends collection, uploads the current CPU window and snapshots, and
// waits up to Config.StopTimeout for the queue to drain. It returns an error
// when profiles were left unsent. Safe to call more than once.
func (p *Profiler) Stop() error {
	p.stopOnce.Do(func() {
		deadline := time.Now().Add(p.cfg.StopTimeout)
		close(p.stopCh)
		<-p.loopDone // the final window is on the queue now
		p.q.close()
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-p.upDone:
		case <-t.C:
			p.upCancel()
			<-p.upDone
		}
		t.Stop()
		p.upCancel()
		left := p.q.drain()
		if left > 0 {
			p.count(func(s *Stats) { s.Failed += int64(left) })
			p.stopErr = fmt.Errorf("profiler: %d profile(s) not uploaded within %v", left, p.cfg.StopTimeout)
		}
		p.restoreRates()
		activeMu.Lock()
		if active == p {
			active = nil
		}
		activeMu.Unlock()
	})
	return p.stopErr
}

// collectLoop records CPU windows of Period and takes the snapshots at the
// end of each window, until Stop. The next CPU window starts right after the
// previous one stops (before the snapshots), so no CPU time goes unrecorded.
func (p *Profiler) collectLoop() {
	defer close(p.loopDone)
	start := time.Now()
	cpuBuf := p.startCPU()
	for {
		t := time.NewTimer(p.cfg.Period)
		stopping := false
		select {
		case <-t.C:
		case <-p.stopCh:
			t.Stop()
			stopping = true
		}
		end := time.Now()
		if cpuBuf != nil {
			pprof.StopCPUProfile()
		}
		var next *bytes.Buffer
		nextStart := time.Now()
		if !stopping {
			next = p.startCPU()
		}
		if cpuBuf != nil {
			p.enqueue(CPU, cpuBuf.Bytes(), start, end)
		}
		p.snapshots(start, end)
		if stopping {
			return
		}
		start, cpuBuf = nextStart, next
	}
}

// startCPU starts a CPU profile into a new buffer; nil when CPU is not
// collected or another CPU profile is running (warned once per streak).
func (p *Profiler) startCPU() *bytes.Buffer {
	if !p.has(CPU) {
		return nil
	}
	buf := &bytes.Buffer{}
	if err := pprof.StartCPUProfile(buf); err != nil {
		p.count(func(s *Stats) { s.Skipped++ })
		if !p.cpuWarned {
			p.log.Printf("CPU profile skipped: %v (retrying every period)", err)
			p.cpuWarned = true
		}
		return nil
	}
	p.cpuWarned = false
	return buf
}

func (p *Profiler) snapshots(start, end time.Time) {
	for _, t := range p.cfg.Types {
		if t == CPU {
			continue
		}
		var buf bytes.Buffer
		prof := pprof.Lookup(string(t))
		if prof == nil {
			continue
		}
		if err := prof.WriteTo(&buf, 0); err != nil {
			p.count(func(s *Stats) { s.Skipped++ })
			p.log.Printf("%s profile: %v", t, err)
			continue
		}
		data := buf.Bytes()
		if needsDelta(t) {
			ds := p.deltas[t]
			if ds == nil {
				ds = &deltaState{}
				p.deltas[t] = ds
			}
			out, n, err := ds.apply(data)
			if err != nil {
				p.count(func(s *Stats) { s.Skipped++ })
				p.log.Printf("%s profile: delta: %v", t, err)
				continue
			}
			if n == 0 {
				continue // nothing happened in this period
			}
			data = out
		}
		p.enqueue(t, data, start, end)
	}
}

func (p *Profiler) enqueue(t ProfileType, data []byte, from, until time.Time) {
	if len(data) == 0 {
		return
	}
	dropped := p.q.push(&item{typ: t, data: data, from: from, until: until})
	p.count(func(s *Stats) {
		s.Collected++
		s.Dropped += int64(dropped)
	})
	if dropped > 0 {
		p.log.Printf("upload queue full (%d): dropped the oldest profile", p.cfg.QueueSize)
	}
}
