// upload.go — the bounded upload queue and the uploader goroutine: one
// POST /v1/profiles per profile, retried with exponential backoff and
// jitter on network errors, 5xx, 408 and 429; other 4xx are final.

package profiler

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"sync"
	"time"
)

type item struct {
	typ         ProfileType
	data        []byte
	from, until time.Time
}

// queue is a bounded FIFO; push never blocks and drops the oldest items
// when full.
type queue struct {
	mu     sync.Mutex
	items  []*item
	max    int
	closed bool
	ready  chan struct{} // 1-buffered wake-up for the uploader
}

func newQueue(max int) *queue {
	return &queue{max: max, ready: make(chan struct{}, 1)}
}

// push appends it and returns how many old items were dropped to make room.
func (q *queue) push(it *item) int {
	q.mu.Lock()
	dropped := 0
	for len(q.items) >= q.max {
		q.items[0] = nil
		q.items = q.items[1:]
		dropped++
	}
	q.items = append(q.items, it)
	q.mu.Unlock()
	q.wake()
	return dropped
}

func (q *queue) wake() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// pop returns the oldest item, or (nil, closed) when empty.
func (q *queue) pop() (*item, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return nil, q.closed
	}
	it := q.items[0]
	q.items[0] = nil
	q.items = q.items[1:]
	return it, false
}

func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.wake()
}

func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

// drain empties the queue and returns how many items were left.
func (q *queue) drain() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := len(q.items)
	q.items = nil
	return n
}

func (p *Profiler) uploadLoop() {
	defer close(p.upDone)
	for {
		it, closed := p.q.pop()
		if it == nil {
			if closed {
				return
			}
			select {
			case <-p.q.ready:
			case <-p.upCtx.Done():
				return
			}
			continue
		}
		p.send(it)
		if p.upCtx.Err() != nil {
			return
		}
	}
}

// send uploads one profile with retries and counts the outcome.
func (p *Profiler) send(it *item) {
	backoff := p.cfg.InitialBackoff
	for attempt := 0; ; attempt++ {
		retry, err := p.post(it)
		if err == nil {
			p.count(func(s *Stats) { s.Uploaded++ })
			return
		}
		if !retry {
			p.count(func(s *Stats) { s.Rejected++ })
			p.log.Printf("%s profile rejected: %v", it.typ, err)
			return
		}
		if attempt >= p.cfg.MaxRetries || p.upCtx.Err() != nil {
			p.count(func(s *Stats) { s.Failed++ })
			p.log.Printf("%s profile not uploaded after %d attempt(s): %v", it.typ, attempt+1, err)
			return
		}
		wait := jitter(backoff)
		backoff *= 2
		if backoff > p.cfg.MaxBackoff {
			backoff = p.cfg.MaxBackoff
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-p.upCtx.Done():
			t.Stop()
			p.count(func(s *Stats) { s.Failed++ })
			return
		}
		p.count(func(s *Stats) { s.Retries++ })
	}
}

// jitter draws a wait from [d/2, d].
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + time.Duration(rand.Int63n(int64(d-half)+1))
}

// retryable reports whether an HTTP status is worth another attempt.
func retryable(status int) bool {
	return status >= 500 || status == http.StatusRequestTimeout || status == http.StatusTooManyRequests
}

// uploadURL builds the /v1/profiles URL for one profile.
func (p *Profiler) uploadURL(it *item) string {
	q := url.Values{}
	q.Set("format", "pprof")
	q.Set("service", p.cfg.Service)
	q.Set("type", string(it.typ))
	q.Set("from", unixSeconds(it.from))
	q.Set("until", unixSeconds(it.until))
	keys := make([]string, 0, len(p.cfg.Labels))
	for k := range p.cfg.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		q.Set("label."+k, p.cfg.Labels[k])
	}
	u := *p.base
	u.Path += "/v1/profiles"
	u.RawQuery = q.Encode()
	return u.String()
}

func unixSeconds(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixNano())/1e9, 'f', 3, 64)
}

// post makes one attempt; retry says whether a failure may be retried.
func (p *Profiler) post(it *item) (retry bool, err error) {
	ctx, cancel := context.WithTimeout(p.upCtx, p.cfg.UploadTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.uploadURL(it), bytes.NewReader(it.data))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	if p.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+p.cfg.Token)
	}
	resp, err := p.cfg.HTTPClient.Do(req)
	if err != nil {
		return true, err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		return false, nil
	}
	return retryable(resp.StatusCode), fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(body))
}
