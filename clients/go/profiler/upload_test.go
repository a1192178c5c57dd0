// upload_test.go — the uploader against real HTTP servers (net/http/httptest):
// request shape, retries with backoff on 5xx/network errors, no retry on 4xx,
// the bounded queue, Stop's flush and timeout.

package profiler

import (
	"bytes"
	"compress/gzip"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type recorded struct {
	at     time.Time
	path   string
	query  map[string][]string
	auth   string
	body   []byte
	status int
}

// recorder is an httptest server answering statuses[i] to the i-th request
// (the last one repeats); it keeps every request.
type recorder struct {
	mu       sync.Mutex
	reqs     []recorded
	statuses []int
	srv      *httptest.Server
}

func newRecorder(t *testing.T, statuses ...int) *recorder {
	r := &recorder{statuses: statuses}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		body, _ := io.ReadAll(q.Body)
		r.mu.Lock()
		st := http.StatusOK
		if len(r.statuses) > 0 {
			i := len(r.reqs)
			if i >= len(r.statuses) {
				i = len(r.statuses) - 1
			}
			st = r.statuses[i]
		}
		r.reqs = append(r.reqs, recorded{time.Now(), q.URL.Path, q.URL.Query(), q.Header.Get("Authorization"), body, st})
		r.mu.Unlock()
		w.WriteHeader(st)
		io.WriteString(w, `{"error":"x","detail":"test"}`)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *recorder) all() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.reqs...)
}

func quiet() Logger { return log.New(io.Discard, "", 0) }

// startOnce runs a profiler whose single window ends at Stop (Period 1h):
// exactly one snapshot per type reaches the server.
func startOnce(t *testing.T, cfg Config) *Profiler {
	t.Helper()
	if cfg.Period == 0 {
		cfg.Period = time.Hour
	}
	if cfg.Logger == nil {
		cfg.Logger = quiet()
	}
	p, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop() })
	return p
}

func TestRequestShape(t *testing.T) {
	r := newRecorder(t)
	before := time.Now()
	p := startOnce(t, Config{Endpoint: r.srv.URL + "/", Token: "tok", Service: "svc a",
		Labels: map[string]string{"env": "test", "version": "1.2"}, Types: []ProfileType{CPU, Goroutine}})
	burn(200 * time.Millisecond)
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	reqs := r.all()
	if len(reqs) != 2 {
		t.Fatalf("got %d requests, want 2 (cpu, goroutine)", len(reqs))
	}
	types := map[string]bool{}
	for _, q := range reqs {
		if q.path != "/v1/profiles" {
			t.Errorf("path %q", q.path)
		}
		if q.auth != "Bearer tok" {
			t.Errorf("Authorization %q", q.auth)
		}
		get := func(k string) string {
			if v := q.query[k]; len(v) == 1 {
				return v[0]
			}
			t.Errorf("query %s: %v", k, q.query[k])
			return ""
		}
		if get("format") != "pprof" || get("service") != "svc a" || get("label.env") != "test" || get("label.version") != "1.2" {
			t.Errorf("query %v", q.query)
		}
		types[get("type")] = true
		from, _ := strconv.ParseFloat(get("from"), 64)
		until, _ := strconv.ParseFloat(get("until"), 64)
		if from < float64(before.Unix())-1 || until < from+0.15 || until > float64(time.Now().Unix())+1 {
			t.Errorf("from %v until %v (started %v)", from, until, before.Unix())
		}
		zr, err := gzip.NewReader(bytes.NewReader(q.body))
		if err != nil {
			t.Fatalf("body is not gzip: %v", err)
		}
		if b, err := io.ReadAll(zr); err != nil || len(b) == 0 {
			t.Errorf("body: %v (%d bytes)", err, len(b))
		}
	}
	if !types["cpu"] || !types["goroutine"] {
		t.Errorf("types %v", types)
	}
	if s := p.Stats(); s.Uploaded != 2 || s.Collected != 2 || s.Failed+s.Rejected+s.Dropped != 0 {
		t.Errorf("stats %+v", s)
	}
}

func TestPeriodicUploads(t *testing.T) {
	r := newRecorder(t)
	period := 150 * time.Millisecond
	t0 := time.Now()
	p := startOnce(t, Config{Endpoint: r.srv.URL, Service: "s", Period: period,
		Types: []ProfileType{CPU, Goroutine}})
	for deadline := time.Now().Add(10 * time.Second); len(r.all()) < 6 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	elapsed := time.Since(t0)
	reqs := r.all() // uploaded by the loop itself, before Stop
	p.Stop()
	if len(reqs) < 6 {
		t.Fatalf("only %d uploads without Stop", len(reqs))
	}
	if max := 2 * (int(elapsed/period) + 1); len(reqs) > max {
		t.Errorf("%d uploads in %v with a %v period", len(reqs), elapsed, period)
	}
	// CPU windows are consecutive, each at least a period long
	var prevUntil float64
	for _, q := range reqs {
		if q.query["type"][0] != "cpu" {
			continue
		}
		from, _ := strconv.ParseFloat(q.query["from"][0], 64)
		until, _ := strconv.ParseFloat(q.query["until"][0], 64)
		if until-from < period.Seconds()-0.002 {
			t.Errorf("window %v..%v shorter than the period", from, until)
		}
		if prevUntil != 0 && (from < prevUntil-0.002 || from > prevUntil+2) {
			t.Errorf("window starts at %v, previous ended at %v", from, prevUntil)
		}
		prevUntil = until
	}
}

func TestRetryOn5xxThenSuccess(t *testing.T) {
	r := newRecorder(t, 503, 500, 200)
	p := startOnce(t, Config{Endpoint: r.srv.URL, Service: "s", Types: []ProfileType{Goroutine},
		InitialBackoff: 10 * time.Millisecond})
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if n := len(r.all()); n != 3 {
		t.Fatalf("%d attempts, want 3", n)
	}
	if s := p.Stats(); s.Uploaded != 1 || s.Retries != 2 || s.Failed != 0 {
		t.Errorf("stats %+v", s)
	}
}

func TestNoRetryOn4xx(t *testing.T) {
	for _, st := range []int{400, 401, 413, 415} {
		r := newRecorder(t, st, 200)
		p := startOnce(t, Config{Endpoint: r.srv.URL, Service: "s", Types: []ProfileType{Goroutine},
			InitialBackoff: 5 * time.Millisecond})
		p.Stop()
		if n := len(r.all()); n != 1 {
			t.Errorf("status %d: %d attempts, want 1", st, n)
		}
		if s := p.Stats(); s.Rejected != 1 || s.Uploaded != 0 {
			t.Errorf("status %d: stats %+v", st, s)
		}
	}
	// 429 is the documented exception: retried
	r := newRecorder(t, 429, 200)
	p := startOnce(t, Config{Endpoint: r.srv.URL, Service: "s", Types: []ProfileType{Goroutine},
		InitialBackoff: 5 * time.Millisecond})
	p.Stop()
	if n := len(r.all()); n != 2 {
		t.Errorf("429: %d attempts, want 2", n)
	}
}

func TestBackoffExponentialWithJitterAndGiveUp(t *testing.T) {
	r := newRecorder(t, 500)
	init, max := 40*time.Millisecond, 160*time.Millisecond
	p := startOnce(t, Config{Endpoint: r.srv.URL, Service: "s", Types: []ProfileType{Goroutine},
		InitialBackoff: init, MaxBackoff: max, MaxRetries: 4, StopTimeout: 5 * time.Second})
	p.Stop()
	reqs := r.all()
	if len(reqs) != 5 {
		t.Fatalf("%d attempts, want 1 + 4 retries", len(reqs))
	}
	want := []time.Duration{40, 80, 160, 160} // ms, capped at MaxBackoff
	for i := 1; i < len(reqs); i++ {
		gap := reqs[i].at.Sub(reqs[i-1].at)
		d := want[i-1] * time.Millisecond
		// jitter draws from [d/2, d]; allow scheduling slack above
		if gap < d/2 || gap > d+300*time.Millisecond {
			t.Errorf("gap %d = %v, want within [%v, %v]", i, gap, d/2, d)
		}
	}
	if s := p.Stats(); s.Failed != 1 || s.Retries != 4 || s.Uploaded != 0 {
		t.Errorf("stats %+v", s)
	}
}

func TestJitterRange(t *testing.T) {
	d := 100 * time.Millisecond
	lo, hi := d, time.Duration(0)
	for i := 0; i < 2000; i++ {
		j := jitter(d)
		if j < d/2 || j > d {
			t.Fatalf("jitter %v outside [%v, %v]", j, d/2, d)
		}
		if j < lo {
			lo = j
		}
		if j > hi {
			hi = j
		}
	}
	if hi-lo < d/4 {
		t.Errorf("jitter spread only %v..%v", lo, hi)
	}
}

func TestRetryOnNetworkError(t *testing.T) {
	// a port that refuses connections first, then a server on it
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var hits int32
	p := startOnce(t, Config{Endpoint: "http://" + addr, Service: "s", Types: []ProfileType{Goroutine},
		InitialBackoff: 150 * time.Millisecond, MaxBackoff: 150 * time.Millisecond, MaxRetries: 20})
	done := make(chan error, 1)
	go func() { done <- p.Stop() }()
	time.Sleep(400 * time.Millisecond) // a few refused attempts
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("port reuse: %v", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		atomic.AddInt32(&hits, 1)
	})}
	go srv.Serve(ln2)
	defer srv.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); s.Uploaded != 1 || s.Retries < 1 || atomic.LoadInt32(&hits) != 1 {
		t.Errorf("stats %+v, hits %d", s, hits)
	}
}

func TestQueueDropsOldest(t *testing.T) {
	q := newQueue(3)
	dropped := 0
	for i := 0; i < 5; i++ {
		dropped += q.push(&item{data: []byte{byte(i)}})
	}
	if dropped != 2 {
		t.Errorf("dropped %d, want 2", dropped)
	}
	for want := 2; want < 5; want++ {
		it, _ := q.pop()
		if it == nil || it.data[0] != byte(want) {
			t.Fatalf("pop: %v, want item %d", it, want)
		}
	}
	if it, closed := q.pop(); it != nil || closed {
		t.Errorf("empty queue: %v %v", it, closed)
	}
	q.close()
	if _, closed := q.pop(); !closed {
		t.Error("closed queue not reported")
	}
}

// A hung endpoint must neither block the collector nor grow memory, and
// Stop must return within its timeout.
func TestHungEndpointNeverBlocks(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	p, err := Start(Config{Endpoint: srv.URL, Service: "s", Period: 100 * time.Millisecond,
		Types: []ProfileType{Goroutine}, QueueSize: 2, StopTimeout: 300 * time.Millisecond, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	// one upload hangs in flight, two wait: the collector goes on and the
	// oldest waiting profiles are dropped
	deadline := time.Now().Add(10 * time.Second)
	for p.Stats().Dropped < 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	s := p.Stats()
	if s.Dropped < 3 || s.Collected < 6 || s.Uploaded != 0 {
		t.Errorf("collector stalled or queue unbounded: %+v", s)
	}
	if n := p.q.len(); n > 2 {
		t.Errorf("queue holds %d items", n)
	}
	t0 := time.Now()
	err = p.Stop()
	if el := time.Since(t0); el > 2*time.Second {
		t.Errorf("Stop took %v with StopTimeout 300ms", el)
	}
	if err == nil {
		t.Error("Stop should report unsent profiles")
	}
}

func TestConfigValidation(t *testing.T) {
	bad := []Config{
		{Service: "s"},
		{Endpoint: "http://x"},
		{Endpoint: "ftp://x", Service: "s"},
		{Endpoint: "http://x", Service: "s", Period: time.Millisecond},
		{Endpoint: "http://x", Service: "s", Types: []ProfileType{"threadcreate"}},
		{Endpoint: "http://x", Service: "s", Types: []ProfileType{CPU, CPU}},
		{Endpoint: "http://x", Service: "s", Labels: map[string]string{"": "v"}},
		{Endpoint: "http://x", Service: "a\nb"},
	}
	for i, c := range bad {
		c.Logger = quiet()
		if p, err := Start(c); err == nil {
			p.Stop()
			t.Errorf("config %d accepted: %+v", i, c)
		}
	}
	p := startOnce(t, Config{Endpoint: "http://127.0.0.1:1", Service: "s", Types: []ProfileType{Goroutine}, MaxRetries: -1})
	if _, err := Start(Config{Endpoint: "http://127.0.0.1:1", Service: "s", Logger: quiet()}); err == nil {
		t.Error("second Start accepted while one runs")
	}
	p.Stop()
	p2 := startOnce(t, Config{Endpoint: "http://127.0.0.1:1", Service: "s", Types: []ProfileType{Goroutine}, MaxRetries: -1})
	p2.Stop()
	if p2.cfg.Period != time.Hour || len(AllTypes) != 5 {
		t.Error("defaults")
	}
	var c Config = Config{Endpoint: "http://x", Service: "s"}
	if err := c.fill(); err != nil || c.Period != DefaultPeriod || len(c.Types) != 5 {
		t.Errorf("defaults: %v %+v", err, c)
	}
}
