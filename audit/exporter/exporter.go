// Package exporter feeds the audit trail to capkit-otel, the program that
// exports it to OpenTelemetry over OTLP/HTTP with the OpenTelemetry Go
// SDK (audit/telemetry): a process of its own, started with the host, so
// that the SDK, its exporters and their protobuf and gRPC packages are
// not in capkit's binary, whose every start (capkit version, each
// capkit call) would otherwise run their package initializers.
//
// Write appends each event's line to a bounded queue and never waits; a
// goroutine writes what the queue holds to the exporter's standard input
// every limits.TelemetryFlushInterval, together (see
// audit/telemetry for the lines), with the budgets' use and the count of
// events dropped every limits.TelemetryMetricInterval and before it
// closes. An exporter that exits is started again, at most every
// limits.AuditRetryMax. Events the queue cannot hold, or that reach no
// exporter, are dropped and counted (Stats; the detail log; the exporter's
// capkit.telemetry.dropped): telemetry is not the trail, whose sinks
// keep every event.
//
// The queue is the lines themselves, appended to one byte slice and
// swapped with a spare at each hand-off: no allocation per event and
// nothing for the garbage collector to scan (a channel of the lines'
// slices was a pointer array the collector scanned whole at every cycle,
// about 60k instructions a call, more than the rest of the sink).
package exporter

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/capkit/capkit/audit"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// Program is the exporter's name, looked for beside the running binary,
// then on PATH.
const Program = "capkit-otel"

// Budget is one budget's use, as the exporter's gauges take it.
type Budget struct {
	Group string `json:"group"`
	Unit  string `json:"unit"`
	Used  int64  `json:"used"`
	Limit int64  `json:"limit"`
}

// Options configure a Sink.
type Options struct {
	// Program is the exporter to run; empty: Find's.
	Program string
	// Endpoint, ServiceName and ServiceVersion are the exporter's flags.
	Endpoint, ServiceName, ServiceVersion string
	// Budgets, if set, is asked for the budgets' use to send.
	Budgets func(ctx context.Context) []Budget
	// Log receives the exporter's own log and its exits.
	Log *slog.Logger
}

// Stats are a sink's counts.
type Stats struct {
	// Dropped counts events not handed to an exporter.
	Dropped int64 `json:"dropped"`
	// Starts counts the exporter's starts.
	Starts int64 `json:"starts"`
}

// Sink hands events to the exporter: an audit.Sink.
type Sink struct {
	o   Options
	log *slog.Logger

	mu sync.Mutex
	// pending holds the queued events' lines ('e', the JSON, '\n'), queued
	// their count; spare is the slice the last hand-off wrote, reused.
	// The lines being written (writing, their count and bytes) count
	// against the queue's bounds until the exporter has taken them.
	pending, spare        []byte
	queued                int
	writing, writingBytes int

	dropped atomic.Int64
	starts  atomic.Int64
	// reported is the dropped count the detail log was last told (run's).
	reported int64

	closing chan struct{}
	done    chan struct{}
	once    sync.Once

	cmdMu sync.Mutex
	cmd   *exec.Cmd // the exporter running
}

// Find is the exporter program: beside the running capkit, else on PATH.
func Find() (string, error) {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), Program)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath(Program); err == nil {
		return p, nil
	}
	return "", fault.New(fault.NotFound, "[telemetry] needs the exporter %s beside capkit or on PATH (go install github.com/capkit/capkit/cmd/%s)", Program, Program)
}

// Start starts the exporter and returns the sink feeding it.
func Start(opts Options) (*Sink, error) {
	if opts.Program == "" {
		p, err := Find()
		if err != nil {
			return nil, err
		}
		opts.Program = p
	}
	s := &Sink{o: opts, log: opts.Log, closing: make(chan struct{}), done: make(chan struct{})}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	cmd, in, err := s.start()
	if err != nil {
		return nil, err
	}
	go s.run(cmd, in)
	return s, nil
}

// Stats are the sink's counts.
func (s *Sink) Stats() Stats { return Stats{Dropped: s.dropped.Load(), Starts: s.starts.Load()} }

// Write queues e for the exporter; a full queue (limits.TelemetryQueueEvents
// events or limits.TelemetryQueueBytes) drops it, counted.
func (s *Sink) Write(e *audit.Event) {
	if e.Msg != audit.MsgCall && e.Msg != audit.MsgLost {
		return // the exporter exports calls and losses only
	}
	s.mu.Lock()
	if s.queued+s.writing >= limits.TelemetryQueueEvents || s.writingBytes+len(s.pending)+len(e.JSON)+2 > limits.TelemetryQueueBytes {
		s.mu.Unlock()
		s.dropped.Add(1)
		return
	}
	s.pending = append(append(append(s.pending, 'e'), e.JSON...), '\n')
	s.queued++
	s.mu.Unlock()
}

// start runs the exporter with its input a pipe, its log read into the
// detail log.
func (s *Sink) start() (*exec.Cmd, io.WriteCloser, error) {
	args := []string{"--endpoint", s.o.Endpoint}
	if s.o.ServiceName != "" {
		args = append(args, "--service-name", s.o.ServiceName)
	}
	if s.o.ServiceVersion != "" {
		args = append(args, "--service-version", s.o.ServiceVersion)
	}
	cmd := exec.Command(s.o.Program, args...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, fault.Wrap(fault.Internal, err, "telemetry: the exporter's input cannot be made")
	}
	errs, err := cmd.StderrPipe()
	if err != nil {
		return nil, nil, fault.Wrap(fault.Internal, err, "telemetry: the exporter's log cannot be read")
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fault.Wrap(fault.Unavailable, err, "telemetry: the exporter %s cannot be started", s.o.Program)
	}
	s.starts.Add(1)
	s.cmdMu.Lock()
	s.cmd = cmd
	s.cmdMu.Unlock()
	go s.readLog(errs)
	return cmd, in, nil
}

// readLog copies the exporter's log lines to the detail log until it
// ends; past a line longer than bufio.MaxScanTokenSize the rest is read
// and discarded, so that the exporter never waits on a full pipe.
func (s *Sink) readLog(errs io.Reader) {
	sc := bufio.NewScanner(errs)
	for sc.Scan() {
		s.log.Warn("telemetry: "+sc.Text(), slog.String("exporter", s.o.Program))
	}
	if sc.Err() != nil {
		s.log.Warn("telemetry: the exporter's log is no longer read (a line too long)", slog.String("exporter", s.o.Program))
		io.Copy(io.Discard, errs)
	}
}

// run writes the queue to the exporter every limits.TelemetryFlushInterval
// (a call's Write wakes nobody), starting it again when it exits.
func (s *Sink) run(cmd *exec.Cmd, in io.WriteCloser) {
	defer close(s.done)
	budgets := time.NewTicker(limits.TelemetryMetricInterval)
	defer budgets.Stop()
	flush := time.NewTicker(limits.TelemetryFlushInterval)
	defer flush.Stop()
	w := bufio.NewWriterSize(in, 64*limits.KiB)
	s.sendState(w)
	for {
		select {
		case <-flush.C:
		case <-budgets.C:
			s.sendState(w)
		case <-s.closing:
			s.drain(w)
			s.sendState(w)
			w.Flush()
			in.Close()
			s.wait(cmd)
			return
		}
		written := s.drain(w)
		if w.Flush() == nil {
			continue
		}
		// The exporter is gone: what was written since it last took
		// everything is counted dropped, and it is started again after a
		// pause.
		s.dropped.Add(written)
		in.Close()
		s.wait(cmd)
		var ok bool
		if cmd, in, ok = s.restart(); !ok {
			return
		}
		w.Reset(in)
		s.sendState(w)
	}
}

// drain writes the events queued now and returns their count.
func (s *Sink) drain(w *bufio.Writer) int64 {
	s.mu.Lock()
	lines, n := s.pending, s.queued
	s.pending, s.queued = s.spare[:0], 0
	s.writing, s.writingBytes = n, len(lines)
	s.mu.Unlock()
	w.Write(lines)
	s.mu.Lock()
	s.writing, s.writingBytes = 0, 0
	s.mu.Unlock()
	s.spare = lines
	return int64(n)
}

// restart starts the exporter again after limits.AuditRetryMax, until it
// starts or the sink closes (false).
func (s *Sink) restart() (*exec.Cmd, io.WriteCloser, bool) {
	for {
		select {
		case <-time.After(limits.AuditRetryMax):
		case <-s.closing:
			return nil, nil, false
		}
		cmd, in, err := s.start()
		if err == nil {
			return cmd, in, true
		}
		s.log.Error("telemetry: the exporter cannot be started again", slog.String("error", err.Error()))
	}
}

// sendState writes the count of events dropped and the budgets' use
// (when the host has budgets), and tells the detail log of new drops.
func (s *Sink) sendState(w *bufio.Writer) {
	dropped := s.dropped.Load()
	if n := dropped - s.reported; n > 0 {
		s.log.Warn("telemetry: events dropped, not exported (the exporter is not keeping up or was restarted)", slog.Int64("dropped", n), slog.Int64("total", dropped))
		s.reported = dropped
	}
	writeLine(w, 's', struct {
		Dropped int64 `json:"dropped"`
	}{dropped})
	if s.o.Budgets == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), limits.AuditStoreTimeout)
	defer cancel()
	writeLine(w, 'b', s.o.Budgets(ctx))
}

// writeLine writes one line of kind to the exporter: kind, v in JSON.
func writeLine(w *bufio.Writer, kind byte, v any) {
	b, err := jsonv2.Marshal(v)
	if err != nil {
		return
	}
	w.WriteByte(kind)
	w.Write(b)
	w.WriteByte('\n')
}

// wait waits for the exporter to end, at most limits.TelemetryExportTimeout
// and a second (its own last export's bound), then kills it.
func (s *Sink) wait(cmd *exec.Cmd) {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			s.log.Warn("telemetry: the exporter exited", slog.Int("code", ee.ExitCode()))
		}
	case <-time.After(limits.TelemetryExportTimeout + time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// Close hands the exporter what is queued, closes its input and waits for
// its last export (within ctx).
func (s *Sink) Close(ctx context.Context) error {
	s.once.Do(func() { close(s.closing) })
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return fault.New(fault.Unavailable, "telemetry: the exporter did not finish its last export in time")
	}
}
