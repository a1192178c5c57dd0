// span.go — span linking: pprof labels span_id/trace_id on the code that
// runs for a span, so the CPU samples taken while it runs carry them and the
// hub can select a span's profile (`span_id=…` / `trace_id=…` on its query
// API). Goroutines started under the labels inherit them.

package profiler

import (
	"context"
	"runtime/pprof"
)

// Label keys the hub stores as columns.
const (
	SpanIDLabel  = "span_id"
	TraceIDLabel = "trace_id"
)

func spanLabels(spanID, traceID string) pprof.LabelSet {
	switch {
	case spanID != "" && traceID != "":
		return pprof.Labels(SpanIDLabel, spanID, TraceIDLabel, traceID)
	case spanID != "":
		return pprof.Labels(SpanIDLabel, spanID)
	case traceID != "":
		return pprof.Labels(TraceIDLabel, traceID)
	}
	return pprof.Labels()
}

// WithSpan returns ctx with the pprof labels span_id and trace_id added
// (an empty id is left out) and sets them on the current goroutine, so CPU
// samples of the code that runs next are tagged with them. The labels stay
// on the goroutine until changed: when the span ends, restore the parent's
// with pprof.SetGoroutineLabels(parent) — or use DoSpan, which does that.
func WithSpan(ctx context.Context, spanID, traceID string) context.Context {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx = pprof.WithLabels(ctx, spanLabels(spanID, traceID))
	pprof.SetGoroutineLabels(ctx)
	return ctx
}

// DoSpan runs f with the span's labels set (pprof.Do) and restores the
// goroutine's previous labels when f returns.
func DoSpan(ctx context.Context, spanID, traceID string, f func(context.Context)) {
	if ctx == nil {
		ctx = context.Background()
	}
	pprof.Do(ctx, spanLabels(spanID, traceID), f)
}
