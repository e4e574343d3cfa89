// Package telemetry exports the audit trail to OpenTelemetry over
// OTLP/HTTP ([telemetry] otlp_endpoint), through the OpenTelemetry Go SDK
// and its otlptracehttp and otlpmetrichttp exporters: a span per tool
// call, and metrics for calls, errors, durations, denials, budget use and
// audit events lost.
//
// A span is named "tools/call TOOL" (the MCP semantic conventions' form),
// runs from the call's start to its end, and carries mcp.method.name,
// mcp.tool.name, mcp.session.id, jsonrpc.request.id, capkit.actor,
// capkit.outcome, capkit.fault (a failure's code), capkit.policy (what
// decided a denial or a limit), capkit.calls_left, capkit.in_bytes,
// capkit.out_bytes and capkit.duration_us; a failed call's status is
// Error. What the audit event never holds, a span never holds either.
//
// The metrics: mcp.tool.calls and mcp.tool.errors (counters, by tool,
// actor and outcome or fault), mcp.tool.duration (a histogram in
// seconds, by tool and outcome), capkit.denials (denials and limits, by
// tool, actor, outcome and policy), capkit.budget.used and
// capkit.budget.limit (gauges the host fills, by budget group and unit),
// capkit.audit.lost (audit events a sink could not keep) and
// capkit.telemetry.dropped (what telemetry itself dropped, by
// capkit.dropped: "span" for a call whose span was dropped, its metrics
// kept; "event" for a call the host dropped before it reached the
// exporter, as SetEventsDropped reports).
//
// Write records a call's metrics and makes its span at once; the span
// waits in a bounded queue (limits.TelemetrySpanQueue) that a goroutine
// hands the SDK's OTLP exporter, limits.TelemetrySpanBatch at a time: so
// a collector that is slow or away makes spans wait, then drops them,
// counted, and never makes Write wait. Spans are exported within
// limits.TelemetrySpanBatchTimeout, metrics every
// limits.TelemetryMetricInterval; Close flushes both. Telemetry is not
// the trail: the trail's sinks keep every event.
//
// The span processor is this package's (spanBatcher), not the SDK's
// batching processor, which hands each span to its goroutine through a
// channel: one wake-up per call, where capkit-otel takes the calls of
// 100 ms at once (BenchmarkServe).
package telemetry

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/capkit/capkit/audit"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// BudgetUse is one budget's use, as the host reports it.
type BudgetUse struct {
	Group string
	// Unit is what is counted: "requests", "bytes", "calls".
	Unit  string
	Used  int64
	Limit int64
}

// Options configure a Sink.
type Options struct {
	// Endpoint is the OTLP/HTTP base URL: traces go to Endpoint/v1/traces,
	// metrics to Endpoint/v1/metrics.
	Endpoint string
	// ServiceName and ServiceVersion name what exports; ServiceName
	// defaults to "capkit".
	ServiceName, ServiceVersion string
	// Budgets, if set, is asked for the budgets' use at each metric
	// export.
	Budgets func(ctx context.Context) []BudgetUse
	// Log receives the exporters' failures (the collector unreachable).
	Log *slog.Logger
}

// Sink exports calls: an audit.Sink.
type Sink struct {
	tp     *sdktrace.TracerProvider
	mp     *sdkmetric.MeterProvider
	tracer trace.Tracer

	calls, errors, denials, lost metric.Int64Counter
	duration                     metric.Float64Histogram

	spans *spanBatcher
	// spansDropped counts the spans the queue could not hold;
	// eventsDropped is the host's count (SetEventsDropped).
	spansDropped, eventsDropped atomic.Int64

	// sets are the metric attribute sets met so far, by what they name:
	// a call's metrics are recorded without building one.
	sets sync.Map // key -> *callSets

	once sync.Once
}

// key names a call's metric attribute sets.
type key struct{ tool, actor, outcome, policy string }

type callSets struct {
	calls, errors, denials, duration metric.MeasurementOption
	span                             string // the span's name
}

// New starts exporting to opts.Endpoint. It does not wait for the
// collector.
func New(opts Options) (*Sink, error) {
	ctx := context.Background()
	endpoint := strings.TrimSuffix(opts.Endpoint, "/")
	if opts.ServiceName == "" {
		opts.ServiceName = "capkit"
	}
	if opts.Log != nil {
		log := opts.Log
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			log.Warn("telemetry: export failed", slog.String("error", err.Error()))
		}))
	}
	res := resource.NewSchemaless(attribute.String("service.name", opts.ServiceName), attribute.String("service.version", opts.ServiceVersion))
	texp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint+"/v1/traces"), otlptracehttp.WithTimeout(limits.TelemetryExportTimeout))
	if err != nil {
		return nil, fault.Wrap(fault.InvalidInput, err, "telemetry: the OTLP endpoint %s is not usable", opts.Endpoint)
	}
	mexp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(endpoint+"/v1/metrics"), otlpmetrichttp.WithTimeout(limits.TelemetryExportTimeout))
	if err != nil {
		return nil, fault.Wrap(fault.InvalidInput, err, "telemetry: the OTLP endpoint %s is not usable", opts.Endpoint)
	}
	s := &Sink{
		mp: sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
			sdkmetric.WithReader(sdkmetric.NewPeriodicReader(mexp, sdkmetric.WithInterval(limits.TelemetryMetricInterval)))),
	}
	s.spans = newSpanBatcher(texp, &s.spansDropped)
	s.tp = sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSpanProcessor(s.spans))
	s.tracer = s.tp.Tracer("github.com/capkit/capkit")
	if err := s.instruments(opts.Budgets); err != nil {
		s.Close(ctx)
		return nil, fault.Wrap(fault.Internal, err, "telemetry: the metrics cannot be made")
	}
	return s, nil
}

// SetEventsDropped reports the calls the host dropped before they
// reached the exporter, since it started (capkit.telemetry.dropped
// {capkit.dropped="event"}).
func (s *Sink) SetEventsDropped(n int64) { s.eventsDropped.Store(n) }

// SpansDropped counts the spans dropped so far.
func (s *Sink) SpansDropped() int64 { return s.spansDropped.Load() }

// instruments makes the metrics.
func (s *Sink) instruments(budgets func(context.Context) []BudgetUse) error {
	m := s.mp.Meter("github.com/capkit/capkit")
	var err error
	if s.calls, err = m.Int64Counter("mcp.tool.calls", metric.WithDescription("Tool calls"), metric.WithUnit("{call}")); err != nil {
		return err
	}
	if s.errors, err = m.Int64Counter("mcp.tool.errors", metric.WithDescription("Tool calls that failed"), metric.WithUnit("{call}")); err != nil {
		return err
	}
	if s.denials, err = m.Int64Counter("capkit.denials", metric.WithDescription("Tool calls denied or refused at a limit"), metric.WithUnit("{call}")); err != nil {
		return err
	}
	if s.lost, err = m.Int64Counter("capkit.audit.lost", metric.WithDescription("Audit events a sink could not keep"), metric.WithUnit("{event}")); err != nil {
		return err
	}
	dropped, err := m.Int64ObservableCounter("capkit.telemetry.dropped", metric.WithDescription("Calls whose span (span) or whole export (event) telemetry dropped"), metric.WithUnit("{call}"))
	if err != nil {
		return err
	}
	droppedSpan := metric.WithAttributes(attribute.String("capkit.dropped", "span"))
	droppedEvent := metric.WithAttributes(attribute.String("capkit.dropped", "event"))
	if _, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(dropped, s.spansDropped.Load(), droppedSpan)
		o.ObserveInt64(dropped, s.eventsDropped.Load(), droppedEvent)
		return nil
	}, dropped); err != nil {
		return err
	}
	if s.duration, err = m.Float64Histogram("mcp.tool.duration", metric.WithDescription("Tool call duration"), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)); err != nil {
		return err
	}
	if budgets == nil {
		return nil
	}
	used, err := m.Int64ObservableGauge("capkit.budget.used", metric.WithDescription("Budget used in its current window"))
	if err != nil {
		return err
	}
	limit, err := m.Int64ObservableGauge("capkit.budget.limit", metric.WithDescription("Budget allowed in its window"))
	if err != nil {
		return err
	}
	_, err = m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		for _, b := range budgets(ctx) {
			set := metric.WithAttributes(attribute.String("capkit.budget.group", b.Group), attribute.String("capkit.budget.unit", b.Unit))
			o.ObserveInt64(used, b.Used, set)
			o.ObserveInt64(limit, b.Limit, set)
		}
		return nil
	}, used, limit)
	return err
}

// Write records a call's metrics and makes its span (dropped, counted,
// when the queue is full); an event saying audit events were lost adds to
// capkit.audit.lost. Other events are not exported. Write does not wait.
func (s *Sink) Write(e *audit.Event) {
	ctx := context.Background()
	switch e.Msg {
	case audit.MsgLost:
		s.lost.Add(ctx, e.Lost)
		return
	case audit.MsgCall:
	default:
		return
	}
	sets := s.setsFor(e)
	s.calls.Add(ctx, 1, sets.calls)
	s.duration.Record(ctx, e.Duration().Seconds(), sets.duration)
	if e.Outcome != audit.OutcomeOK {
		s.errors.Add(ctx, 1, sets.errors)
	}
	if e.Outcome == string(fault.Denied) || e.Outcome == string(fault.Limit) {
		s.denials.Add(ctx, 1, sets.denials)
	}
	if s.spans.isFull() {
		s.spansDropped.Add(1) // not made: it could not be kept
		return
	}
	s.span(ctx, e, sets.span)
}

// span exports the call's span, named name, from its start to its end.
func (s *Sink) span(ctx context.Context, e *audit.Event, name string) {
	end := e.Time
	attrs := []attribute.KeyValue{
		attribute.String("mcp.method.name", "tools/call"),
		attribute.String("mcp.tool.name", e.Tool),
		attribute.String("capkit.actor", e.Actor),
		attribute.String("capkit.outcome", e.Outcome),
		attribute.Int64("capkit.in_bytes", e.InBytes),
		attribute.Int64("capkit.out_bytes", e.OutBytes),
		attribute.Int64("capkit.duration_us", e.DurationUS),
	}
	if e.Session != "" {
		attrs = append(attrs, attribute.String("mcp.session.id", e.Session))
	}
	if e.Request != "" {
		attrs = append(attrs, attribute.String("jsonrpc.request.id", e.Request))
	}
	if e.Outcome != audit.OutcomeOK {
		attrs = append(attrs, attribute.String("capkit.fault", e.Outcome))
	}
	if e.Policy != "" {
		attrs = append(attrs, attribute.String("capkit.policy", e.Policy))
	}
	if e.CallsLeft >= 0 {
		attrs = append(attrs, attribute.Int64("capkit.calls_left", e.CallsLeft))
	}
	_, span := s.tracer.Start(ctx, name, trace.WithTimestamp(end.Add(-e.Duration())),
		trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	if e.Outcome != audit.OutcomeOK {
		span.SetStatus(codes.Error, e.Outcome)
	}
	span.End(trace.WithTimestamp(end))
}

// setsFor are the attribute sets of a call's metrics and its span's name,
// made once for each tool, actor, outcome and policy met.
func (s *Sink) setsFor(e *audit.Event) *callSets {
	k := key{e.Tool, e.Actor, e.Outcome, e.Policy}
	if v, ok := s.sets.Load(k); ok {
		return v.(*callSets)
	}
	tool, actor, outcome := attribute.String("mcp.tool.name", e.Tool), attribute.String("capkit.actor", e.Actor), attribute.String("capkit.outcome", e.Outcome)
	cs := &callSets{
		calls:    metric.WithAttributeSet(attribute.NewSet(tool, actor, outcome)),
		errors:   metric.WithAttributeSet(attribute.NewSet(tool, actor, attribute.String("capkit.fault", e.Outcome))),
		denials:  metric.WithAttributeSet(attribute.NewSet(tool, actor, outcome, attribute.String("capkit.policy", e.Policy))),
		duration: metric.WithAttributeSet(attribute.NewSet(tool, outcome)),
		span:     "tools/call " + e.Tool,
	}
	v, _ := s.sets.LoadOrStore(k, cs)
	return v.(*callSets)
}

// Close makes the queued spans and exports what is pending, within ctx,
// and stops; what is written after Close is not exported.
func (s *Sink) Close(ctx context.Context) error {
	var err error
	s.once.Do(func() {
		terr := s.tp.Shutdown(ctx)
		merr := s.mp.Shutdown(ctx)
		if terr != nil || merr != nil {
			err = fault.New(fault.Unavailable, "telemetry: not everything was exported as it closed (the collector unreachable?)")
		}
	})
	return err
}
